"""The client's httpx clients: no cookie is kept or sent back, and a path parsed once is the
URL httpx would have merged (doccheck.client._http)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from doccheck.client import AsyncDocCheckClient, DocCheckClient
from doccheck.client._http import MAX_PATHS, AsyncLeanClient, LeanClient, ServicePaths

BASE = "http://service.test/api/v1"
CHECK = {
    "id": "chk_1",
    "object": "check",
    "status": "queued",
    "products": ["ai"],
    "created_at": "2026-11-27T09:00:00Z",
}


def _cookie_setter(seen: list[str | None]) -> httpx.MockTransport:
    """Answers every request with a check and a cookie; records the Cookie header it was sent."""

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("cookie"))
        return httpx.Response(200, json=CHECK, headers={"Set-Cookie": "session=abc; Path=/"})

    return httpx.MockTransport(handle)


def test_a_cookie_the_service_sets_is_never_sent_back() -> None:
    seen: list[str | None] = []
    with DocCheckClient(BASE, "sk-test", transport=_cookie_setter(seen)) as client:
        client.get_check("chk_1")
        client.get_check("chk_1")
        assert not client._http.cookies
    assert seen == [None, None]


def test_the_async_client_keeps_no_cookie_either() -> None:
    seen: list[str | None] = []

    async def twice() -> None:
        async with AsyncDocCheckClient(BASE, "sk-test", transport=_cookie_setter(seen)) as client:
            await client.get_check("chk_1")
            await client.get_check("chk_1")

    asyncio.run(twice())
    assert seen == [None, None]


@pytest.mark.parametrize("client_class", [LeanClient, AsyncLeanClient])
def test_setting_a_cookie_is_refused_not_ignored(client_class: type[httpx.Client | httpx.AsyncClient]) -> None:
    client = client_class(base_url=BASE)
    with pytest.raises(TypeError, match="keep no cookies"):
        client.cookies = {"a": "b"}
    with pytest.raises(TypeError, match="keep no cookies"):
        client.cookies.set("a", "b")


@pytest.mark.parametrize(
    "path",
    ["/checks", "/checks/chk_1", "/checks/chk_1/files/similarity_pdf", "/checks/a b%2F/é", "webhook", "/"],
)
def test_a_path_parsed_once_is_the_url_httpx_merges(path: str) -> None:
    plain, lean = httpx.Client(base_url=BASE), LeanClient(base_url=BASE)
    assert lean.build_request("GET", lean.url_for(path)).url == plain.build_request("GET", path).url
    assert lean.url_for(path) is lean.url_for(path)  # parsed once


def test_the_parsed_paths_are_bounded() -> None:
    paths = ServicePaths(httpx.URL(BASE + "/"))
    for i in range(MAX_PATHS + 10):
        paths(f"/checks/chk_{i}")
    assert len(paths._urls) <= MAX_PATHS
    assert str(paths("/checks/chk_0")) == BASE + "/checks/chk_0"
