"""Command registration: the core commands plus each feature package's sub-commands.

Each module exposes ``register(app)``; heavy imports stay inside the command functions so
``assay --help`` stays fast.
"""

from __future__ import annotations

import typer


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
