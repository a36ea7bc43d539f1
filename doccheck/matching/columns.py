"""What the matcher keeps per document of the campaign: compact columns, ~250 bytes a document.

Why: the matcher compares every document of a campaign (this run's and earlier runs') at
once, so what it holds per document bounds a term's memory (issue 10). Python objects per
document (a tuple, two numpy arrays, a dict entry: ~3.7 KB) are replaced by

* ``array`` / ``bytearray`` columns: row id, words, shingle count, run (a code), this-run flag,
  and a 16-byte BLAKE2b digest of the content hash (identical documents are equal digests);
* the document id (a Python string: it names the pair in the report);
* the LSH band keys, ``bands`` × uint32 (:func:`doccheck.matching.minhash.band_keys`),
  computed per block of signatures, which are then dropped;
* the sampled shingles go to a :class:`~doccheck.matching.containment.SampleSpill` on disk.
"""

from __future__ import annotations

import hashlib
from array import array

import numpy as np

from doccheck.matching import minhash
from doccheck.matching.containment import SampleSpill

__all__ = ["CampaignColumns"]

#: Documents whose signatures are turned into band keys at once (~0.5 MB of signatures).
BLOCK = 1024


class CampaignColumns:
    """The campaign's documents as the matcher needs them, appended one stored row at a time."""

    def __init__(self, num_perm: int, bands: int, rows: int) -> None:
        self.num_perm, self.bands, self.rows = num_perm, bands, rows
        self.row_ids = array("q")
        self.document_ids: list[str] = []
        self.digests = bytearray()
        self.run_codes = array("i")
        self.run_names: list[str] = []
        self._run_index: dict[str, int] = {}
        self.words = array("q")
        self.sizes = array("q")
        self.current = bytearray()
        self.samples = SampleSpill()
        self._key_blocks: list[np.ndarray] = []
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
        self.document_ids.append(document_id)
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
        self._key_blocks.append(minhash.band_keys(matrix, self.bands, self.rows))
        lengths = [len(s) // 4 for s in self._sample_data]
        values = np.frombuffer(b"".join(self._sample_data), dtype="<u4").astype(np.uint32)
        if len(values):
            owners = np.repeat(np.arange(first, first + len(lengths), dtype=np.uint32), lengths)
            self.samples.add(values, owners)
        self._signatures, self._sample_data = [], []

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(band keys ``(n, bands)`` uint32, this-run flags ``(n,)`` bool) once every row is added."""
        self._flush()
        keys = np.concatenate(self._key_blocks) if self._key_blocks else np.empty((0, self.bands), dtype=np.uint32)
        self._key_blocks = []
        return keys, np.frombuffer(bytes(self.current), dtype=np.uint8).astype(bool)

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
        """Delete the sample files."""
        self.samples.close()
