"""Systems under test: saved outputs, a Python callable, or an HTTP endpoint.

Each answers one sample with an :class:`~assay.data.outputs.Output`. A failure on one sample raises
:class:`~assay.errors.SystemUnderTestError`, which the runner records for that sample only.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from assay.data.dataset import Sample
from assay.data.outputs import Output, coerce_output
from assay.data.outputs_stream import IndexedOutputs
from assay.data.retrieved import RankedDocs
from assay.data.trajectory import TrajectoryRecorder
from assay.errors import AssayError, RateLimited, SystemUnderTestError, UsageError
from assay.metrics.registry import working_directory_importable
from assay.providers.limiter import Limiter
from assay.report.system_info import SystemUnderTestInfo

if TYPE_CHECKING:  # imported where a call awaits: a saved-outputs run does not load asyncio
    import asyncio


class SystemUnderTest(Protocol):
    """Something that answers a sample. ``synchronous`` lets the runner skip the event loop."""

    synchronous: bool

    def describe(self) -> SystemUnderTestInfo: ...

    async def answer(self, sample: Sample) -> Output: ...


@runtime_checkable
class AnswersNow(Protocol):
    """A synchronous system: its answers need no event loop (saved outputs)."""

    def answers_now(self, samples: Sequence[Sample]) -> list[Output | str]:
        """Each sample's output, or why it has none (the system under test's failure)."""
        ...


class SavedOutputs:
    """Answers from a saved-outputs file, looked up by sample id."""

    synchronous = True
    outputs_on_disk = True

    def __init__(self, outputs: Mapping[str, Output], path: str) -> None:
        self.outputs = outputs
        self.path = path

    def describe(self) -> SystemUnderTestInfo:
        return SystemUnderTestInfo(kind="saved-outputs", target=Path(self.path).name)

    def answer_now(self, sample: Sample) -> Output:
        try:
            return self.outputs[sample.id]
        except KeyError:
            raise _no_output(sample) from None

    def answers_now(self, samples: Sequence[Sample]) -> list[Output | str]:
        """Each sample's output, or the message of its failure, in order (an indexed file reads
        the outputs of consecutive entries as one group: :meth:`IndexedOutputs.outputs_of`)."""
        if not isinstance(self.outputs, IndexedOutputs):
            return [self._answer_or_error(sample) for sample in samples]
        try:
            found = self.outputs.outputs_of([sample.id for sample in samples])
        except AssayError:  # the file changed under the run: each sample says so
            return [self._answer_or_error(sample) for sample in samples]
        return [
            output if output is not None else str(_no_output(sample))
            for sample, output in zip(samples, found)
        ]

    def _answer_or_error(self, sample: Sample) -> Output | str:
        try:
            return self.answer_now(sample)
        except AssayError as exc:
            return str(exc)

    async def answer(self, sample: Sample) -> Output:
        return self.answer_now(sample)


def _no_output(sample: Sample) -> SystemUnderTestError:
    return SystemUnderTestError(f"no saved output for sample '{sample.id}'")


def _short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class PythonTarget:
    """A ``module:function`` (or a function object) called with the sample's input."""

    synchronous = False

    def __init__(self, spec: str | Callable[..., Any]) -> None:
        if callable(spec):
            name = getattr(spec, "__qualname__", type(spec).__name__)
            self.spec = f"{getattr(spec, '__module__', '?')}:{name}"
            self.function: Any = spec
        else:
            self.spec = spec
            self.function = load_callable(spec)
        self.is_async = inspect.iscoroutinefunction(self.function)
        self.wants_recorder = _takes_recorder(self.function)
        self.limiter: Limiter | None = None  # `assay run` attaches one (--concurrency, --rpm)
        self.timeout_s: float | None = None  # `assay run` sets --sut-timeout; none by default

    def describe(self) -> SystemUnderTestInfo:
        return SystemUnderTestInfo(kind="python", target=self.spec)

    async def answer(self, sample: Sample) -> Output:
        recorder = TrajectoryRecorder() if self.wants_recorder else None
        extra = {"recorder": recorder} if recorder is not None else {}
        try:
            value = await self._call(dict(sample.input), extra)
        except (SystemUnderTestError, RateLimited):
            raise  # RateLimited lets the adaptive limiter back off and retry
        except BaseException as exc:  # a bug, sys.exit, a stray BaseException: this sample fails
            if _stops_the_run(exc):
                raise
            raise SystemUnderTestError(f"raised {_short_error(exc)}") from None
        output = _read_answer(value)
        if recorder is not None and recorder.used and output.trajectory is None:
            output = replace(output, trajectory=recorder.trajectory().to_json())
        return output

    async def _call(self, arguments: dict[str, Any], extra: Mapping[str, Any]) -> Any:
        """The SUT's answer, given up after ``timeout_s`` when one is set.

        A sync SUT then runs in a daemon thread of its own: Python cannot stop a thread, so one
        that never returns keeps running (and must not hold up the process's exit) while the
        sample fails and the run goes on.
        """
        import asyncio

        if self.timeout_s is None:
            if self.is_async:
                return await self.function(arguments, **extra)
            return _unwrapped(await asyncio.to_thread(_captured, self.function, arguments, extra))
        deadline = asyncio.timeout(self.timeout_s)  # in this task: no wrapping task to throw
        try:
            async with deadline:
                if self.is_async:
                    return await self.function(arguments, **extra)
                return _unwrapped(await _in_daemon_thread(self.function, arguments, extra))
        except TimeoutError:
            if not deadline.expired():
                raise  # the SUT's own TimeoutError
            message = f"did not answer within {self.timeout_s:g} s (--sut-timeout)"
            raise SystemUnderTestError(message) from None


def _in_daemon_thread(
    function: Callable[..., object], arguments: object, extra: Mapping[str, Any]
) -> asyncio.Future[tuple[bool, Any]]:
    """A future of :func:`_captured` run in a new daemon thread (with this context's variables)."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
    context = contextvars.copy_context()

    def call() -> None:
        result = context.run(_captured, function, arguments, extra)
        with contextlib.suppress(RuntimeError):  # the loop closed: the run ended without it
            loop.call_soon_threadsafe(_settle, future, result)

    threading.Thread(target=call, name="assay-sut", daemon=True).start()
    return future


def _settle(future: asyncio.Future[tuple[bool, Any]], result: tuple[bool, Any]) -> None:
    """Hand ``result`` to ``future`` unless the deadline already gave up on it."""
    if not future.done():
        future.set_result(result)


def _read_answer(value: object) -> Output:
    """The SUT's answer as an :class:`Output` whose texts are plain ``str`` a report can hold.

    A ``str`` subclass whose ``__len__`` or ``__str__`` raises, or a lone surrogate, passed
    :func:`coerce_output` and ended the run later, in a metric or the report writer.
    """
    if type(value) is str:  # the usual answer: only its encoding to check
        _check_writable(value, "output")
        return Output(value)
    try:
        output = _exact_output(coerce_output(value))
    except SystemUnderTestError:
        raise
    except Exception as exc:  # e.g. a str subclass's __len__, called while ranking
        message = f"returned an answer that cannot be read ({_short_error(exc)})"
        raise SystemUnderTestError(message) from None
    for name, part in output.to_json().items():
        _check_writable(part, name)
    return output


def _check_writable(part: object, field: str) -> None:
    """Fail the sample, naming ``field``, when ``part`` cannot be written as UTF-8 JSON.

    One encoding per field: a lone surrogate (``"\\ud800"``) has no UTF-8 form.
    """
    try:
        text = part if type(part) is str else json.dumps(part, ensure_ascii=False, default=str)
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        message = f"returned text in '{field}' that is not valid Unicode ({exc.reason})"
        raise SystemUnderTestError(message, field=field) from None
    except Exception as exc:
        message = f"returned a '{field}' that cannot be written ({_short_error(exc)})"
        raise SystemUnderTestError(message, field=field) from None


def _exact_output(output: Output) -> Output:
    """``output`` with its texts plain ``str``: a subclass's methods are called once, here."""
    ranking = output.retrieved
    if ranking is not None:
        ids = tuple(_exact(text, "retrieved") for text in ranking.ids)
        texts = ranking.texts
        ranking = RankedDocs(ids, texts and tuple(_exact(text, "retrieved") for text in texts))
    contexts = output.contexts
    if contexts is not None:
        contexts = tuple(_exact(text, "contexts") for text in contexts)
    text = _exact(output.text, "output")
    return Output(text, ranking, output.trajectory, output.usage, contexts)


def _exact(text: str, field: str) -> str:
    """``text`` as a plain ``str`` (a subclass's ``str()``), or the failure naming ``field``."""
    if type(text) is str:
        return text
    try:
        return str.__str__(str(text))
    except Exception as exc:
        message = f"returned text in '{field}' whose str() raised {_short_error(exc)}"
        raise SystemUnderTestError(message, field=field) from None


def _captured(
    function: Callable[..., object], arguments: object, extra: Mapping[str, object]
) -> tuple[bool, Any]:
    """``(True, answer)`` or ``(False, exception)``: what a sync SUT did in its worker thread.

    Handed back as a value, not as the future's exception: asyncio throws a future's exception
    into the task, and a thrown ``GeneratorExit`` closes the coroutines instead of reaching the
    ``except`` that makes it this sample's failure.
    """
    try:
        return True, function(arguments, **extra)
    except BaseException as exc:
        return False, exc


def _unwrapped(result: tuple[bool, Any]) -> Any:
    """The answer :func:`_captured` caught, or its exception raised again here."""
    answered, value = result
    if answered:
        return value
    raise value


def _stops_the_run(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C or a cancellation of the runner's own task, not the SUT's doing.

    A SUT that raises ``CancelledError`` itself leaves its task uncancelled, so that one fails
    the sample like any other exception.
    """
    if isinstance(exc, KeyboardInterrupt):
        return True
    import asyncio

    task = asyncio.current_task()
    return isinstance(exc, asyncio.CancelledError) and task is not None and task.cancelling() > 0


def _takes_recorder(function: Callable[..., object]) -> bool:
    """Whether ``function`` accepts a ``recorder`` keyword (it then gets a TrajectoryRecorder)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    parameter = parameters.get("recorder")
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def load_callable(spec: str) -> Any:
    """Import ``module:function`` (the working directory is importable, like ``python -m``)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"--sut must look like 'module:function'; got {spec!r}")
    working_directory_importable()
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            f"--sut {spec}: cannot import '{module_name}' ({_short_error(exc)})"
        ) from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise UsageError(f"--sut {spec}: '{module_name}' has no attribute '{attr}'")
    if not callable(target):
        raise UsageError(f"--sut {spec}: '{attr}' is not callable")
    return target
