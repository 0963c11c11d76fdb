"""Command registration: the core commands plus each feature package's sub-commands.

Each module exposes ``register(app)``; heavy imports stay inside the command functions so
``assay --help`` stays fast.
"""

from __future__ import annotations

import typer

# Every top-level command and command group, by the panel ``assay --help`` lists it under.
PANELS: dict[str, tuple[str, ...]] = {
    "Run": ("run", "validate", "metrics", "adversarial"),
    "Compare & gate": ("compare", "baseline"),
    "Inspect": ("runs", "report", "view", "brief", "cache"),
    "Calibrate": ("agreement", "calibrate"),
    "Tez bundles": ("tez",),
}


def register(app: typer.Typer) -> None:
    """Attach every command to the root app."""
    from assay import core_cli, gate_cli, run_cli
    from assay.adversarial import cli as adversarial_cli
    from assay.calibration import cli as calibration_cli
    from assay.providers import cli as providers_cli
    from assay.tez import cli as tez_cli
    from assay.view import cli as view_cli

    core_cli.register(app)  # validate, metrics
    run_cli.register(app)  # run, runs, report
    gate_cli.register(app)  # baseline, compare
    tez_cli.register(app)  # tez score|show|validate
    calibration_cli.register(app)  # agreement, calibrate
    providers_cli.register(app)  # cache stats|clear
    view_cli.register(app)  # view
    adversarial_cli.register(app)  # adversarial, brief
    _place_in_panels(app)


def _place_in_panels(app: typer.Typer) -> None:
    """Give every command its help panel; its options are listed by their own panels."""
    from typer.core import TyperCommand

    from assay.help_panels import PanelCommand

    panel_of = {name: panel for panel, names in PANELS.items() for name in names}
    for command in app.registered_commands:
        command.rich_help_panel = panel_of.get(command.name or "")
        if command.cls in (None, TyperCommand):
            command.cls = PanelCommand
    for group in app.registered_groups:
        group.rich_help_panel = panel_of.get(group.name or "")
