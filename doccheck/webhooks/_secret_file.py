"""Webhook signing secrets in a file only its owner can read (not in the ledger).

The ledger is shared (PostgreSQL, backups, analysts' notebooks); a signing secret kept
there is readable by everyone who can read outcomes. The receiver's secrets live instead
in the environment (``DOCCHECK_WEBHOOK_SECRET``), a Prefect block, or this file: JSON,
mode 0600, owned by the user running the receiver. A file that the group or others can
read or write, or that another user owns, is refused (:class:`InsecureSecretFile`), as
ssh does with private keys.

Each scope (one per service account) holds ``current`` and, after a rotation,
``previous`` with ``previous_valid_until``: deliveries signed with the old secret (sent or
retried just before the rotation) still verify for a bounded window, never for ever.

Writes are atomic (temporary file in the same folder, 0600 from creation, ``os.replace``)
and serialised by an advisory lock, so the receiver re-reading the file on a delivery
never sees half a file, and two writers never lose each other's scope.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from doccheck.errors import InsecureSecretFile, JsonRejected, SecretFileError
from doccheck.guards import bounded_json

#: How long the previous secret still verifies after a rotation, unless told otherwise.
DEFAULT_PREVIOUS_WINDOW_S = 3600.0
MAX_FILE_BYTES = 1024 * 1024


def _value(secret: str | SecretStr) -> str:
    return secret.get_secret_value() if isinstance(secret, SecretStr) else str(secret)


def check_private(path: Path, st: os.stat_result) -> None:
    """Refuse a file other users could read or change (mode & 0o077, or not our own)."""
    if not stat.S_ISREG(st.st_mode):
        raise SecretFileError(f"secret file {path} is not a regular file")
    if st.st_uid != os.geteuid():
        raise InsecureSecretFile(f"secret file {path} is owned by another user (uid {st.st_uid})")
    if st.st_mode & 0o077:
        raise InsecureSecretFile(
            f"secret file {path} has mode {stat.S_IMODE(st.st_mode):04o}; it must be readable only by its owner "
            f"(chmod 600 {path})"
        )


class SecretFile:
    """The signing secrets of one receiver, in ``path`` (see module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"SecretFile({str(self.path)!r})"

    # -- reading -------------------------------------------------------------------------

    def read(self) -> dict[str, dict[str, Any]]:
        """The scopes as stored; ``{}`` when the file does not exist yet."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise SecretFileError(f"cannot open secret file {self.path}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            check_private(self.path, os.fstat(handle.fileno()))
            raw = handle.read(MAX_FILE_BYTES + 1)
        try:
            data = bounded_json.loads(raw, max_bytes=MAX_FILE_BYTES, max_depth=4)
        except JsonRejected as exc:
            raise SecretFileError(f"secret file {self.path} is not valid: {exc}") from None
        scopes = data.get("scopes") if isinstance(data, dict) else None
        if not isinstance(scopes, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("current"), str) for v in scopes.values()
        ):
            raise SecretFileError(
                f"secret file {self.path} is not valid: expected {{'scopes': {{name: {{'current'}}}}}}"
            )
        return scopes

    def secrets(self, now: float | None = None) -> list[SecretStr]:
        """Every secret that verifies now: each scope's current one, and its previous one
        until ``previous_valid_until``."""
        current_time = time.time() if now is None else now
        result: list[SecretStr] = []
        previous: list[SecretStr] = []
        for entry in self.read().values():
            result.append(SecretStr(entry["current"]))
            until = entry.get("previous_valid_until")
            if entry.get("previous") and isinstance(until, (int, float)) and current_time < until:
                previous.append(SecretStr(entry["previous"]))
        return result + previous

    # -- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, scopes: dict[str, dict[str, Any]]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": 1, "scopes": scopes}, handle, indent=1, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def store(
        self,
        secret: str | SecretStr,
        scope: str = "default",
        *,
        previous_window_s: float = DEFAULT_PREVIOUS_WINDOW_S,
        now: float | None = None,
    ) -> None:
        """Keep ``secret`` as ``scope``'s current secret. A different secret already there
        becomes ``previous``, valid for ``previous_window_s`` more seconds (0: at once gone)."""
        value = _value(secret)
        if not value.strip():
            raise ValueError("empty webhook secret")
        current_time = time.time() if now is None else now
        with self._locked():
            scopes = self.read()
            entry = scopes.get(scope)
            if entry is None:
                scopes[scope] = {"current": value, "previous": None, "previous_valid_until": None}
            elif entry["current"] != value:
                keep = previous_window_s > 0
                scopes[scope] = {
                    "current": value,
                    "previous": entry["current"] if keep else None,
                    "previous_valid_until": current_time + previous_window_s if keep else None,
                }
            else:
                return
            self._write(scopes)

    def delete(self, scope: str = "default") -> bool:
        """Forget ``scope`` (its webhook was deleted); True if it was there."""
        with self._locked():
            scopes = self.read()
            if scopes.pop(scope, None) is None:
                return False
            self._write(scopes)
            return True


def file_secrets_provider(path: str | Path) -> Callable[[], list[SecretStr]]:
    """A receiver secrets provider reading ``path`` on each delivery (a small local file;
    the permission check runs every time), so a rotation needs no restart."""
    secret_file = SecretFile(path)
    return secret_file.secrets


__all__ = ["DEFAULT_PREVIOUS_WINDOW_S", "SecretFile", "check_private", "file_secrets_provider"]
