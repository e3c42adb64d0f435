"""Length-prefixed JSON frames: the only thing that crosses the sandbox boundary.

Stdlib only: the sandbox's child side imports this file too. JSON (never pickle) so that a reply
from a hostile program can never run code in the reader.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import time

HEADER = struct.Struct(">I")
LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]", re.ASCII)  # an escape that may decode to one


class FrameError(Exception):
    """The peer closed the channel, or sent something that is not a frame we accept.

    ``kind`` says which: ``closed``, ``too_large`` or ``protocol``.
    """

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def send_frame(sock: socket.socket, message: object) -> None:
    send_payload(sock, encode_frame(message))


def encode_frame(message: object) -> bytes:
    """``message`` as a frame's body; ValueError (a lone surrogate, NaN), TypeError (not JSON)
    or RecursionError (nested too deeply) when it cannot be one."""
    return json.dumps(message, ensure_ascii=False, allow_nan=False).encode("utf-8")


def send_text(sock: socket.socket, text: str) -> None:
    """A message already written as JSON (``UnicodeEncodeError`` for a lone surrogate)."""
    send_payload(sock, text.encode("utf-8"))


def send_payload(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(HEADER.pack(len(payload)) + payload)


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]} overflows a float")
    return value


def recv_frame(
    sock: socket.socket,
    max_bytes: int,
    deadline: float | None = None,
    max_values: int | None = None,
    tally: list[tuple[int, int]] | None = None,
) -> object:
    """Read one frame; refuse one larger than ``max_bytes`` before reading its body.

    ``deadline`` (a ``time.monotonic()`` value) bounds the whole frame, so a peer trickling one
    byte at a time cannot stretch a per-``recv`` timeout. ``max_values`` bounds what the body
    may decode into (8 MB of ``{},`` is millions of objects), counted before decoding; ``tally``
    gets (bytes, values) appended, for a caller that budgets what it keeps. NaN,
    Infinity, nesting too deep to decode and strings that are not valid Unicode (a lone
    surrogate, which every later encode would choke on) are refused like any malformed reply.
    """
    (size,) = HEADER.unpack(_recv_exactly(sock, HEADER.size, deadline))
    if size > max_bytes:
        raise FrameError(f"reply of {size} bytes exceeds the {max_bytes}-byte limit", "too_large")
    body = _recv_exactly(sock, size, deadline)
    values = body.count(b",") + body.count(b"{") + body.count(b"[") + 1
    if max_values is not None and values > max_values:
        raise FrameError(f"reply of up to {values} values exceeds {max_values}", "too_large")
    if tally is not None:
        tally.append((size, values))
    try:  # strict UTF-8 first: json.loads(bytes) would guess an encoding and pass surrogates
        text = body.decode("utf-8")
        decoded = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
        if LONE_SURROGATE.search(body):
            json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError) as exc:  # UnicodeError is a ValueError
        raise FrameError(f"reply is not plain JSON: {str(exc)[:200]}", "protocol") from None
    return decoded


def _recv_exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, remaining = [], size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("deadline passed")
            sock.settimeout(left)
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise FrameError("channel closed", "closed")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
