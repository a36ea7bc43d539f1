"""Where documents come from: manifests (:mod:`.manifest`) and LMS exports (:mod:`.lms`).

A manifest is read and validated row by row. An LMS export (Moodle, Canvas or Blackboard
"download all submissions", zipped or unzipped) is recognised from its names and turned into
the manifest the run reads (:mod:`.lms.derive`). Each source yields validated rows or per-row
rejections; what happens to a row afterwards (planning, submitting) is
:mod:`doccheck.pipeline`'s job.
"""

__all__: list[str] = []
