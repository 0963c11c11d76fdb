"""Command registration: the core commands plus each feature package's sub-commands."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach every command to the root app. Feature packages add one line each below."""
    from assay import core_cli, run_cli

    core_cli.register(app)
    run_cli.register(app)
    __import__("assay.gate_cli", fromlist=["register"]).register(app)  # baseline, compare
    __import__("assay.tez.cli", fromlist=["register"]).register(app)  # tez score|show|validate
    __import__("assay.calibration.cli", fromlist=["register"]).register(app)  # agreement
    __import__("assay.providers.cli", fromlist=["register"]).register(app)  # cache stats|clear
    # Feature packages: each module exposes ``register(app)``.
    # (calibration, tez, gate/baseline/compare, runs/report are mounted here)
