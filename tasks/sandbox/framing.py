"""Length-prefixed JSON frames: the only thing that crosses the sandbox boundary.

Stdlib only: the sandbox's child side imports this file too. JSON (never pickle) so that a reply
from a hostile program can never run code in the reader.
"""

from __future__ import annotations

import json
import socket
import struct

HEADER = struct.Struct(">I")


class FrameError(Exception):
    """The peer closed the channel, or sent something that is not a frame we accept."""


def send_frame(sock: socket.socket, message: object) -> None:
    payload = json.dumps(message, ensure_ascii=False, allow_nan=False).encode("utf-8")
    sock.sendall(HEADER.pack(len(payload)) + payload)


def recv_frame(sock: socket.socket, max_bytes: int) -> object:
    """Read one frame; refuse a frame larger than ``max_bytes`` before reading its body."""
    (size,) = HEADER.unpack(_recv_exactly(sock, HEADER.size))
    if size > max_bytes:
        raise FrameError(f"reply of {size} bytes exceeds the {max_bytes}-byte limit")
    try:
        return json.loads(_recv_exactly(sock, size))
    except ValueError as exc:
        raise FrameError(f"reply is not JSON: {exc}") from None


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise FrameError("channel closed")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
