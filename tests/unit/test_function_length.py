"""No function over 80 lines (STYLE.md: a function reads in one screen) and no module over 600
(one job a module: a file past that holds several), in the library and the Prefect code alike;
a function's count starts at ``def`` and ends at the last line of the body, a module's is its lines."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.source_code import parse_source

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80
MODULE_LIMIT = 600
FOLDERS = ("doccheck", "flows", "tasks", "deployments", "prefect_doccheck")


def _sources() -> Iterator[Path]:
    for folder in FOLDERS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_function_is_over_80_lines() -> None:
    long = []
    for path in _sources():
        for node in ast.walk(parse_source(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def test_no_module_is_over_600_lines() -> None:
    long = []
    for path in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MODULE_LIMIT:
            long.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert long == []
