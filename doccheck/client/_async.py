"""The asynchronous client: drives the same operations of :mod:`doccheck.client._core`
over ``httpx.AsyncClient`` (for the pipeline's bounded-concurrency submission)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import SecretStr
from tenacity import AsyncRetrying

from doccheck.client import _core
from doccheck.client._file_reads import read_whole, threaded
from doccheck.client._http import AsyncLeanClient
from doccheck.client._lanes import ConnectionLanes
from doccheck.client._models import Check, CheckList, Upload, Webhook
from doccheck.client._retry import RetryPolicy, first_failure_retryable, tenacity_kwargs
from doccheck.client._submit import Document, Submission, op_submit
from doccheck.errors import DocCheckError, LocalValidationError

if TYPE_CHECKING:
    from doccheck.storage import UserPath

T = TypeVar("T")


class AsyncDocCheckClient:
    """Client of the document-check service (async). ``async with``, or ``await aclose()``.

    Two connection pools: the authenticated one for the service, and a plain one for the
    signed upload addresses (another origin, which must never see the API key). The
    service's pool is :class:`~doccheck.client._lanes.ConnectionLanes` (``max_connections``
    lanes) unless a ``transport`` is given.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        upload_transport: httpx.AsyncBaseTransport | None = None,
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
        if service["transport"] is None:  # the service's requests go through lanes (see .lanes)
            service["transport"] = ConnectionLanes(max_connections, verify=service["verify"])
        self._http = AsyncLeanClient(**service)
        self._storage = AsyncLeanClient(**storage)

    def __repr__(self) -> str:
        return f"AsyncDocCheckClient(base_url={self.base_url!r})"

    async def __aenter__(self) -> AsyncDocCheckClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close both connection pools."""
        await self._http.aclose()
        await self._storage.aclose()

    # --- driving ----------------------------------------------------------------------

    async def _send_once(self, spec: _core.RequestSpec) -> httpx.Response:
        client = self._storage if spec.external else self._http
        if spec.file_bytes is None and spec.file_path is not None and not isinstance(spec.file_path, Path):
            # a remote multipart file not read ahead (``read_ahead``): read here, off the event loop
            spec = dataclasses.replace(spec, file_bytes=await threaded(read_whole, spec.file_path, spec.file_size))
        with ExitStack() as stack:
            request = _core.build_request(client, spec, stack)
            try:
                response = await client.send(request)
            except httpx.TransportError as exc:
                raise _core.network_error(exc, spec.what) from None
        if response.status_code >= 400:
            raise _core.error_from_response(response, self._api_key)
        return response

    async def _send(self, spec: _core.RequestSpec) -> httpx.Response:
        started = time.monotonic()
        try:
            return await self._send_once(spec)
        except Exception as exc:  # noqa: BLE001 - decided by the retry policy, re-raised as is
            if not first_failure_retryable(exc, self.retry, spec.retry):
                raise
            first = exc
        return await self._retry(spec, first, time.monotonic() - started)

    async def _retry(self, spec: _core.RequestSpec, first: Exception, spent: float) -> httpx.Response:
        """Tenacity's loop after a first failure, which it sees as its attempt 1."""
        replay = [first]
        try:
            async for attempt in AsyncRetrying(**tenacity_kwargs(self.retry, spec.retry, spec.what, spent=spent)):
                with attempt:
                    if replay:
                        raise replay.pop()
                    response = await self._send_once(spec)
        except DocCheckError as exc:
            exc.after_retry = exc is not first
            raise
        return response

    async def _run(self, op: _core.Operation[T]) -> T:
        try:
            spec = next(op)
            while True:
                spec = op.send(await self._send(spec))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            op.close()

    # --- endpoints --------------------------------------------------------------------

    async def create_check(
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
        return await self._run(
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

    async def create_upload(
        self, filename: str, *, content_type: str | None = None, size_bytes: int | None = None
    ) -> Upload:
        """``POST /uploads``: a signed address valid 10 minutes (takes a waiting-upload slot)."""
        return await self._run(_core.op_create_upload(filename, content_type, size_bytes))

    async def put_upload(
        self, upload: Upload, path_or_bytes: str | Path | UserPath | bytes, *, size: int | None = None
    ) -> None:
        """PUT the bytes (streamed from disk for a path, from its store in blocks for a remote
        file, whose ``size`` is then the one recorded) to ``upload.upload_url``."""
        await self._run(_core.op_put_upload(upload, path_or_bytes, size))

    async def get_check(self, check_id: str) -> Check:
        """``GET /checks/{id}``."""
        return await self._run(_core.op_get_check(check_id))

    async def list_checks(self, limit: int | None = None, starting_after: str | None = None) -> CheckList:
        """One page of ``GET /checks``, newest first."""
        return await self._run(_core.op_list_checks(limit, starting_after))

    async def iter_checks(self, page_size: int = 100) -> AsyncIterator[Check]:
        """Every check of the account, newest first, fetching pages lazily; stops when the
        cursor does not advance (a service that ignores ``starting_after``)."""
        after: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.list_checks(limit=page_size, starting_after=after)
            fresh = [c for c in page.data if c.id not in seen]
            for check in fresh:
                yield check
            seen.update(c.id for c in fresh)
            if not page.has_more or not fresh:
                return
            after = page.data[-1].id

    async def get_file(self, check_id: str, kind: str) -> bytes:
        """Bytes of a report file: ``similarity_pdf``, ``pdf`` or ``original``."""
        return await self._run(_core.op_get_file(check_id, kind))

    async def download_file(
        self, check_id: str, kind: str, dest: str | Path, *, max_bytes: int | None = None
    ) -> str | None:
        """Stream a report file to ``dest``: written to a temporary file beside it and renamed
        into place, so ``dest`` is either absent or complete. Retried like every read (a retry
        starts the file over). Returns the response's Content-Type (None when absent).

        ``max_bytes`` bounds what is accepted from the service: an oversize body raises
        ``LocalValidationError`` (code ``file_too_large``) and leaves nothing behind.
        """
        spec = _core.file_spec(check_id, kind)
        target = Path(dest)
        async for attempt in AsyncRetrying(**tenacity_kwargs(self.retry, spec.retry, spec.what)):
            with attempt:
                content_type = await self._stream_once(spec, target, max_bytes)
        return content_type

    async def _stream_once(self, spec: _core.RequestSpec, target: Path, max_bytes: int | None) -> str | None:
        tmp = target.with_name(f".{target.name}.part-{os.getpid()}-{id(spec):x}")
        with ExitStack() as stack:
            request = _core.build_request(self._http, spec, stack)
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                raise _core.network_error(exc, spec.what) from None
            try:
                if response.status_code >= 400:
                    await response.aread()
                    raise _core.error_from_response(response, self._api_key)
                written = 0
                try:
                    with open(tmp, "wb") as out:
                        async for chunk in response.aiter_bytes(_core.CHUNK_SIZE):
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
                await response.aclose()
        content_type: str | None = response.headers.get("content-type")
        return content_type

    async def get_webhook(self) -> Webhook:
        """``GET /webhook`` (never carries the secret)."""
        return await self._run(_core.op_get_webhook())

    async def put_webhook(self, url: str) -> Webhook:
        """``PUT /webhook``: set or move the account endpoint; ``secret`` only on creation."""
        return await self._run(_core.op_put_webhook(url))

    async def rotate_webhook(self) -> Webhook:
        """``POST /webhook/rotate``: a new signing secret in ``.secret``."""
        return await self._run(_core.op_rotate_webhook())

    async def delete_webhook(self) -> None:
        """``DELETE /webhook``."""
        await self._run(_core.op_delete_webhook())

    async def submit(
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
        return await self._run(
            op_submit(
                document,
                products=products,
                idempotency_key=idempotency_key,
                name=name,
                metadata=metadata,
                webhook_url=webhook_url,
            )
        )


__all__ = ["AsyncDocCheckClient"]
