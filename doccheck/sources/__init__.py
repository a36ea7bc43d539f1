"""Where documents come from: manifests (:mod:`.manifest`) read and validated row by row.

Each source yields validated rows or per-row rejections; what happens to a row afterwards
(planning, submitting) is :mod:`doccheck.pipeline`'s job.
"""
