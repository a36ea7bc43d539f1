"""What the matcher keeps per document of the campaign: compact columns, ~60 bytes a document.

Why: the matcher compares every document of a campaign (this run's and earlier runs') at
once, so what it holds per document bounds a term's memory (issue 10). Python objects per
document (a tuple, two numpy arrays, a dict entry: ~3.7 KB) are replaced by

* ``array`` / ``bytearray`` columns: row id, words, shingle count, run (a code), this-run flag,
  and a 16-byte BLAKE2b digest of the content hash (identical documents are equal digests);
* on disk, in temporary files: the document ids (read back for candidate pairs only), the LSH
  band keys, ``bands`` × uint32 (:func:`doccheck.matching._minhash.band_keys`, computed per
  block of signatures, which are then dropped, and read back one band at a time), and the
  sampled shingles (a :class:`~doccheck.matching._containment.SampleSpill`).

:class:`DigestSet` is the matcher's set of this run's documents in 16 bytes each.
"""

from __future__ import annotations

import hashlib
import itertools
import tempfile
from array import array
from collections.abc import Iterable, Iterator
from typing import IO

import numpy as np

from doccheck.matching import _minhash as minhash
from doccheck.matching._containment import SampleSpill

__all__ = ["CampaignColumns", "DigestSet"]

#: Documents whose signatures are turned into band keys at once (~0.5 MB of signatures).
BLOCK = 1024


class CampaignColumns:
    """The campaign's documents as the matcher needs them, appended one stored row at a time."""

    def __init__(self, num_perm: int, bands: int, rows: int) -> None:
        self.num_perm, self.bands, self.rows = num_perm, bands, rows
        self.row_ids = array("q")
        self._ids: IO[bytes] = tempfile.TemporaryFile(prefix="doccheck-ids-")  # noqa: SIM115 - as long as the columns
        self._id_at = array("q", [0])  # document i's id spans _id_at[i] .. _id_at[i + 1] in _ids
        self._keys: IO[bytes] = tempfile.TemporaryFile(prefix="doccheck-bands-")  # noqa: SIM115
        self._key_blocks: list[int] = []  # documents per block of band keys (band-major in _keys)
        self.digests = bytearray()
        self.run_codes = array("i")
        self.run_names: list[str] = []
        self._run_index: dict[str, int] = {}
        self.words = array("i")  # 4 bytes: a document has at most a few million words
        self.sizes = array("i")
        self.current = bytearray()
        self.samples = SampleSpill()
        self._signatures: list[bytes] = []
        self._sample_data: list[bytes] = []

    def __len__(self) -> int:
        return len(self.row_ids)

    def add(
        self,
        row_id: int,
        document_id: str,
        content_hash: str,
        run_id: str,
        words: int,
        size: int,
        signature: bytes,
        sample: bytes,
        current: bool,
    ) -> None:
        """One stored row (as a store yields it); ``current``: the document belongs to this run."""
        if len(signature) != 4 * self.num_perm:
            raise ValueError(f"stored signature of {document_id!r} has {len(signature)} bytes, not {4 * self.num_perm}")
        if len(sample) % 4:
            raise ValueError(f"stored sample of {document_id!r} has {len(sample)} bytes, not a multiple of 4")
        self.row_ids.append(row_id)
        encoded = document_id.encode("utf-8", "surrogatepass")
        self._ids.write(encoded)
        self._id_at.append(self._id_at[-1] + len(encoded))
        self.digests += hashlib.blake2b(content_hash.encode("utf-8"), digest_size=16).digest()
        code = self._run_index.get(run_id)
        if code is None:
            code = self._run_index[run_id] = len(self.run_names)
            self.run_names.append(run_id)
        self.run_codes.append(code)
        self.words.append(words)
        self.sizes.append(size)
        self.current.append(1 if current else 0)
        self._signatures.append(signature)
        self._sample_data.append(sample)
        if len(self._signatures) >= BLOCK:
            self._flush()

    def _flush(self) -> None:
        if not self._signatures:
            return
        first = len(self) - len(self._signatures)
        matrix = np.frombuffer(b"".join(self._signatures), dtype="<u4").reshape(-1, self.num_perm)
        self._keys.write(np.ascontiguousarray(minhash.band_keys(matrix, self.bands, self.rows).T).tobytes())
        self._key_blocks.append(len(matrix))
        lengths = [len(s) // 4 for s in self._sample_data]
        values = np.frombuffer(b"".join(self._sample_data), dtype="<u4").astype(np.uint32)
        if len(values):
            owners = np.repeat(np.arange(first, first + len(lengths), dtype=np.uint32), lengths)
            self.samples.add(values, owners)
        self._signatures, self._sample_data = [], []

    def finish(self) -> np.ndarray:
        """This-run flags ``(n,)`` bool, once every row is added."""
        self._flush()
        self._ids.flush()
        self._keys.flush()
        return np.frombuffer(bytes(self.current), dtype=np.uint8).astype(bool)

    def band_columns(self) -> Iterator[np.ndarray]:
        """The band keys of every document, one band (``(n,)`` uint32) at a time."""
        for band in range(self.bands):
            parts: list[bytes] = []
            at = 0
            for size in self._key_blocks:
                self._keys.seek(at + band * size * 4)
                parts.append(self._keys.read(size * 4))
                at += self.bands * size * 4
            yield np.frombuffer(b"".join(parts), dtype="<u4").astype(np.uint32)

    def document_id(self, i: int) -> str:
        """Row ``i``'s document id (read back from disk)."""
        self._ids.seek(self._id_at[i])
        return self._ids.read(self._id_at[i + 1] - self._id_at[i]).decode("utf-8", "surrogatepass")

    def identical_groups(self) -> list[list[int]]:
        """Rows sharing a content hash (groups of two or more, rows ascending)."""
        n = len(self)
        if n < 2:
            return []
        halves = np.frombuffer(bytes(self.digests), dtype="<u8").reshape(n, 2)
        order = np.lexsort((np.arange(n), halves[:, 1], halves[:, 0]))
        ordered = halves[order]
        new = np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)]
        starts = np.flatnonzero(new)
        sizes = np.diff(np.r_[starts, n])
        return [
            order[s : s + k].tolist()
            for s, k in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True)
        ]

    def run_of(self, i: int) -> str:
        """The run that first stored row ``i``."""
        return self.run_names[self.run_codes[i]]

    def close(self) -> None:
        """Delete the temporary files."""
        self.samples.close()
        self._ids.close()
        self._keys.close()


class DigestSet:
    """A set of 16-byte digests in 16 bytes each: two sorted uint64 columns (first and second
    half), plus a small set merged into them every ``merge_every`` additions (a Python set of
    ints costs ~90 bytes an entry)."""

    def __init__(self, merge_every: int = 8192) -> None:
        self._hi = np.empty(0, dtype=np.uint64)
        self._lo = np.empty(0, dtype=np.uint64)
        self._recent: set[bytes] = set()
        self._merge_every = merge_every

    def __len__(self) -> int:
        return len(self._hi) + len(self._recent)

    def add(self, digest: bytes) -> None:
        if digest in self:
            return
        self.add_absent(digest)

    def add_absent(self, digest: bytes) -> None:
        """Add ``digest``, which the caller has just found absent (no second search)."""
        self._recent.add(digest)
        if len(self._recent) >= self._merge_every:
            new = np.frombuffer(b"".join(self._recent), dtype="<u8").reshape(-1, 2)
            hi = np.concatenate([self._hi, new[:, 0]])
            lo = np.concatenate([self._lo, new[:, 1]])
            order = np.lexsort((lo, hi))
            self._hi, self._lo, self._recent = hi[order], lo[order], set()

    def update(self, digests: Iterable[bytes], chunk: int = 4096) -> None:
        """Add every digest (looked up a chunk at a time, see :meth:`contains_many`)."""
        it = iter(digests)
        while part := list(itertools.islice(it, chunk)):
            added: set[bytes] = set()
            for digest, present in zip(part, self.contains_many(part), strict=True):
                if not present and digest not in added:
                    added.add(digest)
                    self.add_absent(digest)

    def contains_many(self, digests: list[bytes]) -> list[bool]:
        """``[d in self for d in digests]`` in a few array operations: searching the sorted
        columns one digest at a time cost ~4 µs of numpy overhead each, the whole of cohort
        matching's time in a rerun (every document is known: three searches a document)."""
        if not digests:
            return []
        if not len(self._hi):
            return [d in self._recent for d in digests]
        query = np.frombuffer(b"".join(digests), dtype="<u8").reshape(-1, 2)
        left = self._hi.searchsorted(query[:, 0], side="left")
        right = self._hi.searchsorted(query[:, 0], side="right")
        at = np.minimum(left, len(self._lo) - 1)
        found = (right - left == 1) & (self._lo[at] == query[:, 1])
        out = found.tolist()
        for i in np.flatnonzero(right - left > 1).tolist():  # same first half: astronomically rare
            out[i] = digests[i] in self
        recent = self._recent
        return [hit or (d in recent) for hit, d in zip(out, digests, strict=True)]

    def __contains__(self, digest: object) -> bool:
        if not isinstance(digest, bytes) or len(digest) != 16:
            return False
        if digest in self._recent:
            return True
        if not len(self._hi):
            return False
        hi = np.uint64(int.from_bytes(digest[:8], "little"))
        i = int(self._hi.searchsorted(hi))
        lo = int.from_bytes(digest[8:], "little")
        while i < len(self._hi) and self._hi[i] == hi:
            if int(self._lo[i]) == lo:
                return True
            i += 1
        return False
