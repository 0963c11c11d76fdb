"""One exception hierarchy for everything assay raises on purpose.

Every error a user can cause derives from :class:`AssayError`; the CLI turns those into a
one-line message and exit code 2 (or records them as failures during a run). Anything else
escaping is a bug in assay, not a user mistake.
"""

from __future__ import annotations

from collections.abc import Mapping


class AssayError(Exception):
    """Base class of every deliberate assay error."""


class UsageError(AssayError):
    """A bad flag, option or configuration value."""


class InputError(AssayError):
    """A document assay reads is malformed; the message names file, sample and field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        sample: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.sample = sample
        self.field = field
        self.detail = message
        self.more: tuple[str, ...] = ()  # further problems of the same document, one line each
        super().__init__(self._render())

    def _render(self) -> str:
        where: list[str] = []
        if self.file:
            where.append(str(self.file))
        if self.sample is not None:
            where.append(
                f"sample #{self.sample}"
                if isinstance(self.sample, int)
                else f"sample '{self.sample}'"
            )
        if self.field:
            where.append(f"field '{self.field}'")
        return f"{': '.join(where)}: {self.detail}" if where else self.detail


class DatasetError(InputError):
    """A golden dataset failed validation."""


class OutputsError(InputError):
    """A saved-outputs file is malformed or does not match the dataset."""


class MetricError(AssayError):
    """A metric could not score one sample; the run records a failure and goes on.

    ``usage`` carries provider accounting for calls made before the failure, so spend is
    never lost from the report.
    """

    def __init__(self, message: str, *, usage: tuple[dict[str, object], ...] = ()) -> None:
        self.usage = usage
        super().__init__(message)


class JudgeParseError(AssayError):
    """A judge's reply is not the verdict its prompt asked for; the message never quotes it.

    Raised by the reply parsers of :mod:`assay.judging`; the judge stack re-asks once, then
    turns it into a :class:`MetricError` for the sample.
    """


class MetricConfigError(UsageError):
    """A metric was named or configured wrongly (unknown alias, bad option)."""


class SystemUnderTestError(AssayError):
    """The system under test failed on one sample; recorded as that sample's failure.

    ``field`` names the key of the answer at fault (``retrieved``, ``contexts``, ...) when one
    is: a saved-outputs file's error names that field, not the whole output.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


class ProviderError(AssayError):
    """A model provider failed; messages name provider and status, never keys or bodies."""

    usage: tuple[dict[str, object], ...] = ()  # calls billed before the failure (embeddings)

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        self.status = status
        self.retryable = retryable
        super().__init__(message)


class NotSent(ProviderError):
    """A dry run reached a request the provider cache could not answer: it is counted (its
    estimated usage is ``usage``, marked ``planned``) and not sent."""

    def __init__(self, message: str, *, usage: tuple[dict[str, object], ...]) -> None:
        super().__init__(message)
        self.usage = usage


class RateLimited(AssayError):
    """Raised by a call the service refused as overloaded (HTTP 429, or 503 with Retry-After).

    ``retry_after`` is the server's wait in seconds when it sent one; the limiter retries the
    call. ``message`` names the service and status only, never a response body.
    """

    def __init__(
        self, message: str, *, retry_after: float | None = None, status: int | None = 429
    ) -> None:
        self.retry_after = retry_after
        self.status = status
        super().__init__(message)


class GaveUp(AssayError):
    """Raised when a retried call is still refused after its last retry, or when the server
    asks for a longer wait than the policy accepts; the message names the status and count."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class ReplyRejected(AssayError):
    """Raised by a provider's ``accept`` function: a reply arrived but does not say what it must."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class BudgetExceeded(AssayError):
    """The priced spend would exceed the run's budget."""


class StoreError(AssayError):
    """The run store cannot be read or written."""


class CalibrationError(InputError):
    """A labels file or calibration dataset is malformed."""


class ForeignFileError(InputError):
    """A file another evaluation tool wrote cannot be imported (``assay import``)."""


class TezError(InputError):
    """A Tez bundle or interrogation session is malformed or hostile."""


class TraceError(InputError):
    """An OTLP trace payload or export file that cannot be decoded (production monitoring)."""


class NotFound(AssayError):
    """Raised by the local viewer for a page, run or sample that does not exist (HTTP 404)."""


class TransportFailure(AssayError):
    """A provider request got no usable HTTP answer. Internal: the provider transport turns it
    into a retry or a :class:`ProviderError`, so it never reaches a report as it is."""


class ConnectionFailure(TransportFailure):
    """The request got no complete, well-formed answer (refused, dropped, malformed)."""


class TimedOut(ConnectionFailure):
    """No complete answer within the timeout."""


class StatusFailure(TransportFailure):
    """A non-2xx HTTP answer: its status and headers only (the body may echo the key)."""

    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers


class UnusualLineBreaks(AssayError):
    """Internal: a JSONL file breaks lines other than with ``\\n`` / ``\\r\\n``, so it is read
    whole (the ordinary way) instead of line by line from disk."""


class NotIndexable(AssayError):
    """Internal: a large JSON document has a shape the forward scan does not take
    (:mod:`assay.data.json_items`), so it is read whole (the ordinary way), which reports any
    problem with it."""
