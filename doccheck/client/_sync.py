"""The synchronous client: drives the operations of :mod:`doccheck.client._core` over
``httpx.Client`` (for notebooks and scripts)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import SecretStr
from tenacity import Retrying

from doccheck.client import _core
from doccheck.client._http import LeanClient
from doccheck.client._models import Check, CheckList, Upload, Webhook
from doccheck.client._retry import RetryPolicy, first_failure_retryable, tenacity_kwargs
from doccheck.client._submit import Document, Submission, op_submit
from doccheck.errors import DocCheckError, LocalValidationError

if TYPE_CHECKING:
    from doccheck.storage import UserPath

T = TypeVar("T")


class DocCheckClient:
    """Client of the document-check service (sync). Use as a context manager, or ``close()``.

    Two connection pools: the authenticated one for the service, and a plain one for the
    signed upload addresses (another origin, which must never see the API key).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        upload_transport: httpx.BaseTransport | None = None,
        max_connections: int = 20,
    ) -> None:
        self.base_url, self._api_key = _core.resolve_config(base_url, api_key)
        self.retry = retry or RetryPolicy()
        service, storage = _core.http_options(
            self.base_url,
            self._api_key,
            timeout=timeout,
            transport=transport,
            upload_transport=upload_transport,
            max_connections=max_connections,
        )
        self._http = LeanClient(**service)
        self._storage = LeanClient(**storage)

    def __repr__(self) -> str:
        return f"DocCheckClient(base_url={self.base_url!r})"

    def __enter__(self) -> DocCheckClient:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close both connection pools."""
        self._http.close()
        self._storage.close()

    # --- driving ----------------------------------------------------------------------

    def _send_once(self, spec: _core.RequestSpec) -> httpx.Response:
        client = self._storage if spec.external else self._http
        with ExitStack() as stack:
            request = _core.build_request(client, spec, stack)
            try:
                response = client.send(request)
            except httpx.TransportError as exc:
                raise _core.network_error(exc, spec.what) from None
        if response.status_code >= 400:
            raise _core.error_from_response(response, self._api_key)
        return response

    def _send(self, spec: _core.RequestSpec) -> httpx.Response:
        started = time.monotonic()
        try:
            return self._send_once(spec)
        except Exception as exc:  # noqa: BLE001 - decided by the retry policy, re-raised as is
            if not first_failure_retryable(exc, self.retry, spec.retry):
                raise
            first = exc
        return self._retry(spec, first, time.monotonic() - started)

    def _retry(self, spec: _core.RequestSpec, first: Exception, spent: float) -> httpx.Response:
        """Tenacity's loop after a first failure, which it sees as its attempt 1."""
        replay = [first]
        try:
            for attempt in Retrying(**tenacity_kwargs(self.retry, spec.retry, spec.what, spent=spent)):
                with attempt:
                    if replay:
                        raise replay.pop()
                    response = self._send_once(spec)
        except DocCheckError as exc:
            exc.after_retry = exc is not first
            raise
        return response

    def _run(self, op: _core.Operation[T]) -> T:
        try:
            spec = next(op)
            while True:
                spec = op.send(self._send(spec))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            op.close()

    # --- endpoints --------------------------------------------------------------------

    def create_check(
        self,
        *,
        text: str | None = None,
        file: str | Path | None = None,
        filename: str | None = None,
        upload_id: str | None = None,
        products: Sequence[str] | None = None,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        webhook_url: str | None = None,
        idempotency_key: str | None = None,
    ) -> Check:
        """``POST /checks``; retried on transient errors only when ``idempotency_key`` is given."""
        return self._run(
            _core.op_create_check(
                text=text,
                file=file,
                filename=filename,
                upload_id=upload_id,
                products=products,
                name=name,
                metadata=metadata,
                webhook_url=webhook_url,
                idempotency_key=idempotency_key,
            )
        )

    def create_upload(self, filename: str, *, content_type: str | None = None, size_bytes: int | None = None) -> Upload:
        """``POST /uploads``: a signed address valid 10 minutes (takes a waiting-upload slot)."""
        return self._run(_core.op_create_upload(filename, content_type, size_bytes))

    def put_upload(
        self, upload: Upload, path_or_bytes: str | Path | UserPath | bytes, *, size: int | None = None
    ) -> None:
        """PUT the bytes (streamed from disk for a path, from its store in blocks for a remote
        file, whose ``size`` is then the one recorded) to ``upload.upload_url``."""
        self._run(_core.op_put_upload(upload, path_or_bytes, size))

    def get_check(self, check_id: str) -> Check:
        """``GET /checks/{id}``."""
        return self._run(_core.op_get_check(check_id))

    def list_checks(self, limit: int | None = None, starting_after: str | None = None) -> CheckList:
        """One page of ``GET /checks``, newest first."""
        return self._run(_core.op_list_checks(limit, starting_after))

    def iter_checks(self, page_size: int = 100) -> Iterator[Check]:
        """Every check of the account, newest first, fetching pages lazily; stops when the
        cursor does not advance (a service that ignores ``starting_after``)."""
        after: str | None = None
        seen: set[str] = set()
        while True:
            page = self.list_checks(limit=page_size, starting_after=after)
            fresh = [c for c in page.data if c.id not in seen]
            yield from fresh
            seen.update(c.id for c in fresh)
            if not page.has_more or not fresh:
                return
            after = page.data[-1].id

    def get_file(self, check_id: str, kind: str) -> bytes:
        """Bytes of a report file: ``similarity_pdf``, ``pdf`` or ``original``."""
        return self._run(_core.op_get_file(check_id, kind))

    def download_file(self, check_id: str, kind: str, dest: str | Path, *, max_bytes: int | None = None) -> str | None:
        """Stream a report file to ``dest`` (sync twin of ``AsyncDocCheckClient.download_file``):
        a temporary file beside it renamed into place, so ``dest`` is either absent or complete.
        Retried like every read. Returns the response's Content-Type (None when absent);
        over ``max_bytes`` raises ``LocalValidationError`` (``file_too_large``), leaving nothing.
        """
        spec = _core.file_spec(check_id, kind)
        target = Path(dest)
        for attempt in Retrying(**tenacity_kwargs(self.retry, spec.retry, spec.what)):
            with attempt:
                content_type = self._stream_once(spec, target, max_bytes)
        return content_type

    def _stream_once(self, spec: _core.RequestSpec, target: Path, max_bytes: int | None) -> str | None:
        tmp = target.with_name(f".{target.name}.part-{os.getpid()}-{id(spec):x}")
        with ExitStack() as stack:
            request = _core.build_request(self._http, spec, stack)
            try:
                response = self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                raise _core.network_error(exc, spec.what) from None
            try:
                if response.status_code >= 400:
                    response.read()
                    raise _core.error_from_response(response, self._api_key)
                written = 0
                try:
                    with open(tmp, "wb") as out:
                        for chunk in response.iter_bytes(_core.CHUNK_SIZE):
                            written += len(chunk)
                            if max_bytes is not None and written > max_bytes:
                                raise LocalValidationError(
                                    f"{spec.what}: file larger than {max_bytes} bytes", code="file_too_large"
                                )
                            out.write(chunk)
                    os.replace(tmp, target)
                except httpx.TransportError as exc:
                    raise _core.network_error(exc, spec.what) from None
                finally:
                    tmp.unlink(missing_ok=True)
            finally:
                response.close()
        content_type: str | None = response.headers.get("content-type")
        return content_type

    def get_webhook(self) -> Webhook:
        """``GET /webhook`` (never carries the secret)."""
        return self._run(_core.op_get_webhook())

    def put_webhook(self, url: str) -> Webhook:
        """``PUT /webhook``: set or move the account endpoint; ``secret`` only on creation."""
        return self._run(_core.op_put_webhook(url))

    def rotate_webhook(self) -> Webhook:
        """``POST /webhook/rotate``: a new signing secret in ``.secret``."""
        return self._run(_core.op_rotate_webhook())

    def delete_webhook(self) -> None:
        """``DELETE /webhook``."""
        self._run(_core.op_delete_webhook())

    def submit(
        self,
        document: Document,
        *,
        products: Sequence[str] | None = None,
        idempotency_key: str | None = None,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        webhook_url: str | None = None,
    ) -> Submission:
        """Send ``document`` the right way (text | multipart | upload); see :mod:`.submit`."""
        return self._run(
            op_submit(
                document,
                products=products,
                idempotency_key=idempotency_key,
                name=name,
                metadata=metadata,
                webhook_url=webhook_url,
            )
        )


__all__ = ["DocCheckClient"]
