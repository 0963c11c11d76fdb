"""The command tree: every command, the module that adds it, its help panel and summary.

Commands load on demand: ``assay run ...`` imports the module of ``run`` alone and builds that
command alone, and ``assay --help`` lists every command from the summaries here without
importing any of them, so start-up stays fast (benchmarks/bench_startup.py). Each module
exposes ``register(app)``; heavy imports stay inside the command functions.
A new command is one entry in ``PANELS`` and one in ``ENTRIES``;
tests/core/test_command_tree.py checks each summary against its command's own help.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand

from assay.cli.help_panels import PanelCommand, PanelGroup, format_command_list


class Entry(NamedTuple):
    """One top-level command or command group."""

    module: str
    """The module whose ``register(app)`` adds it."""
    summary: str
    """The first paragraph of its help, as ``assay --help`` shortens it."""


# Every top-level command and command group, by the panel ``assay --help`` lists it under.
PANELS: dict[str, tuple[str, ...]] = {
    "Run": ("run", "validate", "import", "metrics", "adversarial", "generate", "simulate"),
    "Compare & gate": ("compare", "baseline"),
    "Inspect": ("runs", "report", "view", "brief", "cache"),
    "Calibrate": ("agreement", "calibrate", "judge"),
    "Tez bundles": ("tez",),
    "Production": ("ingest", "collect", "monitor", "promote"),
}

# In the order ``assay --help`` lists them within a panel.
ENTRIES: dict[str, Entry] = {
    "validate": Entry(
        "assay.cli.core",
        "Check a dataset against the schema and report every problem (up to 20) precisely.",
    ),
    "import": Entry(
        "assay.cli.importers",
        "Convert another tool's file (autorubric, padosoft calibration cases, promptfoo, "
        "DeepEval) into an assay dataset or labels file, listing what could not be mapped.",
    ),
    "metrics": Entry("assay.cli.core", "List every metric assay can resolve, one line each."),
    "run": Entry(
        "assay.cli.run",
        "Run a dataset through a system under test (or saved outputs), score it, report, gate.",
    ),
    "runs": Entry("assay.cli.run", "List past runs, newest first."),
    "report": Entry("assay.cli.run", "Render a stored run again, without rerunning anything."),
    "compare": Entry(
        "assay.cli.gate",
        "Compare two reports sample by sample: regressions and flips first, then the deltas.",
    ),
    "agreement": Entry(
        "assay.cli.calibration",
        "Agreement between judges and human labels: kappa, alpha, correlations, bias, intervals.",
    ),
    "calibrate": Entry(
        "assay.cli.calibration",
        "Run judge model(s) over a human-labelled dataset and report their agreement with people.",
    ),
    "judge": Entry(
        "assay.cli.judge",
        "Judges that prove themselves: two judges on one calibration set (swap), the label "
        "queue's labels for assay agreement (labels), few-shot alignment (align).",
    ),
    "view": Entry(
        "assay.cli.view",
        "Browse runs, one run's samples, and two runs side by side in a local web page.",
    ),
    "adversarial": Entry(
        "assay.cli.adversarial",
        "Run the red-team lane (ten categories of seed attacks, or your own) against a system "
        "under test or saved outputs; compliance summary, drift gate, promoted failures.",
    ),
    "generate": Entry(
        "assay.cli.generate",
        "Write a dataset of questions from a folder of documents, each checked before it is kept.",
    ),
    "simulate": Entry(
        "assay.cli.generate",
        "Talk to a system under test as simulated users with goals; score the conversations.",
    ),
    "brief": Entry(
        "assay.cli.adversarial",
        "A compact failure brief of a report, for a person or an agent fixing the regression.",
    ),
    "baseline": Entry(
        "assay.cli.gate", "Pin and inspect the baseline report a run is compared against."
    ),
    "tez": Entry(
        "assay.cli.tez",
        "Score TIP interrogation sessions against a Tez bundle; show and validate bundles.",
    ),
    "cache": Entry(
        "assay.cli.providers",
        "Inspect or empty the provider cache (judge verdicts, embeddings).",
    ),
    "ingest": Entry(
        "assay.cli.production",
        "Read OTLP trace export files into the trace store: sampled, redacted, kept for a time.",
    ),
    "collect": Entry(
        "assay.cli.production",
        "Receive OTLP/HTTP traces (POST /v1/traces) from an application's exporter.",
    ),
    "monitor": Entry(
        "assay.cli.production",
        "Score sampled production traces as assay runs and raise drift alerts per metric.",
    ),
    "promote": Entry(
        "assay.cli.production",
        "Write failing or flagged production traces into a dataset, expected outputs left blank.",
    ),
}


class CommandTree(PanelGroup):
    """The root group: a command's module is imported, and its commands built, on first use."""

    def list_commands(self, ctx: object) -> list[str]:
        return [*ENTRIES, *(name for name in self.commands if name not in ENTRIES)]

    def get_command(self, ctx: object, name: str) -> Any:
        entry = ENTRIES.get(name)
        if name not in self.commands and entry is not None:
            self.commands.update(build_commands(entry.module, name))
        return self.commands.get(name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """As typer's; a name it does not know loads every command, for typer's suggestions."""
        if args and args[0] not in ENTRIES:
            for name in ENTRIES:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: object, formatter: object) -> None:
        """Every command under its panel with its summary, loading none of them."""
        panel_of = _panel_of()
        listed = [
            (name, TyperCommand(name, help=entry.summary, rich_help_panel=panel_of.get(name)))
            for name, entry in ENTRIES.items()
        ]
        format_command_list(formatter, listed)


def build_commands(module: str, name: str | None = None) -> dict[str, Any]:
    """The click commands (and groups) that ``module``'s ``register(app)`` adds, by name; with
    ``name``, that one alone (typer reads every command's signature as it builds it: ``assay
    run`` built ``runs`` and ``report`` too, about 10M instructions before its first request)."""
    import importlib

    from typer.main import get_group

    app = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False)
    importlib.import_module(module).register(app)
    if name is not None:
        app.registered_commands = [c for c in app.registered_commands if c.name == name]
        app.registered_groups = [g for g in app.registered_groups if g.name == name]
    _place_in_panels(app)
    return dict(get_group(app).commands)


def _place_in_panels(app: typer.Typer) -> None:
    """Give every command its help panel; its options are listed by their own panels."""
    panel_of = _panel_of()
    for command in app.registered_commands:
        command.rich_help_panel = panel_of.get(command.name or "")
        if command.cls in (None, TyperCommand):
            command.cls = PanelCommand
    for group in app.registered_groups:
        group.rich_help_panel = panel_of.get(group.name or "")


def _panel_of() -> dict[str, str]:
    """Each command's panel, by command name."""
    return {name: panel for panel, names in PANELS.items() for name in names}
