"""What a run leaves behind: Parquet reports, the instructor's page and files, the service's files.

:mod:`.reports` (pyarrow schemas, run folder and ``latest/``), :mod:`.instructor` (``report.html``,
``documents.parquet``/``.csv``), :mod:`.downloads` (the service's PDFs), :mod:`.markdown`
(untrusted values as literal Markdown for Prefect artifacts).
"""

__all__: list[str] = []
