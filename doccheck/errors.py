"""Every error the doccheck library raises, in one module under one root.

Why one module: a newcomer finds every failure the library can report, and its place in
the tree, on one page; no two errors share a name; a caller can catch ``DocCheckBaseError``
for anything doccheck says is wrong and let everything else (a bug, a KeyboardInterrupt)
through. Each error keeps the standard base it always had (``ValueError``, ``OSError``,
``RuntimeError``), so ``except ValueError`` clauses written before this root existed keep
working. This module imports nothing of the project (it is the bottom layer).

Each package's ``__init__`` re-exports the errors its callers meet (``from doccheck.client
import RateLimitError``); inside the library, code imports them from here. A new error is a
class here, added to the tree below; the package that raises it re-exports it.

The tree (the package that raises each error on the right)::

    DocCheckBaseError
    ├── SettingsError (ValueError) ................ doccheck.config
    ├── ConfigurationError (ValueError) ........... doccheck.client
    ├── DocCheckError ............................. doccheck.client: the service's answers
    │   ├── AuthenticationError ................... 401
    │   ├── PermissionDeniedError ................. 403
    │   │   └── UploadExpiredError ................ 403 upload_url_expired
    │   ├── ValidationError ....................... 400/413/415/422
    │   ├── NotFoundError ......................... 404
    │   ├── ConflictError ......................... 409
    │   ├── PaymentRequiredError .................. 402
    │   ├── RateLimitError ........................ 429
    │   ├── ServerError ........................... 5xx
    │   ├── NetworkError .......................... no answer
    │   └── LocalValidationError (ValueError) ..... refused before any request
    │       ├── DocumentTooLarge
    │       ├── UnsupportedDocument
    │       ├── EmptyDocument
    │       └── DocumentNotFound
    ├── ExtractionError (ValueError) .............. doccheck.extract
    │   ├── UnsupportedFileType
    │   ├── ExtractionLimitExceeded
    │   ├── ExtractionStopped
    │   ├── ExtractionCrashed
    │   └── NotMachineReadable
    │       ├── ImageWithoutText
    │       ├── ImageOnlyPdf
    │       └── PasswordProtected
    ├── JsonRejected (ValueError) ................. doccheck.guards
    ├── ManifestError (ValueError) ................ doccheck.sources.manifest
    ├── CellProblem ............................... doccheck.sources.manifest
    ├── RosterError (ValueError) .................. doccheck.sources.lms
    ├── UnsafeExport (ValueError) ................. doccheck.sources.lms
    ├── SignatureError ............................ doccheck.webhooks
    │   ├── MissingSignature
    │   ├── MalformedSignature
    │   ├── InvalidSignature
    │   └── StaleSignature
    ├── EventParseError (ValueError) .............. doccheck.webhooks
    ├── SecretFileError ........................... doccheck.webhooks
    │   ├── InsecureSecretFile
    │   └── NoSigningSecret
    ├── ReportError (ValueError) .................. doccheck.outputs
    ├── FolderError (OSError) ..................... doccheck.outputs
    ├── CatalogError (OSError) .................... doccheck.outputs
    ├── StorageError (OSError) .................... doccheck.storage
    │   └── OutsideLocation (ValueError) .......... a row's path leaves its manifest's location
    ├── DispositionError (ValueError) ............. doccheck.ledger
    ├── PurgeError (ValueError) ................... doccheck.ledger
    ├── FatalSubmitError (RuntimeError) ........... doccheck.pipeline: the batch stops
    ├── ClaimLost (RuntimeError) .................. doccheck.pipeline
    ├── RecordingStopped (RuntimeError) ........... doccheck.pipeline
    ├── ShardConfigError (ValueError) ............. doccheck.pipeline
    ├── DeliveryTooLarge .......................... doccheck.receiver
    ├── ServiceError (RuntimeError) ............... doccheck.commands
    └── ShardsFailed (RuntimeError) ............... flows (the sharded run)

Not here, on purpose:

- The emulator's errors (``doccheck.emulator``): the emulator stands for the remote service,
  and its errors are HTTP answers it sends, never exceptions a doccheck caller catches;
  keeping them in the emulator keeps it a service that could be split off without the
  library's tree (and the import contracts say the emulator needs nothing of the client).
- Private control-flow signals (a leading underscore, e.g. the extraction pool's
  ``_Vanished``, the CSV reader's ``_RowTooLarge``, the run command's ``_Terminated``):
  raised and caught inside one module, never seen by a caller.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "CatalogError",
    "CellProblem",
    "ClaimLost",
    "ConfigurationError",
    "ConflictError",
    "DeliveryTooLarge",
    "DispositionError",
    "DocCheckBaseError",
    "DocCheckError",
    "DocumentNotFound",
    "DocumentTooLarge",
    "EmptyDocument",
    "EventParseError",
    "ExtractionCrashed",
    "ExtractionError",
    "ExtractionLimitExceeded",
    "ExtractionStopped",
    "FatalSubmitError",
    "FolderError",
    "ImageOnlyPdf",
    "ImageWithoutText",
    "InsecureSecretFile",
    "InvalidSignature",
    "JsonRejected",
    "LocalValidationError",
    "MalformedSignature",
    "ManifestError",
    "MissingSignature",
    "NetworkError",
    "NoSigningSecret",
    "NotFoundError",
    "NotMachineReadable",
    "OutsideLocation",
    "PasswordProtected",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "PurgeError",
    "RateLimitError",
    "RecordingStopped",
    "ReportError",
    "RosterError",
    "SecretFileError",
    "ServerError",
    "ServiceError",
    "SettingsError",
    "ShardConfigError",
    "ShardsFailed",
    "SignatureError",
    "StaleSignature",
    "StorageError",
    "UnsafeExport",
    "UnsupportedDocument",
    "UnsupportedFileType",
    "UploadExpiredError",
    "ValidationError",
]


class DocCheckBaseError(Exception):
    """Base class of every error raised by the doccheck library (client, manifest, planning,
    ledger, pipeline, reports, webhooks, receiver, commands)."""


# --- settings (doccheck.config) ---------------------------------------------------------


class SettingsError(DocCheckBaseError, ValueError):
    """Settings the program cannot use: one line per variable, naming it, its value (never a
    secret's), where it came from and what is expected."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


# --- the service client (doccheck.client) -----------------------------------------------
#
# Callers branch on the class (``except ConflictError``) or on ``.code`` (the service's
# machine-readable code), never on message text. Every message is built from the service's
# error envelope and the request id, never from request data, so the API key cannot leak
# into a log line through an exception.


class ConfigurationError(DocCheckBaseError, ValueError):
    """The client was set up wrongly (base URL without ``/api/v1``, no API key...)."""


class DocCheckError(DocCheckBaseError):
    """An error answered by (or on the way to) the service.

    ``status_code`` is None for errors that never got an HTTP answer (network).
    ``after_retry`` is True when the client had sent the same request before (its own
    retries): an earlier try may have reached the service, so a refusal of a create may
    be about a check that try made (a service refusing key reuse), not about the document.
    """

    after_retry: bool = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.code = code
        self.message = message
        self.request_id = request_id
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.status_code is not None:
            parts.append(str(self.status_code))
        if self.code:
            parts.append(self.code)
        head = " ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.request_id:
            text += f" (request id {self.request_id})"
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status_code={self.status_code!r}, code={self.code!r}, "
            f"message={self.message!r}, request_id={self.request_id!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructors defeat Exception's default pickling; Prefect and
        # multiprocessing pickle exceptions that cross a process or are persisted.
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


def _rebuild(cls: type[DocCheckError], message: str, state: dict[str, object]) -> DocCheckError:
    error = cls.__new__(cls)
    Exception.__init__(error, "")
    error.__dict__.update(state)
    error.message = message
    Exception.__init__(error, error._render())
    return error


class AuthenticationError(DocCheckError):
    """401: missing or unknown API key."""


class PermissionDeniedError(DocCheckError):
    """403: refused, e.g. ``upload_url_expired`` from the storage origin."""


class UploadExpiredError(PermissionDeniedError):
    """403 ``upload_url_expired``: the signed upload address is older than 10 minutes."""


class ValidationError(DocCheckError):
    """400/413/415/422: the service rejected the input (``invalid_input``, ``file_too_large``...)."""


class NotFoundError(DocCheckError):
    """404: unknown check (``not_found``) or upload (``upload_not_found``)."""


class ConflictError(DocCheckError):
    """409: ``upload_consumed``, ``upload_incomplete``, ``too_many_uploads``,
    ``webhook_not_configured``, ``idempotency_conflict``."""


class PaymentRequiredError(DocCheckError):
    """402 ``insufficient_balance``."""


class RateLimitError(DocCheckError):
    """429 ``rate_limited``; ``retry_after`` is the server's hint in seconds (or None)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)  # type: ignore[arg-type]


class ServerError(DocCheckError):
    """5xx: the service failed; retried automatically where that is safe."""


class NetworkError(DocCheckError):
    """No HTTP answer: connection refused/reset, DNS, timeout.

    ``connect`` is True when the request provably never reached the server (connect phase),
    which makes even a non-idempotent POST safe to send again.
    """

    def __init__(self, message: str, *, connect: bool = False, **kw: object) -> None:
        self.connect = connect
        super().__init__(message, **kw)  # type: ignore[arg-type]


class LocalValidationError(DocCheckError, ValueError):
    """A document refused locally, before any request (so it costs nothing)."""


class DocumentTooLarge(LocalValidationError):
    """The file is larger than the 50 MB upload limit."""


class UnsupportedDocument(LocalValidationError):
    """The file's extension is not a supported document type."""


class EmptyDocument(LocalValidationError):
    """Empty text or a zero-byte file."""


class DocumentNotFound(LocalValidationError):
    """The file does not exist or is not a regular file."""


# --- extraction (doccheck.extract) ------------------------------------------------------
#
# Every failure of ``doccheck.extract.extract_text`` is an ExtractionError with a message fit
# for a report (it names the part and the reason, never a library's internal exception
# text), so manifest validation rejects one row and the emulator answers one 4xx.


class ExtractionError(DocCheckBaseError, ValueError):
    """The file claims a supported type but its bytes cannot be read as that type."""


class UnsupportedFileType(ExtractionError):
    """The file's extension is not one of :data:`doccheck.extract.SUPPORTED_TYPES`."""


class ExtractionLimitExceeded(ExtractionError):
    """The document would take more than a limit of :class:`doccheck.extract.ExtractionLimits` to read.

    Raised for an inflated size, a part count, a PDF page/object/content size, or when the
    worker process was stopped for its wall time, CPU time or memory. The document may be
    well-formed; it is refused because reading it would cost more than any submission should.
    """


class ExtractionStopped(ExtractionError):
    """The extraction was cut short because its process is shutting down (not the document's fault).

    A server answers this with a retryable 503, never a rejection of the document.
    """


class ExtractionCrashed(ExtractionError):
    """The worker process died of a signal no limit explains (native code crashed: a segfault
    in PDFium). A PDF is read again with pypdf; any other file fails with this."""


class NotMachineReadable(ExtractionError):
    """The file is a document doccheck recognises, but it holds no text a machine can read.

    Not the student's fault and not a limit: the reason is said in words a person acts on
    (ask for a typed copy, review by hand), never shown as a score of 0. ``reason`` is a
    stable code for counting documents by reason in summaries.
    """

    reason = "not_machine_readable"


class ImageWithoutText(NotMachineReadable):
    """A photo or scan (PNG, JPEG, HEIC...): no text layer at all."""

    reason = "image_without_text"


class ImageOnlyPdf(NotMachineReadable):
    """A PDF whose pages are images (a scan) without a text layer."""

    reason = "image_only_pdf"


class PasswordProtected(NotMachineReadable):
    """A PDF or Office file that needs a password to open."""

    reason = "password_protected"


# --- guards of the HTTP servers (doccheck.guards) ---------------------------------------


class JsonRejected(DocCheckBaseError, ValueError):
    """The text is not acceptable JSON; the message says why, without echoing it."""


# --- sources (doccheck.sources) ---------------------------------------------------------


class ManifestError(DocCheckBaseError, ValueError):
    """The manifest as a whole cannot be used (unreadable, no ``document_id`` column, bad config).

    The message names the file and the reason; it never carries document contents.
    """


class CellProblem(DocCheckBaseError):
    """One cell of a manifest row cannot be used; the row is rejected naming ``field``."""

    def __init__(self, field: str, code: str, why: str) -> None:
        super().__init__(why)
        self.field, self.code, self.why = field, code, why


class RosterError(DocCheckBaseError, ValueError):
    """The roster cannot be used (too large, not UTF-8 CSV, no id column this LMS writes)."""


class UnsafeExport(DocCheckBaseError, ValueError):
    """The LMS export as a whole cannot be read within its bounds (too many entries, too slow)."""


# --- webhooks (doccheck.webhooks) -------------------------------------------------------


class SignatureError(DocCheckBaseError):
    """A delivery that must not be acted on. ``http_status`` is what a receiver answers."""

    http_status = 401


class MissingSignature(SignatureError):
    """No ``Service-Signature`` header (or an empty one)."""

    http_status = 400


class MalformedSignature(SignatureError):
    """The header is not ``t=<digits>,v1=<64 hex>``."""

    http_status = 400


class InvalidSignature(SignatureError):
    """Well-formed, but no ``v1`` matches the body under any configured secret."""

    http_status = 401


class StaleSignature(SignatureError):
    """Authentic, but ``t`` is further than the tolerance from now (past or future)."""

    http_status = 401


class EventParseError(DocCheckBaseError, ValueError):
    """A verified body that is not a valid event payload."""


class SecretFileError(DocCheckBaseError):
    """The secret file cannot be used; the message names the file and the reason, never a secret."""


class InsecureSecretFile(SecretFileError):
    """The file is readable or writable by others, or owned by someone else."""


class NoSigningSecret(SecretFileError):
    """No source of signing secrets is configured, or the one configured cannot be used."""


# --- outputs (doccheck.outputs) ---------------------------------------------------------


class ReportError(DocCheckBaseError, ValueError):
    """A report cannot be built: the message names the table, the row and the column."""


class FolderError(DocCheckBaseError, OSError):
    """A report folder could not be put in place (e.g. too many concurrent writers)."""


class CatalogError(DocCheckBaseError, OSError):
    """The catalog cannot be opened (none written yet) or built."""


# --- the ledger (doccheck.ledger) -------------------------------------------------------


class StorageError(DocCheckBaseError, OSError):
    """A location (a path or a URL) that cannot be used or read: an unknown scheme, a store whose
    extra is not installed, a credential written into a URL, a read the store refused. The
    message names the location as :func:`doccheck.storage.display` shows it: never a secret."""


class OutsideLocation(StorageError, ValueError):
    """A manifest row's path that leaves the manifest's folder or prefix (``..``, an absolute path,
    another bucket or scheme): the row is refused and nothing is fetched for it."""


class DispositionError(DocCheckBaseError, ValueError):
    """A reviewer's decision that cannot be recorded (an unknown status, or a document the
    campaign never had)."""


class PurgeError(DocCheckBaseError, ValueError):
    """A purge asked for nothing, or for something that cannot be found."""


# --- the pipeline (doccheck.pipeline) ---------------------------------------------------


class FatalSubmitError(DocCheckBaseError, RuntimeError):
    """A configuration problem that would fail every document (401): the batch stops."""


class ClaimLost(DocCheckBaseError, RuntimeError):
    """This submitter's lease on a key expired (it stalled): it must not send the key."""


class RecordingStopped(DocCheckBaseError, RuntimeError):
    """The submission failed for good, so the recording stops (raised in the recording thread)."""


class ShardConfigError(DocCheckBaseError, ValueError):
    """A shard setting that cannot work (a bad count, or a ledger workers cannot share)."""


# --- the webhook receiver (doccheck.receiver) -------------------------------------------


class DeliveryTooLarge(DocCheckBaseError):
    """A webhook delivery's body is over the receiver's limit (raised while streaming, before
    it is all read)."""


# --- commands and flows -----------------------------------------------------------------


class ServiceError(DocCheckBaseError, RuntimeError):
    """A helper process did not start or answer in time (message names it and its log)."""


class ShardsFailed(DocCheckBaseError, RuntimeError):
    """Some shards of a sharded run failed after all their retries; their documents are
    unsent in the ledger."""
