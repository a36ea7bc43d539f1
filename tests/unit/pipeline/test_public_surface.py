"""The pipeline's public surface is ``doccheck.pipeline.__all__``: every module behind it is private.

Why pinned: before, each of the pipeline's 27 modules was public, callers imported whichever
held a name, and every move broke them. Now a module can move inside the pipeline without a
caller noticing, as long as this surface holds its names.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import doccheck.pipeline as pipeline

ROOT = Path(__file__).resolve().parents[3]
PIPELINE = ROOT / "doccheck" / "pipeline"
JOBS = ("planning", "sending", "collecting")
#: The code that runs the pipeline; tests may import a private module (its own unit tests).
CALLERS = ("doccheck", "flows", "tasks", "prefect_doccheck", "deployments", "benchmarks")
#: The profilers time the run sequence and the ledger writer by wrapping their modules' functions:
#: they need the modules.
INSTRUMENTS = {"benchmarks/profile_command.py", "benchmarks/profile_submit.py"}


def test_every_name_of_the_surface_is_exported_once_and_resolves() -> None:
    assert len(pipeline.__all__) == len(set(pipeline.__all__))
    for name in pipeline.__all__:
        assert getattr(pipeline, name) is not None, name


def test_each_job_pins_its_own_surface_and_the_top_repeats_it() -> None:
    for job in JOBS:
        package = importlib.import_module(f"doccheck.pipeline.{job}")
        for name in package.__all__:
            assert getattr(pipeline, name) is getattr(package, name), (job, name)


def test_every_module_of_the_pipeline_is_private() -> None:
    public = [
        str(path.relative_to(PIPELINE))
        for path in PIPELINE.rglob("*.py")
        if path.name != "__init__.py" and not path.name.startswith("_")
    ]
    assert public == []
    assert sorted(p.name for p in PIPELINE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(JOBS)


#: ``from doccheck.pipeline.x._y import ...`` or ``from doccheck.pipeline[.x] import _y``. A regular
#: expression, not ``ast``: CPython 3.11's parser raises SystemError when an earlier test of the
#: session left the recursion limit changed.
PRIVATE_IMPORT = re.compile(r"^\s*from (doccheck\.pipeline\S*) import \(?\s*(\w+)", re.MULTILINE)


def _private_imports(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
        for match in PRIVATE_IMPORT.finditer(path.read_text(encoding="utf-8"))
        if "._" in match.group(1) or match.group(2).startswith("_")
    ]


def test_callers_outside_the_pipeline_import_its_surface_only() -> None:
    found = [
        hit
        for folder in CALLERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if PIPELINE not in path.parents and str(path.relative_to(ROOT)) not in INSTRUMENTS
        for hit in _private_imports(path)
    ]
    assert found == []
