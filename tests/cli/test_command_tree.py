"""The lazy command tree: each command loads on first use, and ``assay --help`` lists the same
summaries the commands' own help starts with."""

from __future__ import annotations

import re

import pytest
import typer.main

from assay.cli import app, main
from assay.cli.commands import ENTRIES, PANELS, CommandTree


def _first_paragraph(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().split("\n\n")[0])


def _tree() -> CommandTree:
    tree = typer.main.get_command(app)
    assert isinstance(tree, CommandTree)
    return tree


def test_every_panelled_command_has_an_entry_and_no_other() -> None:
    panelled = sorted(name for names in PANELS.values() for name in names)
    assert sorted(ENTRIES) == panelled


def test_each_summary_opens_its_commands_help() -> None:
    tree = _tree()
    ctx = typer.Context(tree)
    for name, entry in ENTRIES.items():
        command = tree.get_command(ctx, name)
        assert command is not None, name
        assert command.help is not None, name
        assert entry.summary == _first_paragraph(command.help), name


def test_listing_from_summaries_matches_listing_from_loaded_commands() -> None:
    tree = _tree()
    ctx = typer.Context(tree)
    lazy = ctx.make_formatter()
    tree.format_commands(ctx, lazy)
    assert not tree.commands  # the listing loaded nothing
    for width in (40, 80, 200):
        lazy, loaded = (typer.Context(tree, terminal_width=width).make_formatter() for _ in "ab")
        tree.format_commands(ctx, lazy)
        # the parent class lists the loaded commands themselves (their own help and panels)
        super(CommandTree, tree).format_commands(ctx, loaded)
        assert lazy.getvalue() == loaded.getvalue()
        assert "Tez bundles:" in lazy.getvalue()


def test_a_command_loads_only_its_own_module() -> None:
    tree = _tree()
    tree.get_command(typer.Context(tree), "validate")
    assert sorted(tree.commands) == ["validate"]  # its module's other command is not built
    assert tree.get_command(typer.Context(tree), "no-such-command") is None


def test_a_mistyped_command_gets_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["rn"])
    assert info.value.code == 2
    assert "No such command 'rn'. Did you mean 'run', 'runs'?" in capsys.readouterr().err
