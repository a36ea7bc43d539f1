"""The running emulator: configuration, clock, state, faults, scheduler and dispatcher.

One :class:`Emulator` is shared by the API app, the storage origin and the control
surface. :meth:`Emulator.run_due` is the single place where due work happens; the
background loop calls it a few times a second, and ``POST /_emulator/clock/advance``
calls it with ``wait=True`` so that everything due (deliveries included) has happened
before the response.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from doccheck.emulator._clock import VirtualClock
from doccheck.emulator._deliveries import Dispatcher
from doccheck.emulator._faults import Faults, FaultSettings
from doccheck.emulator._scheduler import Scheduler
from doccheck.emulator._store import Store

DEFAULT_API_KEY = "sk_test_emulator"


@dataclass
class EmulatorConfig:
    """Everything ``doccheck emulator`` can be told on its command line."""

    host: str = "127.0.0.1"
    port: int = 8790
    storage_port: int = 8791
    api_keys: list[str] = field(default_factory=lambda: [DEFAULT_API_KEY])
    balance_cents: int = 1_000_000
    allow_private_webhooks: bool = False
    offline: bool = False
    seed: int | None = None
    faults: FaultSettings = field(default_factory=FaultSettings)
    upload_url_ttl_s: int = 600
    upload_retention_s: int = 24 * 3600
    idempotency_retention_s: int = 24 * 3600
    delivery_retries: int = 5
    delivery_backoff_s: float = 10.0
    delivery_timeout_s: float = 10.0
    tick_s: float = 0.05
    header_timeout_s: float = 10.0  # request line + headers (doccheck.guards.deadline_protocol)
    body_timeout_s: float = 120.0  # a whole request body (a 50 MB upload on a slow link)
    idle_timeout_s: float = 15.0  # between two body chunks

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/api/v1"

    @property
    def storage_url(self) -> str:
        return f"http://{self.host}:{self.storage_port}"


class Emulator:
    """Shared state of one emulator process."""

    def __init__(self, config: EmulatorConfig) -> None:
        self.config = config
        self.clock = VirtualClock()
        self.store = Store()
        self.faults = Faults(config.faults, config.seed)
        self.scheduler = Scheduler()
        self.dispatcher = Dispatcher(
            config, clock=self.clock, store=self.store, scheduler=self.scheduler, faults=self.faults, spawn=self.spawn
        )
        self.upload_secret = secrets.token_bytes(32)
        #: The profile of an account (``create_app`` points it at its variants): the webhook
        #: sender it plays (:mod:`doccheck.emulator._senders`).
        self.profile_of: Callable[[str], str] = lambda _key: "default"
        self.events_made = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._due_lock = asyncio.Lock()
        for key in config.api_keys:
            self.store.add_account(key, config.balance_cents)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background, tracked so that ``run_due(wait=True)`` can await it."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run_due(self, *, wait: bool = False) -> int:
        """Run every job due now; with ``wait``, also await the deliveries it started (and
        the retries that become due meanwhile) until nothing due is left. Returns the job count."""
        ran = 0
        while True:
            async with self._due_lock:
                jobs = self.scheduler.pop_due(self.clock.now())
                for job in jobs:
                    result = job.run()
                    if asyncio.iscoroutine(result):  # pragma: no cover - jobs spawn their own tasks
                        self.spawn(result)
                ran += len(jobs)
            if not wait:
                return ran
            pending = list(self._tasks)
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            if not jobs and not pending:
                return ran

    async def background(self) -> None:
        """Do due work in real time as well (processing after ``processing_seconds``)."""
        while True:
            try:
                await self.run_due()
            except Exception as exc:  # noqa: BLE001  # pragma: no cover - keep serving, report the bug
                print(f"emulator: background job failed: {type(exc).__name__}: {exc}", flush=True)
            await asyncio.sleep(self.config.tick_s)

    async def advance(self, seconds: float) -> None:
        """Move the clock and make everything that became due happen before returning."""
        self.clock.advance(seconds)
        await self.run_due(wait=True)
