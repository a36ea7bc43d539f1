"""Cohort matching of a streamed plan in a second process, fed while the plan is read.

Why: a dry run of a term is two CPU-bound halves of about the same size — reading,
validating and planning the manifest (CSV parsing, word counts, hashes) and matching the
cohort (shingling, signing, banding) — and one Python process runs them one after the other
on one core. Here the parent plans and sends each document's id, content hash and text (or
path) in batches through a pipe; a child process matches them as they arrive and sends back
the summary. On the 2-core machine the two halves overlap (docs/benchmarks.md, "term_scale.py").

The pipe bounds what is in flight (one batch being written, one being read), so memory
stays flat; the child's own peak is reported by the benchmark with the parent's. An error in
the child (a template file that cannot be read) comes back as the same exception; a child
that dies is a ``RuntimeError`` naming its exit code. Not ``fork``: the caller may be a
notebook with threads; and not multiprocessing's ``spawn`` either: it re-runs the caller's
main script. The child is a plain interpreter on two pipes, pickles both ways.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from doccheck.storage import display

__all__ = ["BATCH", "match_in_background"]

#: Documents per message (~0.6 MB of text for 400-word rows).
BATCH = 256


@dataclass(frozen=True)
class _Doc:
    """What matching reads of a planned document."""

    document_id: str
    content_hash: str
    text: str | None
    path: str | None


def match_in_background(
    documents: Iterable[Any],
    match: Callable[[Iterable[Any]], dict[str, Any]],
) -> dict[str, Any]:
    """``match(documents)`` run in a second Python process while ``documents`` is consumed here.

    ``match`` must pickle (a module-level function, or a ``functools.partial`` of one); it
    receives an iterator of objects with ``document_id``, ``content_hash``, ``text`` and
    ``path`` and returns something picklable (a summary dict).
    """
    # A plain interpreter on pipes, not multiprocessing's spawn: spawn re-runs the caller's
    # main script in the child, which breaks any script without a ``__main__`` guard.
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", _BOOTSTRAP], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None  # noqa: S101 - both are pipes
    try:
        _send(process, list(sys.path))
        _send(process, match)
        batch: list[tuple[str, str, str | None, str | None]] = []
        for doc in documents:
            path = getattr(doc, "path", None)  # a location as display() shows it: the child resolves it again
            batch.append((str(doc.document_id), str(doc.content_hash), getattr(doc, "text", None),
                          None if path is None else display(path)))  # fmt: skip
            if len(batch) >= BATCH:
                _send(process, batch)
                batch = []
        if batch:
            _send(process, batch)
        _send(process, None)
        process.stdin.close()
        try:
            status, payload = pickle.load(process.stdout)
        except (EOFError, pickle.UnpicklingError):
            process.wait(10)
            raise RuntimeError(
                f"the cohort matching process ended without an answer (exit code {process.returncode})"
            ) from None
    finally:
        for stream in (process.stdin, process.stdout):
            if not stream.closed:
                stream.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if status == "error":
        raise payload
    result: dict[str, Any] = payload
    return result


_BOOTSTRAP = (
    "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
    "from doccheck.matching._background import _child_main; _child_main()"
)


def _send(process: subprocess.Popen[bytes], message: Any) -> None:
    assert process.stdin is not None  # noqa: S101
    try:
        pickle.dump(message, process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
    except (BrokenPipeError, ConnectionResetError):
        process.wait(10)
        raise RuntimeError(f"the cohort matching process ended early (exit code {process.returncode})") from None


def _received(stream: IO[bytes]) -> Iterator[_Doc]:
    while True:
        batch = pickle.load(stream)
        if batch is None:
            return
        for document_id, content_hash, text, path in batch:
            yield _Doc(document_id, content_hash, text, path)


def _child_main() -> None:
    """The child: match what arrives on stdin, answer ("ok", summary) or ("error", exception) on stdout."""
    import os

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the answer
    source = sys.stdin.buffer
    match = pickle.load(source)
    documents = _received(source)
    try:
        answer: tuple[str, Any] = ("ok", match(documents))
    except Exception as exc:  # noqa: BLE001 - handed back to the caller as it was raised
        answer = ("error", _picklable(exc))
    try:
        for _ in documents:  # on an early error, read the rest so the sender is never stuck
            pass
    except (EOFError, pickle.UnpicklingError):
        pass
    pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
    answers.close()


def _picklable(exc: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception type: fall back to its message
        return RuntimeError(f"{type(exc).__name__}: {exc}")
