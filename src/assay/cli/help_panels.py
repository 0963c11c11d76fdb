"""Grouped ``--help``: commands and options listed under named panels.

Panels are declared the Typer way (``rich_help_panel=``) and rendered here with click's plain
formatter, so ``assay --help`` still imports no rich (see tests/core/test_startup_imports.py)
and reads the same in a terminal, a pipe or a CI log. Entries with no panel go last, under
the usual ``Commands`` / ``Options`` heading.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from typer.core import TyperCommand, TyperGroup

Record = tuple[str, str]
# ``ctx`` and ``formatter`` are typer's own (vendored) click Context and HelpFormatter.

# Known panels in the order help lists them; any other panel follows in order of appearance.
PANEL_ORDER = (
    "Run",
    "Compare & gate",
    "Inspect",
    "Calibrate",
    "Tez bundles",
    "Input",
    "Metrics",
    "Providers",
    "Runner",
    "Report",
    "Gate",
)


def grouped(
    entries: Iterable[tuple[str | None, Record]], rest: str
) -> list[tuple[str, list[Record]]]:
    """Records by panel (PANEL_ORDER first, then others as they appear), unpanelled ones last."""
    panels: dict[str, list[Record]] = {}
    loose: list[Record] = []
    for panel, record in entries:
        if panel:
            panels.setdefault(panel, []).append(record)
        else:
            loose.append(record)
    rank = {name: i for i, name in enumerate(PANEL_ORDER)}
    result = sorted(panels.items(), key=lambda item: rank.get(item[0], len(rank)))
    if loose:
        result.append((rest, loose))
    return result


def _write(formatter: Any, sections: list[tuple[str, list[Record]]]) -> None:
    for title, records in sections:
        with formatter.section(title):
            formatter.write_dl(records)


def _panel(item: object) -> str | None:
    panel = getattr(item, "rich_help_panel", None)
    return panel if isinstance(panel, str) else None


def format_params(command: TyperCommand | TyperGroup, ctx: Any, formatter: Any) -> None:
    """Arguments first, then the options of each panel."""
    arguments: list[tuple[str | None, Record]] = []
    options: list[tuple[str | None, Record]] = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        target = arguments if param.param_type_name == "argument" else options
        target.append((None if target is arguments else _panel(param), record))
    _write(formatter, grouped(arguments, "Arguments"))
    _write(formatter, grouped(options, "Options"))


class PanelCommand(TyperCommand):
    """A command whose ``--help`` lists its options under their panels."""

    def format_options(self, ctx: object, formatter: object) -> None:
        format_params(self, ctx, formatter)


class PanelGroup(TyperGroup):
    """A command group whose ``--help`` lists its commands under their panels."""

    def format_options(self, ctx: object, formatter: object) -> None:
        format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        commands = [
            (name, command)
            for name in self.list_commands(ctx)
            if (command := self.get_command(ctx, name)) is not None
        ]
        format_command_list(formatter, commands)


def format_command_list(formatter: Any, commands: list[tuple[str, Any]]) -> None:
    """Commands (name, click command) under their panels, each with its short help."""
    shown = [(name, command) for name, command in commands if not command.hidden]
    if not shown:
        return
    limit = formatter.width - 6 - max(len(name) for name, _ in shown)
    entries = [(_panel(c), (name, c.get_short_help_str(limit))) for name, c in shown]
    _write(formatter, grouped(entries, "Commands"))
