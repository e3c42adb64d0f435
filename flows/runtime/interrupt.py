"""Ctrl-C and SIGTERM, remembered: libraries may turn a KeyboardInterrupt into another exception.

pydantic-core, for one, wraps a KeyboardInterrupt raised inside a serializer (Prefect serializes
its context when it submits each task) in a ``PydanticSerializationError``. The run still has to
end as *interrupted*, so the handler notes that it fired before raising as usual.

SIGTERM (what systemd, Kubernetes and CI timeouts send) takes the same path as Ctrl-C: the run
is recorded *interrupted*, the cluster and the embedded server are closed, and the command exits
143 instead of 130.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

_fired = threading.Event()
_signals: list[int] = []  # the signals that fired, in order


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _signals.append(signum)
    _fired.set()
    signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt


def watch_for_interrupt() -> None:
    """Note Ctrl-C and SIGTERM from now on; a signal that is ignored (SIGINT in a background
    job) or handled by someone else stays so."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_signal)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_signal)


def was_interrupted(exc: BaseException | None = None) -> bool:
    return isinstance(exc, KeyboardInterrupt) or _fired.is_set() or _was_prefect_sigterm(exc)


def _was_prefect_sigterm(exc: BaseException | None) -> bool:
    """Inside a flow Prefect handles SIGTERM itself, raising ``TerminationSignal``, which a
    library may wrap with only its name left (pydantic's serializer, when the signal lands in a
    task submission). Noted here as the SIGTERM it was."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ == "TerminationSignal" or "TerminationSignal" in str(exc):
            _signals.append(signal.SIGTERM)
            _fired.set()
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def was_terminated() -> bool:
    """Whether the interrupt was a SIGTERM (exit 143, the shell's code for it)."""
    return signal.SIGTERM in _signals
