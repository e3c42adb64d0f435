"""Progress of a run, reported from the flow to whoever listens (the CLI's progress bar).

A process-local hook instead of a flow parameter: Prefect parameters must be serializable, and
the flow should not know how progress is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Reporter = Callable[[str, dict[str, Any]], None]
_reporter: Reporter | None = None


def set_reporter(reporter: Reporter | None) -> None:
    global _reporter
    _reporter = reporter


def report(event: str, **details: Any) -> None:
    if _reporter is not None:
        _reporter(event, details)
