"""Every error class the library defines derives from ``DocCheckBaseError`` and keeps its
former base, so both ``except DocCheckBaseError`` and the older clauses catch it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import doccheck
from doccheck.errors import DocCheckBaseError

#: The emulator stands for the remote service (its errors are HTTP answers), and private
#: control-flow exceptions (a leading underscore) are not raised to callers.
EXCLUDED_PREFIXES = ("doccheck.emulator",)


def _library_exceptions() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(doccheck.__path__, "doccheck."):
        if info.name.startswith(EXCLUDED_PREFIXES):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                found.append(value)
    return found


def test_every_library_error_derives_from_the_root() -> None:
    errors = _library_exceptions()
    assert len(errors) >= 25  # the walk really found them (client, manifest, webhooks...)
    assert [e.__qualname__ for e in errors if not issubclass(e, DocCheckBaseError)] == []


def test_former_bases_are_kept() -> None:
    from doccheck.client import ConfigurationError, DocCheckError, LocalValidationError
    from doccheck.errors import EventParseError, ReportError, ServiceError, SignatureError
    from doccheck.extract import ExtractionError, UnsupportedFileType
    from doccheck.pipeline import FatalSubmitError
    from doccheck.sources.manifest import ManifestError

    for error in (ConfigurationError, LocalValidationError, ExtractionError, UnsupportedFileType, ManifestError,
                  ReportError, EventParseError):  # fmt: skip
        assert issubclass(error, ValueError), error
    for error in (ServiceError, FatalSubmitError):
        assert issubclass(error, RuntimeError), error
    assert issubclass(DocCheckError, DocCheckBaseError) and issubclass(SignatureError, DocCheckBaseError)


def test_every_library_error_lives_in_the_errors_module() -> None:
    import doccheck.errors

    elsewhere = [
        f"{error.__module__}.{error.__qualname__}"
        for error in _library_exceptions()
        if error.__module__ != "doccheck.errors"
    ]
    assert elsewhere == []
    defined = [n for n, v in vars(doccheck.errors).items() if inspect.isclass(v) and issubclass(v, BaseException)]
    assert sorted(doccheck.errors.__all__) == sorted(defined)


def test_the_errors_module_draws_its_whole_tree() -> None:
    """The module docstring's tree names every error it defines, under its real parent."""
    import doccheck.errors

    doc = doccheck.errors.__doc__ or ""
    tree = doc[doc.index("DocCheckBaseError\n") :]
    parents: list[tuple[int, str]] = []
    for line in tree.splitlines()[1:]:
        if not line.strip():
            break
        depth = (len(line) - len(line.lstrip(" │├└─"))) // 4
        name = line.lstrip(" │├└─").split(" ")[0]
        parents = [p for p in parents if p[0] < depth] + [(depth, name)]
        parent = parents[-2][1] if len(parents) > 1 else "DocCheckBaseError"
        cls = getattr(doccheck.errors, name)
        assert cls.__bases__[0].__name__ == parent, name
    drawn = {line.lstrip(" │├└─").split(" ")[0] for line in tree.splitlines() if line.strip()}
    assert set(doccheck.errors.__all__) <= drawn
