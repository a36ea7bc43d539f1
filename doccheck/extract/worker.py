"""The extraction worker: a child process that reads documents under OS limits.

Run as ``python -m doccheck.extract.worker`` by :mod:`doccheck.extract._sandbox`. It takes
one job at a time from stdin and answers on its own copy of stdout (fd 1 is pointed at
stderr so that no library print can corrupt the protocol). Before each job it sets
``RLIMIT_CPU`` to the CPU it has used plus the job's budget (the kernel kills it with
SIGXCPU past that) and ``RLIMIT_AS`` to its idle size plus the job's memory budget (a
MemoryError is reported and the worker exits, so the next job gets a fresh process).

Protocol, all lengths 8-byte big-endian: request = header length, JSON header
``{"filename", "size", "limits"}``, then ``size`` bytes; response = length, JSON
``{"ok": true, "text", "read_as"}`` or ``{"ok": false, "kind": "unsupported"|"error"|"limit"|"reason",
"message"}`` (``"reason"``: a document with no machine-readable text, its code in ``"reason"``).
The parent trusts nothing but the shape of this JSON: no pickles cross the boundary.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from typing import Any, BinaryIO

from doccheck.extract._protocol import LENGTH, READY


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _address_space() -> int:
    """Current virtual size of this process in bytes (Linux), 0 when unknown."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _set_soft(which: int, soft: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _answer(out: BinaryIO, payload: dict[str, Any]) -> None:
    body = json.dumps(payload, ensure_ascii=True).encode("ascii")  # a lone surrogate travels as an escape
    out.write(LENGTH.pack(len(body)) + body)
    out.flush()


def main() -> None:
    """Serve jobs until stdin closes (the parent went away or retired this worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    stdin = sys.stdin.buffer

    import lxml.etree  # noqa: F401  (imported before measuring the idle size)
    import pypdfium2  # noqa: F401

    from doccheck.errors import (
        ExtractionError,
        ExtractionLimitExceeded,
        NotMachineReadable,
        UnsupportedFileType,
    )
    from doccheck.extract._parse import parse as _parse
    from doccheck.extract._pdf import pypdf_to_text
    from doccheck.extract._read_limits import ExtractionLimits, mib

    idle = _address_space()
    out.write(READY)
    out.flush()
    while True:
        raw = _read_exact(stdin, LENGTH.size)
        if raw is None:
            return
        header = json.loads(_read_exact(stdin, LENGTH.unpack(raw)[0]) or b"{}")
        data = _read_exact(stdin, int(header["size"])) or b""
        limits = ExtractionLimits(**header["limits"])
        _set_soft(resource.RLIMIT_CPU, int(_cpu_used()) + max(1, int(limits.cpu_seconds)) + 1)
        if idle:
            _set_soft(resource.RLIMIT_AS, idle + len(data) + limits.memory_bytes)
        try:
            if header.get("engine") == "pypdf":  # PDFium crashed on these bytes in another worker
                text, read_as = pypdf_to_text(data, limits), ".pdf"
            else:
                text, read_as = _parse(data, header["filename"], limits)
        except MemoryError:
            data = b""
            _answer(out, {"ok": False, "kind": "limit", "retire": True,
                          "message": f"extraction needed over {mib(limits.memory_bytes)} of memory"})  # fmt: skip
            return  # a fresh worker for the next job
        except UnsupportedFileType as exc:
            _answer(out, {"ok": False, "kind": "unsupported", "message": str(exc)})
        except ExtractionLimitExceeded as exc:
            _answer(out, {"ok": False, "kind": "limit", "message": str(exc)})
        except NotMachineReadable as exc:
            _answer(out, {"ok": False, "kind": "reason", "reason": exc.reason, "message": str(exc)})
        except ExtractionError as exc:
            _answer(out, {"ok": False, "kind": "error", "message": str(exc)})
        except Exception as exc:  # noqa: BLE001 - a parser bug: still one row's error, never the batch's
            _answer(out, {"ok": False, "kind": "error", "message": f"extraction failed ({type(exc).__name__})"})
        else:
            _answer(out, {"ok": True, "text": text, "read_as": read_as})
        del data


if __name__ == "__main__":
    main()
