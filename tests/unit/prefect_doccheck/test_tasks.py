"""Tasks: which failures are retried, where the key comes from, how batch progress adds up."""

from __future__ import annotations

import inspect

import pytest
from pydantic import SecretStr
from sqlalchemy.exc import IntegrityError, OperationalError

from doccheck.client import (
    AuthenticationError,
    ConfigurationError,
    NetworkError,
    PaymentRequiredError,
    RateLimitError,
    ServerError,
)
from doccheck.pipeline import Progress
from doccheck.sources.manifest import ManifestError
from prefect_doccheck.tasks import _progress_hub as progress
from prefect_doccheck.tasks._rate_limit import DEFAULT_NAME, rate_limit_from_env
from prefect_doccheck.tasks._retry_condition import is_transient, retry_on_transient
from prefect_doccheck.tasks._service_access import resolve_api_key, resolve_base_url, resolve_database_url


class _State:
    def __init__(self, data: object) -> None:
        self.data = data


@pytest.mark.parametrize(
    "exc",
    [
        NetworkError("connection reset"),
        ServerError("boom", status_code=503, code="unavailable"),
        RateLimitError("slow down", status_code=429, code="rate_limited"),
        OperationalError("SELECT 1", {}, Exception("database is locked")),
        TimeoutError(),
    ],
)
def test_transient_failures_are_retried(exc: BaseException) -> None:
    assert is_transient(exc)
    assert retry_on_transient(None, None, _State(exc)) is True


@pytest.mark.parametrize(
    "exc",
    [
        AuthenticationError("bad key", status_code=401, code="unauthorized"),
        PaymentRequiredError("no money", status_code=402, code="insufficient_balance"),
        ConfigurationError("no base url"),
        ManifestError("no such file"),
        IntegrityError("INSERT", {}, Exception("duplicate")),
        ValueError("bad"),
    ],
)
def test_permanent_failures_are_not_retried(exc: BaseException) -> None:
    assert not is_transient(exc)
    assert retry_on_transient(None, None, _State(exc)) is False


def test_retry_condition_ignores_states_without_exception() -> None:
    assert retry_on_transient(None, None, _State("not an exception")) is False
    assert retry_on_transient(None, None, _State(None)) is False
    # Prefect only calls plain functions as conditions (inspect.isfunction).
    assert inspect.isfunction(retry_on_transient)


def test_api_key_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_API_KEY", "sk_unit_123")
    key = resolve_api_key()
    assert isinstance(key, SecretStr)
    assert key.get_secret_value() == "sk_unit_123"
    assert "sk_unit_123" not in repr(key)


@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_api_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("DOCCHECK_API_KEY", raising=False)
    else:
        monkeypatch.setenv("DOCCHECK_API_KEY", value)
    with pytest.raises(ConfigurationError, match="DOCCHECK_API_KEY"):
        resolve_api_key()


def test_secret_block_seam_is_explicit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A named block wins over the environment; a missing block is a clear error naming it
    (the real load against a Prefect server is in tests/integration/test_no_secret_leaks.py)."""
    from prefect.blocks.system import Secret

    blocks = {"my-block": Secret(value="sk_block_456"), "empty": Secret(value="  ")}

    def fake_load(name: str, **_: object) -> Secret:
        if name not in blocks:
            raise ValueError(f"Unable to find block document named {name}")
        return blocks[name]

    monkeypatch.setattr(Secret, "load", fake_load)
    monkeypatch.setenv("DOCCHECK_API_KEY", "sk_unit_123")
    assert resolve_api_key("my-block").get_secret_value() == "sk_block_456"
    assert resolve_api_key().get_secret_value() == "sk_unit_123"
    with pytest.raises(ConfigurationError, match="missing-block") as info:
        resolve_api_key("missing-block")
    assert "sk_unit_123" not in str(info.value)
    with pytest.raises(ConfigurationError, match="empty") as info:
        resolve_api_key("empty")


def test_base_and_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCCHECK_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="DOCCHECK_BASE_URL"):
        resolve_base_url()
    assert resolve_base_url("http://x/api/v1") == "http://x/api/v1"
    monkeypatch.setenv("DOCCHECK_BASE_URL", "http://env/api/v1")
    assert resolve_base_url() == "http://env/api/v1"
    monkeypatch.delenv("DOCCHECK_DATABASE_URL", raising=False)
    assert resolve_database_url() == "sqlite:///doccheck.db"
    assert resolve_database_url("sqlite:///x.db") == "sqlite:///x.db"


def test_progress_sums_batches_for_listeners() -> None:
    seen: list[Progress] = []
    with progress.listening(seen.append):
        progress.reset("submit", 250)
        first = progress.callback_for("submit", "batch-1")
        second = progress.callback_for("submit", "batch-2")
        first(Progress(done=40, total=100, phase="submit"))
        second(Progress(done=10, total=100, phase="submit"))
        first(Progress(done=100, total=100, phase="submit"))
    progress.update("submit", "batch-3", 50)  # no listener any more: nothing recorded
    assert seen[0] == Progress(done=0, total=250, phase="submit")
    assert seen[-1] == Progress(done=110, total=250, phase="submit")
    assert len(seen) == 4


def test_a_total_known_mid_phase_keeps_the_count_so_far() -> None:
    """The overlapped run: its one part's total grows with the batches admitted, until the
    recording ends and the run's document count is set; the bar never goes back."""
    seen: list[Progress] = []
    with progress.listening(seen.append):
        progress.reset("submit")
        run = progress.callback_for("submit", "run")
        run(Progress(done=5, total=20, phase="submit"))
        progress.set_total("submit", 60)
        run(Progress(done=6, total=40, phase="submit"))
    assert [(p.done, p.total) for p in seen] == [(0, 0), (5, 20), (5, 60), (6, 60)]


def test_a_broken_listener_never_sinks_a_run() -> None:
    def broken(_: Progress) -> None:
        raise RuntimeError("display gone")

    with progress.listening(broken):
        progress.reset("wait", 3)
        progress.update("wait", "run", 2)


def test_progress_without_reset_uses_the_parts_totals() -> None:
    seen: list[Progress] = []
    with progress.listening(seen.append):
        progress._totals.pop("poll-test", None)
        progress.callback_for("poll-test", "run")(Progress(done=3, total=24, phase="poll-test"))
    assert seen[-1] == Progress(done=3, total=24, phase="poll-test")


def test_resolve_credentials_prefers_the_block_then_the_secret_name() -> None:
    import asyncio

    from prefect_doccheck import DocCheckCredentials
    from prefect_doccheck.tasks._service_access import base_url_of, resolve_credentials

    block = DocCheckCredentials(base_url="http://127.0.0.1:9/api/v1", api_key="sk_test_unit_block")
    assert asyncio.run(resolve_credentials(block, "a-secret-block")) is block
    assert asyncio.run(resolve_credentials(None, "a-secret-block")) == "a-secret-block"
    assert asyncio.run(resolve_credentials(None, None)) is None
    assert resolve_api_key(block).get_secret_value() == "sk_test_unit_block"
    assert base_url_of(block) == "http://127.0.0.1:9/api/v1" and base_url_of("a-secret-block") is None


def test_fleet_rate_limit_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DOCCHECK_RATE_LIMIT_NAME", "DOCCHECK_RATE_LIMIT_PER_SECOND", "DOCCHECK_RATE_LIMIT_CHUNK"):
        monkeypatch.delenv(name, raising=False)
    assert not rate_limit_from_env().enabled and rate_limit_from_env().name == DEFAULT_NAME
    monkeypatch.setenv("DOCCHECK_RATE_LIMIT_PER_SECOND", "7.5")
    monkeypatch.setenv("DOCCHECK_RATE_LIMIT_NAME", "svc")
    limit = rate_limit_from_env()
    assert (limit.name, limit.per_second, limit.chunk, limit.capacity) == ("svc", 7.5, 10, 10)
    assert rate_limit_from_env("other", 50, 5).capacity == 50  # parameters win; one second of burst
    monkeypatch.setenv("DOCCHECK_RATE_LIMIT_CHUNK", "many")
    with pytest.raises(ValueError, match="DOCCHECK_RATE_LIMIT_CHUNK"):
        rate_limit_from_env()
