"""The cycle collector during the command line: paused for start-up, on for the command's work
(``assay run``: from its evaluation on), and as it was once ``main`` returns."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import assay.metrics.registry
from assay.cli import main, run_execution

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def recording(seen: dict[str, bool], name: str, function: Callable[..., Any]) -> Any:
    """``function``, noting in ``seen[name]`` whether the collector was on when it was called."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seen[name] = gc.isenabled()
        return function(*args, **kwargs)

    return wrapper


def run_main(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code in (None, 0)


def test_assay_run_plans_with_the_collector_paused_and_evaluates_with_it_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, bool] = {}
    monkeypatch.setattr(
        run_execution, "build_plan", recording(seen, "plan", run_execution.build_plan)
    )
    monkeypatch.setattr(
        run_execution, "run_samples", recording(seen, "evaluate", run_execution.run_samples)
    )
    argv = ["run", str(QUICKSTART / "dataset.yml"), "--outputs", str(QUICKSTART / "outputs.json")]
    run_main([*argv, "-m", "exact-match", "--no-store", "-q", "-f", "json", "-o", os.devnull])
    assert seen == {"plan": False, "evaluate": True}
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # what was frozen for the run is unfrozen


def test_other_commands_run_with_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, bool] = {}
    registry = assay.metrics.registry
    monkeypatch.setattr(registry, "catalogue", recording(seen, "metrics", registry.catalogue))
    run_main(["metrics"])
    assert seen == {"metrics": True}
    assert gc.isenabled()


def test_main_leaves_a_paused_collector_paused() -> None:
    gc.disable()
    try:
        run_main(["metrics"])
        assert not gc.isenabled()
    finally:
        gc.enable()
