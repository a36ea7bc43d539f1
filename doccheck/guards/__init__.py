"""Bounds for bytes and peers from outside, shared by our programs (the emulator, the receiver).

:mod:`.bounded_json` parses JSON with a budget (size, depth, strictness); :mod:`.slow_clients`
gives our uvicorn servers read deadlines so a slow client cannot hold a connection. Pure helpers:
nothing here imports the client, the ledger or the pipeline, so the emulator may use them.
"""
