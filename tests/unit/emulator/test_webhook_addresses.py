"""Which webhook addresses the emulator may call: every form that reaches a private IPv4."""

from __future__ import annotations

import ipaddress

import pytest

from doccheck.emulator._webhook_urls import embedded_ipv4, is_public_address

PRIVATE = {
    "IPv4 loopback": "127.0.0.1",
    "IPv4 private": "10.1.2.3",
    "IPv4 link-local (cloud metadata)": "169.254.169.254",
    "IPv4 CGNAT": "100.64.0.1",
    "IPv6 loopback": "::1",
    "IPv6 unspecified": "::",
    "IPv6 link-local with zone": "fe80::1%eth0",
    "IPv6 unique local": "fd00::1",
    "IPv4-mapped loopback": "::ffff:127.0.0.1",
    "IPv4-mapped private": "::ffff:192.168.1.1",
    "IPv4-compatible loopback (::127.0.0.1)": "::127.0.0.1",
    "IPv4-compatible private": "::10.0.0.1",
    "NAT64 well-known loopback": "64:ff9b::7f00:1",
    "NAT64 well-known private": "64:ff9b::c0a8:0101",
    "NAT64 local-use private": "64:ff9b:1::a00:1",
    "6to4 loopback": "2002:7f00:1::",
    "6to4 private": "2002:c0a8:101::1",
    "Teredo to loopback client": "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "ISATAP loopback": "2001:4860::5efe:7f00:1",
    "ISATAP (u/l bit) private": "2001:4860::200:5efe:a00:1",
    "multicast": "ff02::1",
    "not an address": "localhost",
}
PUBLIC = {
    "IPv4 public": "8.8.8.8",
    "IPv6 public": "2606:4700:4700::1111",
    "NAT64 of a public IPv4": "64:ff9b::808:808",
    "6to4 of a public IPv4": "2002:808:808::1",
    "ISATAP of a public IPv4": "2001:4860::5efe:808:808",
}


@pytest.mark.parametrize("address", PRIVATE.values(), ids=PRIVATE.keys())
def test_private_forms_refused(address: str) -> None:
    assert not is_public_address(address)


@pytest.mark.parametrize("address", PUBLIC.values(), ids=PUBLIC.keys())
def test_public_forms_accepted(address: str) -> None:
    assert is_public_address(address)


def test_embedded_ipv4_names_each_form() -> None:
    def v4(a: str) -> list[str]:
        return [str(x) for x in embedded_ipv4(ipaddress.IPv6Address(a))]

    assert v4("::ffff:1.2.3.4") == ["1.2.3.4"]
    assert v4("::1.2.3.4") == ["1.2.3.4"]
    assert v4("64:ff9b::1.2.3.4") == ["1.2.3.4"]
    assert v4("2002:102:304::") == ["1.2.3.4"]
    assert "127.0.0.1" in v4("2001:0:4136:e378:8000:63bf:80ff:fffe")
    assert v4("2001:db8::5efe:1.2.3.4") == ["1.2.3.4"]
    assert v4("2606:4700:4700::1111") == []
