"""What reading files costs the whole ``doccheck run --no-wait`` (issue 41), against a floor measured
in the same run on the same files.

Run:  .venv/bin/python benchmarks/extract_command.py [--pdfs 300] [--docx 150] [--pages 8] [--rounds 3]

Generates ``--pdfs`` PDFs of ``--pages`` pages (fpdf2) and ``--docx`` DOCX essays (python-docx),
and the same texts as ``.txt`` files; then, in each round and in alternating order, runs
``doccheck run MANIFEST --no-wait`` as a subprocess (fresh SQLite ledger each time) on the files'
manifest and on the texts' manifest, against one emulator (zero latency). The command's CPU is the
subprocess's user + system time, its extraction workers' included (they are its children).

* **extra CPU for the files** = CPU(files) - CPU(texts): what reading PDFs and DOCX costs the
  command beyond sending their texts (median of the rounds);
* **floor**, measured in this process on the same files: PDFium's text of every page of every PDF
  (``pypdfium2`` directly, nothing else), plus a plain ``zipfile`` read of each DOCX's
  ``word/document.xml``;
* **ratio** = extra / floor (target <= 1.5);
* **rerun**: the files' command once more on the same ledger, nothing changed (target <= 10 s wall);
* per format, the reader's own CPU a file in this process (``doccheck.extract._parse.parse``),
  and pypdf's for comparison.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pipeline_throughput import API_KEY, WORDS, start_emulator  # noqa: E402

from doccheck.commands import doccheck_command  # noqa: E402
from doccheck.extract import DEFAULT_LIMITS  # noqa: E402

# The reader itself, in this process: an instrument needs the private module.
from doccheck.extract._parse import parse  # noqa: E402


def essay(rng: random.Random, words: int) -> list[str]:
    """Paragraphs of ~120 words, ``words`` in all."""
    out: list[str] = []
    left = words
    while left > 0:
        n = min(left, rng.randint(90, 150))
        sentence = " ".join(rng.choice(WORDS) for _ in range(n))
        out.append(sentence[0].upper() + sentence[1:] + ".")
        left -= n
    return out


def make_pdf(paragraphs: list[str]) -> bytes:
    from fpdf import FPDF

    doc = FPDF()
    doc.set_auto_page_break(True, margin=15)
    doc.add_page()
    doc.set_font("helvetica", size=11)
    for paragraph in paragraphs:
        doc.multi_cell(0, 5.5, paragraph)
        doc.ln(2)
    return bytes(doc.output())


def make_docx(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Essay", level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def generate(folder: Path, pdfs: int, docxs: int, pages: int) -> tuple[Path, Path, list[Path], list[Path]]:
    """The files, the texts, and their two manifests."""
    rng = random.Random(41)
    files_dir, texts_dir = folder / "files", folder / "texts"
    files_dir.mkdir(parents=True)
    texts_dir.mkdir(parents=True)
    pdf_paths: list[Path] = []
    docx_paths: list[Path] = []
    rows_files, rows_texts = [], []
    for i in range(pdfs + docxs):
        is_pdf = i < pdfs
        paragraphs = essay(rng, 520 * pages if is_pdf else rng.randint(1500, 3000))  # ~520 words a page
        name = f"essay-{i:04d}"
        path = files_dir / (name + (".pdf" if is_pdf else ".docx"))
        path.write_bytes(make_pdf(paragraphs) if is_pdf else make_docx(paragraphs))
        (pdf_paths if is_pdf else docx_paths).append(path)
        (texts_dir / (name + ".txt")).write_text("\n\n".join(paragraphs), encoding="utf-8")
        rows_files.append([name, f"files/{path.name}"])
        rows_texts.append([name, f"texts/{name}.txt"])
    manifests = []
    for label, rows in (("files", rows_files), ("texts", rows_texts)):
        manifest = folder / f"{label}.csv"
        with manifest.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["document_id", "path"])
            writer.writerows(rows)
        manifests.append(manifest)
    return manifests[0], manifests[1], pdf_paths, docx_paths


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(manifest: Path, ledger: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one ``doccheck run --no-wait``."""
    args = doccheck_command("run", str(manifest), "--no-wait", "--no-progress",
                            "--database-url", f"sqlite:///{ledger}", "--out", str(out))  # fmt: skip
    cpu, started = children_cpu(), time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"doccheck run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, children_cpu() - cpu


def cpu_of(fn: Callable[[], object]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def floor_cpu(pdfs: list[Path], docxs: list[Path]) -> tuple[float, float]:
    """(PDFium text of every PDF, plain read of every document.xml), CPU seconds in this process."""
    import pypdfium2 as pdfium

    def pdfium_all() -> None:
        for path in pdfs:
            document = pdfium.PdfDocument(path.read_bytes())
            for index in range(len(document)):
                page = document[index]
                textpage = page.get_textpage()
                textpage.get_text_range()
                textpage.close()
                page.close()
            document.close()

    def document_xml_all() -> None:
        for path in docxs:
            with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as archive:
                archive.read("word/document.xml")

    return cpu_of(pdfium_all), cpu_of(document_xml_all)


def per_format(pdfs: list[Path], docxs: list[Path]) -> dict[str, float]:
    """Milliseconds of CPU a file for each reader, in this process."""
    from pypdf import PdfReader

    def reader(paths: list[Path], name: str) -> float:
        return 1000 * cpu_of(lambda: [parse(p.read_bytes(), name, DEFAULT_LIMITS) for p in paths]) / len(paths)

    def pypdf_text() -> None:
        for path in pdfs:
            for page in PdfReader(io.BytesIO(path.read_bytes())).pages:
                page.extract_text()

    return {
        "PDF, doccheck (PDFium + raw cost bound)": reader(pdfs, "x.pdf"),
        "PDF, pypdf extract_text (the old reader)": 1000 * cpu_of(pypdf_text) / len(pdfs),
        "DOCX, doccheck (streaming lxml)": reader(docxs, "x.docx"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdfs", type=int, default=300)
    parser.add_argument("--docx", type=int, default=150)
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="doccheck-extract-command-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        files, texts, pdfs, docxs = generate(folder, args.pdfs, args.docx, args.pages)
        print(f"generated {len(pdfs)} PDFs, {len(docxs)} DOCX and their texts in {time.perf_counter() - started:.0f} s")
        service, root = start_emulator(folder, 0)
        try:
            base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_"))}
            env = {**base, "PREFECT_HOME": str(folder / "prefect-home"), "DOCCHECK_BASE_URL": f"{root}/api/v1",
                   "DOCCHECK_API_KEY": API_KEY}  # fmt: skip
            runs: dict[str, list[tuple[float, float]]] = {"files": [], "texts": []}
            floors: list[tuple[float, float]] = []
            for number in range(args.rounds):
                order = [("files", files), ("texts", texts)][:: 1 if number % 2 == 0 else -1]
                for label, manifest in order:
                    runs[label].append(command(manifest, folder / f"{label}-{number}.db", folder / "out", env))
                floors.append(floor_cpu(pdfs, docxs))
            rerun = command(files, folder / "files-0.db", folder / "out", env)
        finally:
            service.stop()
        report(args, runs, floors, rerun, per_format(pdfs, docxs))


def report(
    args: argparse.Namespace,
    runs: dict[str, list[tuple[float, float]]],
    floors: list[tuple[float, float]],
    rerun: tuple[float, float],
    formats: dict[str, float],
) -> None:
    files_cpu = statistics.median(cpu for _, cpu in runs["files"])
    texts_cpu = statistics.median(cpu for _, cpu in runs["texts"])
    pdf_floor = statistics.median(p for p, _ in floors)
    docx_floor = statistics.median(d for _, d in floors)
    extra, floor = files_cpu - texts_cpu, pdf_floor + docx_floor
    print(f"\n{args.pdfs} PDFs of {args.pages} pages + {args.docx} DOCX vs the same texts as .txt, "
          f"median of {args.rounds} rounds, {os.cpu_count()} CPUs")  # fmt: skip
    print(f"  doccheck run --no-wait, files: {files_cpu:6.2f} s CPU "
          f"(wall {statistics.median(w for w, _ in runs['files']):.2f} s)")  # fmt: skip
    print(f"  doccheck run --no-wait, texts: {texts_cpu:6.2f} s CPU "
          f"(wall {statistics.median(w for w, _ in runs['texts']):.2f} s)")  # fmt: skip
    print(f"  extra CPU for the files:       {extra:6.2f} s")
    print(f"  floor: PDFium {pdf_floor:.2f} s + document.xml read {docx_floor:.2f} s = {floor:.2f} s")
    print(f"  ratio extra / floor:           {extra / floor:6.2f}x   (target <= 1.5x)")
    print(f"  rerun, nothing changed:        {rerun[0]:6.2f} s wall, {rerun[1]:.2f} s CPU   (target <= 10 s)")
    print("  reader CPU a file, in process:")
    for name, ms in formats.items():
        print(f"    {name:45s} {ms:7.2f} ms")


if __name__ == "__main__":
    main()
