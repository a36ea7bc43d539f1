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
    from doccheck.commands.services import ServiceError
    from doccheck.extract import ExtractionError, UnsupportedFileType
    from doccheck.outputs.reports import ReportError
    from doccheck.pipeline import FatalSubmitError
    from doccheck.sources.manifest import ManifestError
    from doccheck.webhooks.verify import EventParseError, SignatureError

    for error in (ConfigurationError, LocalValidationError, ExtractionError, UnsupportedFileType, ManifestError,
                  ReportError, EventParseError):  # fmt: skip
        assert issubclass(error, ValueError), error
    for error in (ServiceError, FatalSubmitError):
        assert issubclass(error, RuntimeError), error
    assert issubclass(DocCheckError, DocCheckBaseError) and issubclass(SignatureError, DocCheckBaseError)
