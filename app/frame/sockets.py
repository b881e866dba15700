"""Listening sockets as the server needs them: plain socket code, no Streamlit."""

from __future__ import annotations

import socket


def naming_tcp(sock: socket.socket) -> socket.socket:
    """`sock` (listening) naming TCP as its protocol, same descriptor, blocking and inheritance: only
    then does asyncio turn Nagle off (TCP_NODELAY) on what it accepts. A Unix socket as it is."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.proto == socket.IPPROTO_TCP:
        return sock
    blocking, inheritable = sock.getblocking(), sock.get_inheritable()
    tcp = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
    tcp.setblocking(blocking)
    tcp.set_inheritable(inheritable)
    return tcp
