"""``storage._joins.joined`` builds a row's file on a store without upath's parsing: it must be the
very path ``base / relative`` gives, in every way a run uses it, or an upath upgrade broke it."""

from __future__ import annotations

import importlib.util

import pytest
from upath import UPath

from doccheck.storage import child, resolve
from doccheck.storage._joins import joined

BASES = ["s3://bucket/term", "s3://bucket", "s3://bucket/term/", "gs://bucket/a/b", "memory://term/x", "memory:///root"]
RELATIVES = ["a.txt", "docs/a b.txt", "docs/é/essay.docx", "x/y/z.pdf"]


@pytest.mark.parametrize("url", BASES)
@pytest.mark.parametrize("relative", RELATIVES)
def test_a_joined_path_is_the_one_upath_joins(url: str, relative: str) -> None:
    base = resolve(url) if not url.startswith("gs://") else UPath(url, token="anon")
    fast, slow = joined(base, relative), base / relative
    assert type(fast) is type(slow)
    for attribute in ("path", "name", "suffix", "stem", "protocol", "storage_options", "parts"):
        assert getattr(fast, attribute) == getattr(slow, attribute), attribute
    assert str(fast) == str(slow) and repr(fast) == repr(slow)
    assert fast == slow and hash(fast) == hash(slow)
    assert fast.parent == slow.parent and str(fast.parent) == str(slow.parent)
    assert (fast / "more").path == (slow / "more").path
    if importlib.util.find_spec({"s3": "s3fs", "gs": "gcsfs"}.get(fast.protocol, "fsspec")):
        assert type(fast.fs) is type(slow.fs) and fast.fs.storage_options == slow.fs.storage_options


def test_a_memory_file_joined_reads_and_writes_as_upaths_does() -> None:
    base = resolve("memory://joins-term")
    (base / "docs").mkdir(parents=True, exist_ok=True)
    (base / "docs" / "a.txt").write_bytes(b"essay")
    fast = child(base, "docs/./a.txt")
    assert fast.read_bytes() == b"essay" and fast.exists() and fast.is_file()


def test_nothing_to_join_is_left_to_upath() -> None:
    base = resolve("memory://joins-other")
    assert joined(base, "") == base / ""
