"""A link to one output, for a person who opens it from somewhere else (the Prefect UI's artifacts).

Why a module of its own: where a run's reports are and where they are looked at are different
machines once workers share nothing: a local path means nothing to a browser on another machine,
and a bucket's object needs the store's credentials. So a link is the object's own URL
(``s3://bucket/reports/...``: its name, for whoever holds the credentials), or a presigned one: an
``https`` URL that anyone holding it can open until it expires. fsspec's ``sign()`` makes it
(s3fs: botocore's ``generate_presigned_url``, computed locally with no request); the URL carries
the access key's id and a signature (and, with temporary credentials, their session token), never
the secret key. A store whose filesystem cannot sign (fsspec's memory, or credentials that cannot
sign) gets the object's URL, and the caller is told it did not expire.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from doccheck.storage._locations import UserPath, display, resolve

__all__ = ["ShareLink", "share_link"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShareLink:
    """A link to an output: ``url``, and when a presigned one stops working (``None``: it does not)."""

    url: str
    expires_at: datetime | None = None

    @property
    def presigned(self) -> bool:
        return self.expires_at is not None

    def expiry_text(self) -> str:
        """``valid until 2026-05-04 06:00 UTC`` for a presigned link, ``""`` otherwise."""
        return f"valid until {self.expires_at:%Y-%m-%d %H:%M} UTC" if self.expires_at else ""


def share_link(location: str | os.PathLike[str] | UserPath, *, presign_seconds: int | None = None) -> ShareLink:
    """A link to ``location``: a local file's ``file://`` URI, a store's object URL, or with
    ``presign_seconds`` a link to the object presigned for that long (the object's URL where the
    store cannot sign: logged, never raised; a link is a view, the output is written)."""
    path = resolve(location)
    if isinstance(path, Path):  # a local file: what a browser on this machine opens
        return ShareLink(path.resolve().as_uri())
    url = display(path)
    if not presign_seconds:
        return ShareLink(url)
    expires_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=presign_seconds)
    try:
        signed = str(path.fs.sign(path.path, expiration=int(presign_seconds)))
    except NotImplementedError:
        log.info("%s: its store cannot presign a link; the object's URL instead", url)
        return ShareLink(url)
    except Exception as exc:  # noqa: BLE001 - a store's library raises its own kinds (no credentials...)
        log.warning("%s: no presigned link (%s); the object's URL instead", url, type(exc).__name__)
        return ShareLink(url)
    return ShareLink(signed, expires_at)
