"""Where documents come from: manifests (:mod:`.manifest`) and LMS exports (:mod:`.lms`).

A manifest is read and validated row by row. An LMS export (Moodle, Canvas or Blackboard
"download all submissions", zipped or unzipped) is recognised from its names and turned into
the manifest the run reads (:func:`doccheck.sources.lms.as_manifest`). Each source yields
validated rows or per-row rejections; what happens to a row afterwards (planning, submitting)
is :mod:`doccheck.pipeline`'s job. Callers import from the two subpackages, whose modules are
private.
"""

from __future__ import annotations

from doccheck.sources import lms, manifest

#: The two sources, each a package with its own pinned ``__all__``.
_PUBLIC_MODULES = ("lms", "manifest")

__all__ = ["lms", "manifest"]
