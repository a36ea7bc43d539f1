"""Where webhook signing secrets come from, in one documented order.

1. a Prefect block the caller names (``doccheck receiver --webhook-secret-block``; the
   caller reads it and passes the reader in: this library does not import Prefect);
2. ``DOCCHECK_WEBHOOK_SECRET`` (comma-separated during a rotation; ``doccheck.config``);
3. the owner-only secret file ``DOCCHECK_WEBHOOK_SECRET_FILE`` (or its flag), re-read on
   every delivery so a rotation needs no restart.

Never from the ledger. Each source is checked once here, so a bad one fails at start with
one line rather than at the first delivery; no message ever holds a secret.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import SecretStr

from doccheck.config import Settings
from doccheck.errors import NoSigningSecret
from doccheck.webhooks._secret_file import file_secrets_provider

__all__ = ["SecretsProvider", "signing_secrets"]

SecretsProvider = Callable[[], list[SecretStr]]


def signing_secrets(
    settings: Settings, *, block: SecretsProvider | None = None, block_name: str | None = None
) -> tuple[SecretsProvider, str]:
    """The provider of the secrets accepted now, and where they come from (for the banner)."""
    if block is not None:
        block()  # fail now, with one clear line, rather than at the first delivery
        return block, f"Prefect Secret block {block_name!r}"
    from_environment = settings.webhook.secrets()
    if from_environment:
        return (lambda: from_environment), "DOCCHECK_WEBHOOK_SECRET"
    path = settings.webhook.secret_file
    if path is not None:
        provider = file_secrets_provider(path)
        provider()  # an insecure or unreadable file is refused now (SecretFileError)
        return provider, f"the secret file {path}"
    raise NoSigningSecret(
        "no signing secret: set DOCCHECK_WEBHOOK_SECRET, --webhook-secret-file "
        "(DOCCHECK_WEBHOOK_SECRET_FILE) or --webhook-secret-block (secrets are no longer read from the ledger)"
    )
