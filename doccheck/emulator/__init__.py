"""A local, real-HTTP emulator of the document-check service (see shared/DESIGN.md).

The emulator is a program, not a library: it exports nothing. ``doccheck emulator``
(:mod:`.command`) runs it and tests drive it over HTTP; its modules are the service's parts.
Its errors (:mod:`.errors`' ``ApiError``, the body limits' ``BodyTooLarge``) stay here: they
become the service's HTTP answers, never exceptions a doccheck caller catches (see
:mod:`doccheck.errors`).
"""

__all__: list[str] = []
