"""The sync and async clients keep the same public methods with the same signatures
(the async ones being coroutines), so code and docs can move between them freely."""

from __future__ import annotations

import inspect

from doccheck.client import AsyncDocCheckClient, DocCheckClient

#: Lifecycle methods that differ by design (``close`` / ``aclose``, context managers).
LIFECYCLE = {"close", "aclose"}


def _public(cls: type) -> dict[str, object]:
    return {n: m for n, m in vars(cls).items() if not n.startswith("_") and callable(m) and n not in LIFECYCLE}


def test_same_public_methods() -> None:
    assert sorted(_public(DocCheckClient)) == sorted(_public(AsyncDocCheckClient))


def test_same_signatures_and_async_is_async() -> None:
    sync, async_ = _public(DocCheckClient), _public(AsyncDocCheckClient)
    for name, method in sync.items():
        other = async_[name]
        ours, theirs = inspect.signature(method), inspect.signature(other)  # type: ignore[arg-type]
        assert ours.parameters == theirs.parameters, name
        if name.startswith("iter_"):  # Iterator[X] / AsyncIterator[X]
            assert theirs.return_annotation == f"Async{ours.return_annotation}", name
            assert inspect.isasyncgenfunction(other), f"AsyncDocCheckClient.{name} is not an async generator"
        else:
            assert ours.return_annotation == theirs.return_annotation, name
            assert inspect.iscoroutinefunction(other), f"AsyncDocCheckClient.{name} is not async"
    assert inspect.signature(DocCheckClient.__init__).parameters.keys() == (
        inspect.signature(AsyncDocCheckClient.__init__).parameters.keys()
    )
