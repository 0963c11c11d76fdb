"""The options of a multi-choice criterion: the :class:`Option` model, the checks an option
list must pass, and the evenly spaced values ordinal options get when none are given."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Option(BaseModel):
    """One choice of a multi-choice criterion; ``na`` marks a "not applicable" abstention."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1)
    value: float | None = Field(
        default=None,
        description=(
            "score of the option in [0, 1]; ordinal options default to evenly spaced values"
        ),
    )
    na: bool = False

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: object) -> Any:
        """``"good"`` or ``3`` alone is an option with that label; numeric labels become text."""
        if isinstance(data, str) or (isinstance(data, (int, float)) and not isinstance(data, bool)):
            data = {"label": data}
        if (
            isinstance(data, dict)
            and isinstance(data.get("label"), (int, float))
            and not isinstance(data.get("label"), bool)
        ):
            number = data["label"]
            data = {
                **data,
                "label": str(int(number)) if float(number).is_integer() else str(number),
            }
        return data

    @field_validator("label")
    @classmethod
    def _strip(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise ValueError("option label must not be blank")
        return stripped

    @model_validator(mode="after")
    def _check_value(self) -> Option:
        finite = self.value is None or math.isfinite(self.value)
        if self.value is not None and not self.na and (not finite or not 0.0 <= self.value <= 1.0):
            raise ValueError(f"option value must be in [0, 1]; got {self.value}")
        return self


def check_options(kind: str, options: tuple[Option, ...]) -> None:
    """A multi-choice criterion needs two real options and case-insensitively unique labels."""
    real = [o for o in options if not o.na]
    if len(real) < 2:
        raise ValueError(f"a {kind} criterion needs at least 2 non-NA options")
    labels = [o.label.lower() for o in options]
    if len(set(labels)) != len(labels):
        raise ValueError("option labels must be unique (case-insensitive)")


def evenly_spaced(options: tuple[Option, ...]) -> tuple[Option, ...]:
    """Ordinal options without values get 0..1 evenly spaced in order (NA options keep none);
    giving values to only some of them is an error."""
    real = [o for o in options if not o.na]
    if any(o.value is not None for o in real):
        raise ValueError("give a value for every ordinal option or for none")
    step = 1.0 / (len(real) - 1)
    filled: list[Option] = []
    position = 0
    for option in options:
        if option.na:
            filled.append(option)
        else:
            filled.append(option.model_copy(update={"value": position * step}))
            position += 1
    return tuple(filled)
