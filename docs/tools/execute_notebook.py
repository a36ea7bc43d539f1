"""Execute ``examples/notebook.ipynb`` against a fresh local emulator and save the result,
outputs included, as ``docs/notebook.ipynb``.

Why a script: the notebook in the docs must show what the code really prints today, not
what it printed when someone last ran it by hand. The test suite executes the same
notebook (``tests/integration/test_notebook.py``); this script is how the docs copy is
refreshed after a change:

    .venv/bin/python docs/tools/execute_notebook.py

It starts ``doccheck emulator`` on free local ports with a throwaway API key, runs the
notebook in a kernel of this interpreter with a temporary ledger, and stops everything.
Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from doccheck.commands import doccheck_command, free_port, start_service  # noqa: E402

SOURCE = ROOT / "examples" / "notebook.ipynb"
TARGET = ROOT / "docs" / "notebook.ipynb"
API_KEY = "docs-notebook-key"


def execute(source: Path, work: Path, env: dict[str, str]) -> object:
    """Run ``source`` top to bottom in a kernel of THIS interpreter with ``env`` set; returns
    the executed notebook (raises ``CellExecutionError`` with the failing cell's traceback)."""
    import nbformat
    from nbclient import NotebookClient

    kernel_dir = work / "jupyter" / "kernels" / "doccheck"
    kernel_dir.mkdir(parents=True, exist_ok=True)
    (kernel_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (doccheck)",
                "language": "python",
            }
        )  # fmt: skip
    )
    saved = {name: os.environ.get(name) for name in [*env, "JUPYTER_PATH"]}
    os.environ.update({**env, "JUPYTER_PATH": str(work / "jupyter")})
    try:
        nb = nbformat.read(source, as_version=4)
        NotebookClient(nb, kernel_name="doccheck", timeout=120, resources={"metadata": {"path": str(work)}}).execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


def main() -> None:
    import nbformat

    with tempfile.TemporaryDirectory(prefix="doccheck-notebook-docs-") as tmp:
        work = Path(tmp)
        port, storage_port = free_port(), free_port()
        emulator = start_service(
            "emulator",
            doccheck_command(
                "emulator",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--storage-port",
                str(storage_port),
                "--api-key",
                API_KEY,
                "--seed",
                "1",
            ),  # fmt: skip
            health_url=f"http://127.0.0.1:{port}/_emulator/health",
            url=f"http://127.0.0.1:{port}/api/v1",
            log_path=work / "emulator.log",
        )
        try:
            nb = execute(SOURCE, work, {
                "DOCCHECK_BASE_URL": emulator.url, "DOCCHECK_API_KEY": API_KEY,
                "DOCCHECK_DATABASE_URL": f"sqlite:///{work / 'ledger.db'}",
                "DOCCHECK_NOTEBOOK_CAMPAIGN": "notebook-demo",
            })  # fmt: skip
        finally:
            emulator.stop()
    nbformat.write(nb, TARGET)
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
