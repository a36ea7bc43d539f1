"""No module outside ``doccheck/ledger`` imports the ledger's tables (issue 42): the packages
above ask the ledger by name (``runs_with_pending``, ``in_doubt``, ``document_names``...), so
a query, its indexes and its PostgreSQL form have one home, and a table can change without a
hunt through the pipeline, the outputs and the commands.

A row class the ledger returns may still be named in an annotation, under ``TYPE_CHECKING``
(an import for types only, as import-linter counts it); never at run time, where it would be
the makings of a query. The shipped code is checked (the library and the Prefect code); tests
and benchmarks may look inside.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.source_code import parse_source

ROOT = Path(__file__).resolve().parents[3]
LEDGER = ROOT / "doccheck" / "ledger"
FOLDERS = ("doccheck", "flows", "tasks", "deployments", "prefect_doccheck")


def _tables_module() -> Path:
    found = [p for p in LEDGER.glob("*.py") if p.stem.lstrip("_") == "tables"]
    assert len(found) == 1, found
    return found[0]


def _table_classes() -> set[str]:
    """The SQLModel classes declared with ``table=True`` (one per ledger table)."""
    tree = parse_source(_tables_module().read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(k.arg == "table" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords)
    }


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """ids of the import nodes inside an ``if TYPE_CHECKING:`` block."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def _violations(source: str, where: str, tables_module: str, classes: set[str]) -> list[str]:
    """The imports of ``source`` (the text of module ``where``) that break the rule, in line order."""
    tree = parse_source(source)
    typing_only = _type_checking_nodes(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name == tables_module]
        elif isinstance(node, ast.ImportFrom) and node.module == tables_module:
            found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.ImportFrom) and node.module == "doccheck.ledger":
            for alias in node.names:
                if alias.name == tables_module.rsplit(".", 1)[1]:
                    found.append((node.lineno, f"from doccheck.ledger import {alias.name}"))
                elif alias.name in classes and id(node) not in typing_only:
                    found.append((node.lineno, f"{alias.name} imported at run time"))
    return [f"{where}:{line} {what}" for line, what in sorted(found)]


def test_the_rule_knows_the_tables() -> None:
    classes = _table_classes()
    assert {"RunRow", "DocumentRow", "SubmissionRow", "OutcomeRow", "ClaimRow"} <= classes


def _scan() -> list[str]:
    tables_module = f"doccheck.ledger.{_tables_module().stem}"
    classes = _table_classes()
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if LEDGER not in path.parents:
                source = path.read_text(encoding="utf-8")
                found += _violations(source, str(path.relative_to(ROOT)), tables_module, classes)
    return found


def test_no_module_outside_the_ledger_imports_its_tables() -> None:
    assert _scan() == []


def test_the_rule_catches_a_query_from_outside() -> None:
    """The scan itself: a run-time import of a table class or of the tables module is caught,
    an annotation-only import is not."""
    tables_module = f"doccheck.ledger.{_tables_module().stem}"
    source = (
        "from typing import TYPE_CHECKING\n"
        "from doccheck.ledger import Ledger, RunRow\n"
        f"from {tables_module} import DocumentRow\n"
        f"import {tables_module}\n"
        "if TYPE_CHECKING:\n"
        "    from doccheck.ledger import SubmissionRow\n"
    )
    assert _violations(source, "probe.py", tables_module, _table_classes()) == [
        "probe.py:2 RunRow imported at run time",
        f"probe.py:3 from {tables_module} import ...",
        f"probe.py:4 import {tables_module}",
    ]
