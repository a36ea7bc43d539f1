"""The client's two httpx clients: httpx's own, without a cookie jar and with the service's
paths parsed once.

Why: per request, httpx parses the relative path and merges it into the base URL (building a
request took 42 µs, 18 µs with the URL parsed already), and builds a ``urllib`` request to look
for ``Set-Cookie`` in the answer (15-24 µs). A submission makes one request a document, whose
whole CPU is ~1 ms (issue 26).

Neither does anything for this client. The service authenticates with the bearer key and the
interface names no cookie: a cookie it set would only go back to it with every later request.
The paths are a handful of fixed strings (and a check's id).
"""

from __future__ import annotations

from typing import Any

import httpx

#: Parsed paths kept a client at most (fixed paths, plus one a check id when fetching results).
MAX_PATHS = 512


class NoCookies(httpx.Cookies):
    """An empty jar that keeps nothing: no cookie is taken from an answer, none is sent."""

    def extract_cookies(self, response: httpx.Response) -> None:
        """Keep nothing (httpx calls this for every answer)."""

    def set(self, name: str, value: str, domain: str = "", path: str = "/") -> None:
        raise TypeError("doccheck's HTTP clients keep no cookies")

    def __setitem__(self, name: str, value: str) -> None:
        self.set(name, value)

    def __bool__(self) -> bool:
        return False


class ServicePaths:
    """Absolute URLs of a base URL's relative paths, each parsed once (as httpx would merge
    them: the path, without its leading ``/``, after the base's own, which ends in ``/``)."""

    def __init__(self, base_url: httpx.URL) -> None:
        self._base = str(base_url)
        self._urls: dict[str, httpx.URL] = {}

    def __call__(self, path: str) -> httpx.URL:
        url = self._urls.get(path)
        if url is None:
            if len(self._urls) >= MAX_PATHS:
                self._urls.clear()
            url = self._urls[path] = httpx.URL(self._base + path.lstrip("/"))
        return url


class _Lean:
    """What both clients add to httpx's (see the module's docstring)."""

    _no_cookies: NoCookies
    url_for: ServicePaths

    def _lean(self, base_url: httpx.URL) -> None:
        self._no_cookies = NoCookies()
        self.url_for = ServicePaths(base_url)

    @property
    def cookies(self) -> httpx.Cookies:
        return self._no_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise TypeError("doccheck's HTTP clients keep no cookies")


class LeanClient(_Lean, httpx.Client):
    """``httpx.Client`` without cookies, with :attr:`url_for` (see the module's docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lean(self.base_url)


class AsyncLeanClient(_Lean, httpx.AsyncClient):
    """``httpx.AsyncClient`` without cookies, with :attr:`url_for` (see the module's docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lean(self.base_url)
