"""``--help`` lists commands and ``assay run``'s options under named panels."""

from __future__ import annotations

from pathlib import Path

from assay.cli.commands import PANELS
from assay.cli.help_panels import grouped
from engine.procs import run_assay


def _sections(text: str) -> dict[str, list[str]]:
    """Heading -> the first word of each entry under it (continuation lines skipped)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = sections.setdefault(line[:-1], [])
        elif current is not None and line.startswith("  ") and not line.startswith("   "):
            current.append(line.split()[0].rstrip(","))
    return sections


def test_root_help_groups_every_command_in_a_panel(tmp_path: Path) -> None:
    done = run_assay(["--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sections = _sections(done.stdout)
    panels = [name for name in sections if name not in ("Options", "Usage")]
    assert panels == ["Run", "Compare & gate", "Inspect", "Calibrate", "Tez bundles", "Production"]
    assert sections["Production"] == ["ingest", "collect", "monitor", "promote"]
    assert "Commands" not in sections  # nothing left outside a panel
    assert sections["Compare & gate"] == ["compare", "baseline"]
    assert {"run", "validate", "metrics"} <= set(sections["Run"])
    assert {"runs", "report", "view"} <= set(sections["Inspect"])
    assert sections["Calibrate"] == ["agreement", "calibrate", "judge"]
    listed = [command for name in panels for command in sections[name]]
    assert sorted(listed) == sorted(c for names in PANELS.values() for c in names)


def test_run_help_groups_its_options(tmp_path: Path) -> None:
    done = run_assay(["run", "--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sections = _sections(done.stdout)
    order = [name for name in sections if name not in ("Usage", "Arguments", "Options")]
    assert order == ["Input", "Metrics", "Providers", "Runner", "Report", "Gate"]
    assert {"--outputs", "--sut", "--sut-url", "--tag"} <= set(sections["Input"])
    assert sections["Metrics"] == ["-m"]
    assert {"--judge-model", "--base-url", "--no-cache"} <= set(sections["Providers"])
    assert {"--repetitions", "--resume", "--store", "-q"} <= set(sections["Runner"])
    assert {"-f", "-o", "--redact", "--text-limit"} <= set(sections["Report"])
    assert {"--compare", "--max-flips", "--max-drop", "--min-macro-f1"} <= set(sections["Gate"])
    assert sections["Options"] == ["--help"]  # every other option sits in a panel


def test_panels_keep_the_known_order_and_put_loose_entries_last() -> None:
    entries = [
        ("Gate", ("--b", "")),
        (None, ("--help", "")),
        ("Custom", ("--c", "")),
        ("Input", ("--a", "")),
    ]
    result = grouped(entries, "Options")
    assert [title for title, _ in result] == ["Input", "Gate", "Custom", "Options"]
