"""``doccheck emulator`` with TCP_NODELAY on its sockets (benchmarks only): ``python emulator_nodelay.py emulator ...``.

Why: ``doccheck.emulator.server.bind`` creates its listening sockets with
``socket.socket(family, SOCK_STREAM)``, whose ``proto`` is 0, and asyncio only sets
TCP_NODELAY on accepted sockets whose ``proto`` is ``IPPROTO_TCP``. Without it a response
written in two pieces (head, then body) waits for the client's delayed ACK: every
request on a kept-alive connection costs ~40 ms more than ``--latency-ms`` (measured:
44 ms for ``GET /_emulator/health`` at latency 0, 2 ms when head and body go in one
send). The raw loop and the pipeline pay it alike, but it hides the client's and the
ledger's own costs behind an idle wait, so ``submit_marginal.py --emulator-nodelay``
measures with the sockets fixed as well. This wrapper only changes how the sockets are
made; the fix belongs in ``doccheck/emulator/server.py`` (``socket.IPPROTO_TCP``).
"""

from __future__ import annotations

import socket

from doccheck.cli import app
from doccheck.emulator import server


def bind(host: str, port: int) -> socket.socket:
    """``server.bind`` with ``proto=IPPROTO_TCP``, so asyncio sets TCP_NODELAY on each connection."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


if __name__ == "__main__":
    server.bind = bind
    app()
