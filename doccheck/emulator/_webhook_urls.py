"""Which webhook URLs the emulator accepts and calls (the interface's delivery rule 3).

A URL must be HTTPS and every address its host resolves to must be public. With
``--allow-private-webhooks`` (local receivers, no TLS) a URL whose host resolves only to
private or loopback addresses is accepted over ``http`` or ``https`` instead. The check
runs when a URL is registered AND again before every delivery, so a host that later
resolves elsewhere (DNS rebinding) is still never called.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

from doccheck.emulator._api_errors import ApiError

MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_S = 5.0


class WebhookUrlError(ValueError):
    """The URL may not be registered or called; the message says why."""


#: IPv6 ranges whose low 32 bits are an IPv4 address the packet is translated to (NAT64).
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
#: The IPv4-compatible range (deprecated ``::a.b.c.d``); ``::`` and ``::1`` are in it too.
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries and may be routed to: IPv4-mapped
    (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``), NAT64 (``64:ff9b::/96`` and the
    local-use ``64:ff9b:1::/48``), 6to4 (``2002:AABB:CCDD::``), Teredo (server and client)
    and ISATAP interface ids (``...:0:5efe:a.b.c.d`` / ``...:200:5efe:a.b.c.d``)."""
    found: list[ipaddress.IPv4Address] = []
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in _V4_COMPATIBLE or any(ip in net for net in _NAT64):
        found.append(low32)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if (int(ip) >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ISATAP: interface id 0[2]00:5efe + IPv4
        found.append(low32)
    return found


def is_public_address(address: str) -> bool:
    """True for a globally routable unicast address that embeds no private IPv4 address.

    ``ipaddress`` calls ``::127.0.0.1``, ``64:ff9b::7f00:1`` and ``2002:7f00:1::`` global,
    yet each reaches 127.0.0.1 on a host or network that translates it; every embedded
    IPv4 address must be public too (:func:`embedded_ipv4`).
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if not ip.is_global or ip.is_multicast:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        return all(v4.is_global and not v4.is_multicast for v4 in embedded_ipv4(ip))
    return True


async def resolve(host: str, port: int, *, offline: bool = False) -> list[str]:
    """All addresses of ``host`` (an IP literal resolves to itself). ``offline`` never asks
    DNS: only IP literals and ``localhost`` resolve (for sandboxes and test runs)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    if offline:
        if host.lower().rstrip(".") == "localhost":
            return ["127.0.0.1"]
        raise WebhookUrlError(f"host {host!r} cannot be resolved (the emulator runs with --offline)")
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=RESOLVE_TIMEOUT_S)
    except (OSError, TimeoutError, UnicodeError) as exc:
        raise WebhookUrlError(f"host {host!r} cannot be resolved") from exc
    return sorted({str(info[4][0]) for info in infos})


async def vet_url(url: object, *, allow_private: bool, offline: bool = False) -> str:
    """Return ``url`` when it may be used, else raise :class:`WebhookUrlError`."""
    if not isinstance(url, str) or not url.strip():
        raise WebhookUrlError("webhook URL must be a non-empty string")
    if len(url) > MAX_URL_LENGTH:
        raise WebhookUrlError(f"webhook URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        raise WebhookUrlError("webhook URL is malformed") from None
    if parts.scheme not in ("https", "http"):
        raise WebhookUrlError("webhook URL must use https")
    if not host:
        raise WebhookUrlError("webhook URL has no host")
    if parts.username or parts.password:
        raise WebhookUrlError("webhook URL must not carry credentials")
    addresses = await resolve(host, port or (443 if parts.scheme == "https" else 80), offline=offline)
    if not addresses:
        raise WebhookUrlError(f"host {host!r} cannot be resolved")
    private = [a for a in addresses if not is_public_address(a)]
    if private and not allow_private:
        raise WebhookUrlError(f"webhook URL resolves to a private or internal address ({private[0]})")
    if parts.scheme == "http" and not (allow_private and len(private) == len(addresses)):
        raise WebhookUrlError("webhook URL must use https")
    return url.strip()


async def vet_url_or_422(url: object, *, allow_private: bool, offline: bool = False) -> str:
    """:func:`vet_url` mapped to ``422 invalid_webhook_url``."""
    try:
        return await vet_url(url, allow_private=allow_private, offline=offline)
    except WebhookUrlError as exc:
        raise ApiError(422, "invalid_webhook_url", str(exc)) from None
