"""No function over 80 lines (STYLE.md: a function reads in one screen), in the library and
the Prefect code alike; the count starts at ``def`` and ends at the last line of the body."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.source_code import parse_source

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80


def test_no_function_is_over_80_lines() -> None:
    long = []
    for folder in ("doccheck", "flows", "tasks", "deployments", "prefect_doccheck"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(parse_source(path)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > LIMIT:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []
