"""Every bound a manifest read enforces, stated once.

Two kinds: what the service accepts (a row over these would be refused at send time, so it is
rejected while validating), and what a reader spends on one untrusted row (so that no line
can exhaust memory, the stack or the CPU). The interface leaves the text, name and metadata
limits unshown; the values here are the emulator's (``doccheck.emulator._inputs`` and
``_service_limits``), repeated so the library does not import the emulator; a unit test fails if
the two copies ever disagree (``tests/unit/emulator/test_emulator_limits.py``).
"""

from __future__ import annotations

from doccheck import domain

MEGABYTE = domain.MEGABYTE

# --- What the service accepts -------------------------------------------------------------
#: Files up to this size are sent as multipart and read whole once (to extract their words).
MULTIPART_MAX_BYTES = domain.MULTIPART_MAX_BYTES
#: Files above this size cannot be sent at all (the upload limit of the interface).
MAX_FILE_BYTES = domain.UPLOAD_MAX_BYTES
#: A JSON request body (a text row: text, products, name, metadata) must fit in this.
JSON_BODY_MAX_BYTES = 8 * MEGABYTE
#: Room kept in the JSON body for what the run adds (webhook_url, key order, braces).
JSON_BODY_RESERVE_BYTES = 4 * 1024
#: The check's ``name``, in characters.
MAX_NAME_CHARS = 256
#: ``metadata`` as ``json.dumps`` writes it (ASCII escapes), in characters.
MAX_METADATA_CHARS = 16 * 1024
#: ``document_id``: it is sent in metadata, stored in the ledger and shown in reports.
MAX_ID_CHARS = 256

# --- What one untrusted row may cost a reader ------------------------------------------------
#: One JSONL line, in bytes (a text row's body must fit in 8 MiB; escapes can double it).
MAX_LINE_BYTES = 2 * JSON_BODY_MAX_BYTES
#: One CSV row (all its cells and line breaks), in characters; longer is a whole-file error.
MAX_ROW_CHARS = 2 * JSON_BODY_MAX_BYTES
#: Nesting of arrays/objects in one JSONL line (a row needs 2: the object and a list).
MAX_DEPTH = 32
#: Characters of one JSON number literal (Python refuses ints over 4,300 digits; we stop far earlier).
MAX_NUMBER_CHARS = 100
