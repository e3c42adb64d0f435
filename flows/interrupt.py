"""Ctrl-C, remembered: libraries may turn a KeyboardInterrupt into another exception.

pydantic-core, for one, wraps a KeyboardInterrupt raised inside a serializer (Prefect serializes
its context when it submits each task) in a ``PydanticSerializationError``. The run still has to
end as *interrupted*, so the SIGINT handler notes that it fired before raising as usual.
"""

from __future__ import annotations

import signal
import threading

_fired = threading.Event()


def _on_sigint(signum: int, frame: object) -> None:
    _fired.set()
    signal.default_int_handler(signum, frame)


def watch_for_interrupt() -> None:
    """Note Ctrl-C from now on; a SIGINT that is ignored (a background job) stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def was_interrupted(exc: BaseException | None = None) -> bool:
    return isinstance(exc, KeyboardInterrupt) or _fired.is_set()
