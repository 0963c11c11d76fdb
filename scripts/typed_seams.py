"""Typed-seam figures of a source tree: parameters annotated exactly ``Any``, and imports inside
function bodies (of assay's own modules, and of others). Usage: python scripts/typed_seams.py
[src/assay]."""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _is_any(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id == "Any"
    return isinstance(annotation, ast.Attribute) and annotation.attr == "Any"


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    args = function.args
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").startswith("assay")
    return any(alias.name.startswith("assay") for alias in node.names)


def figures(root: Path) -> tuple[int, int, int]:
    """(Any parameters, own-module imports in functions, other imports in functions)."""
    any_parameters = own = other = 0
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            any_parameters += sum(_is_any(p.annotation) for p in _parameters(node))
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    own, other = (own + 1, other) if _own(inner) else (own, other + 1)
    return any_parameters, own, other


if __name__ == "__main__":
    found = figures(Path(sys.argv[1] if len(sys.argv) > 1 else "src/assay"))
    print(f"parameters typed Any: {found[0]}")
    print(f"imports in function bodies: {found[1]} of assay's own modules, {found[2]} others")
