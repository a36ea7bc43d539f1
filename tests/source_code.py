"""Reading the project's own source in tests (rules about functions, imports, docstrings)."""

from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse_source(source: str | Path) -> ast.Module:
    """``ast.parse`` of a file or a text, with the garbage collector paused.

    On CPython 3.11 a finalizer of an earlier test's objects that runs mid-parse and compiles
    code itself breaks the parse ("SystemError: AST constructor recursion depth mismatch"):
    seen after tests/unit/pipeline/test_batches.py, and more often on pytest-xdist workers.
    """
    text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(text)
    finally:
        if enabled:
            gc.enable()
