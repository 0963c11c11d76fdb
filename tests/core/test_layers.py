"""The import-linter layers contract (pyproject.toml) names every module of assay exactly once,
and the package ``__init__`` modules it leaves out import nothing that could break a layer.

`lint-imports` itself runs in CI (.ci/run); this test keeps the contract complete as modules are
added, so that a new module cannot sit outside every layer unnoticed.
"""

from __future__ import annotations

import pkgutil
import sys
from pathlib import Path

import grimp

import assay

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def _layer_entries() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [
        name.strip()
        for layer in contract["layers"]
        for name in layer.replace("|", ":").split(":")
        if name.strip()
    ]


def _modules() -> tuple[set[str], set[str]]:
    """(every module, the packages among them) under src/assay."""
    modules, packages = {"assay"}, {"assay"}
    for info in pkgutil.walk_packages(assay.__path__, "assay."):
        modules.add(info.name)
        if info.ispkg:
            packages.add(info.name)
    return modules, packages


def test_every_module_is_in_exactly_one_layer() -> None:
    entries = _layer_entries()
    assert len(entries) == len(set(entries)), "a module is named in two layers"
    modules, packages = _modules()
    assert set(entries) <= modules, f"layers name missing modules: {set(entries) - modules}"
    for module in sorted(modules - packages):
        owners = [e for e in entries if module == e or module.startswith(e + ".")]
        assert len(owners) == 1, f"{module} is in {len(owners)} layers: {owners}"


def test_packages_outside_the_layers_import_only_their_children_or_errors() -> None:
    graph = grimp.build_graph("assay", exclude_type_checking_imports=True)
    entries = _layer_entries()
    _, packages = _modules()
    for package in sorted(packages):
        if any(package == e or package.startswith(e + ".") for e in entries):
            continue
        for imported in graph.find_modules_directly_imported_by(package):
            assert imported == "assay.errors" or imported.startswith(package + "."), (
                f"{package}/__init__.py imports {imported}; name the package in a layer instead"
            )


def test_the_top_level_holds_only_entry_points_and_the_exception_tree() -> None:
    """Modules live in packages named for what they hold; the top level keeps at most eight."""
    top = sorted(p.name for p in (ROOT / "src" / "assay").glob("*.py"))
    assert len(top) <= 8, top


def test_the_contract_names_packages_not_modules() -> None:
    """A new module needs no edit to the contract: it is in its package's layer."""
    _, packages = _modules()
    leaves = {"assay.__main__", "assay.pytest_plugin", "assay.api", "assay.errors"}
    assert set(_layer_entries()) <= packages | leaves
