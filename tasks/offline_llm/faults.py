"""Faults the test endpoint injects, queued per stage: the failures a real endpoint shows.

A fault hits the first ``count`` matching requests, or, with a ``probability``, each matching
request with that chance (seeded, so a run is reproducible) until ``count`` hits (``None``: no
limit). Faults travel as JSON (``POST /_faults``) so a server in another process can be steered;
one that does not make sense is refused when it is made (ValueError), not when it strikes.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from envmill.tasks.offline_llm.checks import MAX_SECONDS, integer_in, number_in

FaultKind = Literal[
    "status",  # an HTTP error: ``status`` (500, 429 with ``retry_after``, 400, ...)
    "hang",  # no reply for ``seconds`` (longer than the client's timeout)
    "drop",  # the connection closes without a reply
    "truncated",  # the JSON answer cut in half
    "prose",  # the JSON answer wrapped in chatty prose
    "think",  # a <think>...</think> block before the JSON answer
    "wrong_schema",  # valid JSON of another shape
    "empty",  # an empty message: no content, no tool calls
    "trickle",  # the whole reply, status line first, one byte every ``seconds``
    "raw",  # ``body`` (any JSON) verbatim with ``status``: a reply of a shape of your choosing
]
CONTENT_FAULTS = ("truncated", "prose", "think", "wrong_schema", "empty")


@dataclass
class Fault:
    kind: FaultKind
    stage: str | None = None
    count: int | None = 1
    probability: float | None = None
    seed: int = 0
    status: int = 500
    retry_after: float | None = None
    seconds: float = 30.0
    message: str = ""  # for "status": the error text; "{api_key}" echoes the caller's key
    body: Any = None  # for "raw": the JSON to answer with
    _rng: random.Random = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise ValueError(problem)
        self._rng = random.Random(self.seed)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}

    @classmethod
    def from_dict(cls, data: Any) -> Fault:
        """A fault from its JSON; ValueError or TypeError says what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError("a fault is a JSON object")
        return cls(**{k: v for k, v in data.items() if not k.startswith("_")})


def _problem(fault: Fault) -> str | None:
    """What is wrong with a fault's fields, or None."""
    if fault.kind not in get_args(FaultKind):
        return f"unknown fault kind '{fault.kind}'"
    checks = (
        (fault.stage is None or isinstance(fault.stage, str), "stage: a string or null"),
        (fault.count is None or integer_in(fault.count, 1), "count: an integer >= 1 or null"),
        (
            fault.probability is None or number_in(fault.probability, 0, 1),
            "probability: a number from 0 to 1 or null",
        ),
        (integer_in(fault.seed, None), "seed: an integer"),
        (integer_in(fault.status, 100, 599), "status: an HTTP status from 100 to 599"),
        (
            fault.retry_after is None or number_in(fault.retry_after, 0, MAX_SECONDS),
            f"retry_after: seconds from 0 to {MAX_SECONDS:g} or null",
        ),
        (number_in(fault.seconds, 0, MAX_SECONDS), f"seconds: from 0 to {MAX_SECONDS:g}"),
        (isinstance(fault.message, str), "message: a string"),
    )
    return next((f"bad fault: {problem}" for ok, problem in checks if not ok), None)


class FaultQueue:
    """Pending faults; :meth:`take` picks the one (if any) that hits a request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, faults: list[Fault]) -> None:
        with self._lock:
            self._faults.extend(faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def pending(self) -> int:
        with self._lock:
            return len(self._faults)

    def take(self, stage: str) -> Fault | None:
        """The first pending fault that hits this request of ``stage``; spent ones leave."""
        with self._lock:
            for fault in self._faults:
                if fault.stage not in (None, stage):
                    continue
                if fault.probability is not None and fault._rng.random() >= fault.probability:
                    continue
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                return fault
        return None


def spoil_content(kind: str, content: str) -> str:
    """A good JSON answer turned into what a sloppy model says instead."""
    if kind == "truncated":
        return content[: max(1, len(content) // 2)]
    if kind == "prose":
        return f"Sure! Here is the answer you asked for:\n{content}\nLet me know if you need more."
    if kind == "think":
        thought = "The user wants JSON. {not json} Let me think step by step."
        return f"<think>{thought}</think>\n{content}"
    if kind == "wrong_schema":
        return json.dumps({"answer": "I am not sure what you mean.", "confidence": 0.3})
    if kind == "empty":
        return ""
    return content
