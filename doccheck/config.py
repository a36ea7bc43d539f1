"""Configuration from the environment (``DOCCHECK_*``), overridable by CLI flags.

Secrets are held as :class:`pydantic.SecretStr` so that a stray ``repr`` or log line
never shows them.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///doccheck.db"
#: Days an event id is remembered (and its row kept, body or not), so that a redelivery
#: within the sender's retry window is recognised: the interface shows no schedule; Stripe
#: retries for three days, so three is the floor. Invariant 11.
WEBHOOK_EVENT_WINDOW_DAYS = 3.0


class Settings(BaseSettings):
    """Settings read from ``DOCCHECK_BASE_URL``, ``DOCCHECK_API_KEY``, ``DOCCHECK_DATABASE_URL``
    and ``DOCCHECK_WEBHOOK_SECRET`` (comma-separated during a rotation)."""

    model_config = SettingsConfigDict(env_prefix="DOCCHECK_", extra="ignore")

    base_url: str | None = None
    api_key: SecretStr | None = None
    database_url: str = DEFAULT_DATABASE_URL
    webhook_secret: SecretStr | None = None
    #: Rebuild ``<out>/catalog.duckdb`` after every run, collect and purge (docs/data.md).
    catalog: bool = True
    #: ``DOCCHECK_WEBHOOK_EVENT_WINDOW_DAYS``: how long an event id is remembered (the sender's
    #: retry window; a purge empties bodies but keeps the ids this long). Invariant 11.
    webhook_event_window_days: float = Field(default=WEBHOOK_EVENT_WINDOW_DAYS, ge=WEBHOOK_EVENT_WINDOW_DAYS)

    def webhook_secrets(self) -> list[SecretStr]:
        """The configured signing secrets, newest first as written, empty entries dropped."""
        if self.webhook_secret is None:
            return []
        return [SecretStr(s.strip()) for s in self.webhook_secret.get_secret_value().split(",") if s.strip()]


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment, with non-None ``overrides`` (CLI flags) taking precedence."""
    return Settings(**cast(dict[str, Any], {k: v for k, v in overrides.items() if v is not None}))
