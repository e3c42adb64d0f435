"""What the test endpoint counts: requests per route and stage, in-flight peak, faults, bodies."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import Any


class EndpointStats:
    """Requests per route and stage, in-flight requests and their peak, faults applied."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget counts and the log; requests still in flight stay counted (and are the peak)."""
        with self._lock:
            self.routes: Counter[str] = Counter()
            self.stages: Counter[str] = Counter()
            self.faults: Counter[str] = Counter()
            self.in_flight = getattr(self, "in_flight", 0)
            self.peak = self.in_flight
            self.log: deque[dict[str, Any]] = deque(maxlen=2000)

    def begin(self, route: str, stage: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.routes[route] += 1
            self.stages[stage] += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.log.append({"route": route, "stage": stage, "body": body, "at": time.time()})

    def end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def fault(self, kind: str) -> None:
        with self._lock:
            self.faults[kind] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": sum(self.routes.values()),
                "routes": dict(self.routes),
                "stages": dict(self.stages),
                "faults": dict(self.faults),
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak,
            }

    def requests(self, stage: str | None) -> list[dict[str, Any]]:
        with self._lock:
            return [entry for entry in self.log if stage in (None, entry["stage"])]
