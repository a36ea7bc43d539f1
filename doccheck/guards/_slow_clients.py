"""Read deadlines for our uvicorn servers (the emulator, its storage origin, the receiver).

uvicorn bounds the SIZE of request headers (h11's incomplete-event limit) but not the
TIME a client may take to send them or the body: a client dribbling one byte a second
holds a connection, and the task reading its body, for ever (slowloris). Two bounds:

* :func:`deadline_protocol` is uvicorn's h11 protocol plus a header deadline: a
  connection that has not completed its request line and headers within
  ``header_timeout`` seconds of opening (or of the previous response) is closed. It also
  closes a connection still sending a body nobody reads after the response went out.
* :class:`BodyDeadline` is ASGI middleware bounding the body: each ``receive()`` waits at
  most ``idle_timeout`` seconds and the whole body ``body_timeout``; past either, the app
  sees ``http.disconnect`` (what it already handles for a client that went away) and the
  client gets ``408 request_timeout`` with ``Connection: close`` instead of the app's answer.

A pure helper (uvicorn and h11 only): the emulator may import it.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 60.0
DEFAULT_IDLE_TIMEOUT_S = 10.0


def deadline_protocol(header_timeout: float = DEFAULT_HEADER_TIMEOUT_S) -> type[H11Protocol]:
    """An ``H11Protocol`` subclass for ``uvicorn.Config(http=...)`` with a header deadline."""

    class HeaderDeadlineProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_header_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_header_deadline()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_deadline()
            super().connection_lost(exc)

        def _arm_header_deadline(self) -> None:
            self._disarm_header_deadline()
            self._header_timer = self.loop.call_later(header_timeout, self._header_deadline_passed)

        def _disarm_header_deadline(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_deadline_passed(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            serving = self.cycle is not None and not self.cycle.response_complete
            if serving:  # headers arrived; the body, if any, is BodyDeadline's business
                return
            if self.conn.our_state not in (h11.ERROR, h11.CLOSED):
                try:
                    self.conn.send(h11.ConnectionClosed())
                except h11.LocalProtocolError:
                    pass
            self.transport.close()

    return HeaderDeadlineProtocol


_TIMEOUT_BODY = json.dumps(
    {"error": {"code": "request_timeout", "message": "the request body was not received in time"}}
).encode()


class BodyDeadline:
    """ASGI middleware: bound the time to receive a request body (see module docstring)."""

    def __init__(
        self,
        app: Any,
        body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    ) -> None:
        self.app = app
        self.body_timeout = body_timeout
        self.idle_timeout = idle_timeout

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = time.monotonic() + self.body_timeout
        timed_out = False
        replaced = False
        body_done = False
        started = False

        async def bounded_receive() -> dict[str, Any]:
            nonlocal timed_out, body_done
            if timed_out:
                return {"type": "http.disconnect"}
            if body_done or started:  # only a disconnect can matter now: no deadline
                return await receive()  # type: ignore[no-any-return]
            wait = min(self.idle_timeout, deadline - time.monotonic())
            try:
                message: dict[str, Any] = await asyncio.wait_for(receive(), timeout=max(wait, 0.0))
            except TimeoutError:
                timed_out = True
                return {"type": "http.disconnect"}
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_done = True
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            nonlocal replaced, started
            if not timed_out:
                started = True
                await send(message)
                return
            if replaced:
                return
            replaced = True
            await send(
                {
                    "type": "http.response.start",
                    "status": 408,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(_TIMEOUT_BODY)).encode()),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": _TIMEOUT_BODY})

        await self.app(scope, bounded_receive, guarded_send)
        if timed_out and not replaced:  # the app sent nothing: still answer, then close
            await guarded_send({"type": "http.response.start"})


__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_IDLE_TIMEOUT_S",
    "BodyDeadline",
    "deadline_protocol",
]
