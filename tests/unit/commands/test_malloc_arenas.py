"""A command's process allocates from two malloc arenas (doccheck.commands._malloc_arenas)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from doccheck.commands._malloc_arenas import limit_malloc_arenas


def test_the_users_own_setting_is_left_to_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_threads_of_a_command_share_the_capped_arenas() -> None:
    """Eight threads that each allocate: with the cap, glibc's arena count (malloc_info's
    ``<heap nr=``) stays at two; the environment of child processes is left as it was."""
    probe = (
        "import ctypes, os, tempfile, threading\n"
        "import doccheck.commands\n"
        "together = threading.Barrier(8)\n"
        "def work():\n"
        "    keep = [bytes(2_000) for _ in range(2_000)]\n"  # past Python's small-object allocator: malloc's
        "    together.wait()\n"  # all eight alive at once: none hands its arena on
        "threads = [threading.Thread(target=work) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "libc = ctypes.CDLL(None); libc.fdopen.restype = ctypes.c_void_p\n"
        "with tempfile.TemporaryFile() as f:\n"
        "    stream = libc.fdopen(os.dup(f.fileno()), b'w')\n"
        "    libc.malloc_info(0, ctypes.c_void_p(stream)); libc.fclose(ctypes.c_void_p(stream))\n"
        "    f.seek(0); print(f.read().decode().count('<heap nr='), os.environ.get('MALLOC_ARENA_MAX'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    heaps, variable = out.split()
    assert int(heaps) <= 2 and variable == "None"
