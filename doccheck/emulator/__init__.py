"""A local, real-HTTP emulator of the document-check service (see shared/DESIGN.md)."""
