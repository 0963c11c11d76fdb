"""One exception hierarchy for everything assay raises on purpose.

Every error a user can cause derives from :class:`AssayError`; the CLI turns those into a
one-line message and exit code 2 (or records them as failures during a run). Anything else
escaping is a bug in assay, not a user mistake.
"""

from __future__ import annotations


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
    """The system under test failed on one sample; recorded as that sample's failure."""


class ProviderError(AssayError):
    """A model provider failed; messages name provider and status, never keys or bodies."""

    usage: tuple[dict[str, object], ...] = ()  # calls billed before the failure (embeddings)

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        self.status = status
        self.retryable = retryable
        super().__init__(message)


class BudgetExceeded(AssayError):
    """The priced spend would exceed the run's budget."""


class StoreError(AssayError):
    """The run store cannot be read or written."""


class CalibrationError(InputError):
    """A labels file or calibration dataset is malformed."""


class TezError(InputError):
    """A Tez bundle or interrogation session is malformed or hostile."""
