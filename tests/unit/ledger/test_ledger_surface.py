"""The ledger's public surface is ``doccheck.ledger.__all__``: every module behind it is private.

Why pinned: each of the ledger's modules was public, and callers imported whichever held a
name (``doccheck.ledger.bulk``, ``.engine``, ``.transient``...), so a module could not be split
or renamed without a hunt. Now callers outside the ledger import from ``doccheck.ledger``; only
the ledger's own tests (``tests/unit/ledger/`` and their PostgreSQL re-runs) look inside.
"""

from __future__ import annotations

import re
from pathlib import Path

import doccheck.ledger as ledger

ROOT = Path(__file__).resolve().parents[3]
LEDGER = ROOT / "doccheck" / "ledger"
#: The code that uses the ledger; tests outside ``tests/unit/ledger`` use the surface too.
CALLERS = ("doccheck", "flows", "tasks", "prefect_doccheck", "deployments", "benchmarks", "tests")
#: The ledger's own tests, and an instrument: ``benchmarks/pg_rounds.py`` times a round's two SQL
#: forms on one PostgreSQL server by switching the statement module's backend test.
INSIDE = {
    "tests/integration/test_ledger_bulk_postgres.py",
    "benchmarks/pg_rounds.py",
}

#: ``from doccheck.ledger._x import ...``, ``from doccheck.ledger import _x`` or ``import doccheck.ledger._x``.
#: A regular expression, not ``ast`` (see tests/unit/pipeline/test_public_surface.py).
PRIVATE_IMPORT = re.compile(
    r"^\s*(?:from (doccheck\.ledger\S*) import \(?\s*(\w+)|import (doccheck\.ledger\.\w+))", re.MULTILINE
)


def _private(source: str) -> list[str]:
    """The imports of ``source`` that reach past the surface, in order."""
    return [
        match.group(0).strip()
        for match in PRIVATE_IMPORT.finditer(source)
        if match.group(3) or (match.group(1) or "").startswith("doccheck.ledger.") or match.group(2).startswith("_")
    ]


def test_every_name_of_the_surface_is_exported_once_and_resolves() -> None:
    assert len(ledger.__all__) == len(set(ledger.__all__))
    for name in ledger.__all__:
        assert getattr(ledger, name) is not None, name


def test_every_module_of_the_ledger_is_private() -> None:
    public = [p.name for p in LEDGER.glob("*.py") if p.name != "__init__.py" and not p.name.startswith("_")]
    assert public == []


def test_callers_outside_the_ledger_import_its_surface_only() -> None:
    own_tests = ROOT / "tests" / "unit" / "ledger"
    found = [
        f"{path.relative_to(ROOT)}: {hit}"
        for folder in CALLERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if LEDGER not in path.parents and own_tests not in path.parents and str(path.relative_to(ROOT)) not in INSIDE
        for hit in _private(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_rule_catches_a_private_import() -> None:
    source = (
        "from doccheck.ledger import Ledger, in_doubt\n"
        "from doccheck.ledger import _bulk_sql as sql\n"
        "from doccheck.ledger._bulk import Answer\n"
        "    import doccheck.ledger._bulk as bulk\n"
        "import doccheck.ledger as surface\n"
    )
    assert _private(source) == [
        "from doccheck.ledger import _bulk_sql",
        "from doccheck.ledger._bulk import Answer",
        "import doccheck.ledger._bulk",
    ]
