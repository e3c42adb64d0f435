"""The executor's child: BFCL's own executor and checker behind a JSON-lines loop.

Imported only by ``python -m envmill.tasks.backends.imported.bfcl.executor``, never by the
factory. ``random.Random`` in BFCL's modules is replaced by a subclass that counts the 32-bit
words it draws (its draws are ``random.Random``'s own), so a state records ``seed`` and
``drawn`` as the adapted modules do; and their clock reads (``now``, ``today``) give the adapted
modules' fixed moment (``adapt.CLOCK``), so a state never carries the time it was made at.
"""

from __future__ import annotations

import copy
import datetime
import functools
import importlib
import inspect
import json
import random
import resource
import sys
import time
import types
import uuid
from typing import Any

from envmill.tasks.backends.imported.bfcl.adapt import CLOCK, state_attribute
from envmill.tasks.backends.imported.bfcl.codec import encode_fields
from envmill.tasks.backends.imported.bfcl.package import (
    CLASS_FILES,
    STATELESS_CLASSES,
    BfclTask,
)
from envmill.tasks.backends.imported.bfcl.state import public_fields

PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"


class CountingRandom(random.Random):
    """``random.Random`` that counts the words drawn since seeding."""

    def __init__(self, seed: int = 0) -> None:
        self.seed_value, self.drawn = seed, 0
        super().__init__(seed)

    def getrandbits(self, k: int) -> int:
        self.drawn += (k + 31) // 32
        return super().getrandbits(k)

    def random(self) -> float:
        self.drawn += 2
        return super().random()


class FixedClock(datetime.datetime):
    """``datetime.datetime`` whose clock reads give the adapted modules' moment."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> FixedClock:
        return cls(*CLOCK, tzinfo=tz)

    @classmethod
    def today(cls) -> FixedClock:
        return cls(*CLOCK)

    @classmethod
    def utcnow(cls) -> FixedClock:
        return cls(*CLOCK)


def _modules() -> list[types.ModuleType]:
    found = []
    for module_name, _doc in CLASS_FILES.values():
        module = importlib.import_module(f"{PREFIX}.{module_name}")
        if hasattr(module, "random"):
            module.random = types.SimpleNamespace(Random=CountingRandom)  # type: ignore[attr-defined]
        _fix_clock(module)
        found.append(module)
    return found


def _fix_clock(module: types.ModuleType) -> None:
    """``datetime`` as the module names it (the module, or its class) with a fixed clock."""
    named = getattr(module, "datetime", None)
    if named is datetime.datetime:
        module.datetime = FixedClock  # type: ignore[attr-defined]
    elif named is datetime:
        clocked = types.SimpleNamespace(**vars(datetime))
        clocked.datetime = FixedClock
        module.datetime = clocked  # type: ignore[attr-defined]


def _kinds(modules: list[types.ModuleType]) -> tuple:
    kinds: list[tuple] = [("Random", CountingRandom, _random_fields, None, None)]
    for module in modules:
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                kinds.append((name, cls, lambda obj: dict(vars(obj)), None, None))
    return tuple(kinds)


def _random_fields(obj: CountingRandom) -> dict[str, int]:
    return {"seed": obj.seed_value, "drawn": obj.drawn}


@functools.cache
def kinds() -> tuple:
    """BFCL's classes as the codec's kinds; the first call loads BFCL's modules and replaces
    their ``random`` and clock (``serve`` makes it first), so importing this module needs no
    BFCL."""
    return _kinds(_modules())


def initial_state(task: BfclTask) -> dict[str, Any]:
    long_context = _long_context(task)
    state = {}
    for name in task.involved_classes:
        module = importlib.import_module(f"{PREFIX}.{CLASS_FILES[name][0]}")
        instance = getattr(module, name)()
        if name not in STATELESS_CLASSES:
            config = copy.deepcopy(task.initial_config.get(name, {}))
            instance._load_scenario(config, long_context=long_context)
        state[state_attribute(name)] = encode_fields(dict(vars(instance)), kinds())
    return state


def replay(task: BfclTask, calls: list[list[str]]) -> dict[str, Any]:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        execute_multi_turn_func_call,
    )

    model = f"envmill_{uuid.uuid4().hex}"
    results, instances = [], {}
    for turn in calls:
        turn_results, instances = execute_multi_turn_func_call(
            turn,
            task.initial_config,
            task.involved_classes,
            model,
            task.id,
            long_context=_long_context(task),
        )
        results.append(turn_results)
    states = {
        name: public_fields(encode_fields(dict(vars(instance)), kinds()))
        for name, instance in instances.items()
    }
    return {"results": results, "states": states}


def check(task: BfclTask, calls: list[list[str]]) -> dict[str, Any]:
    """BFCL's eval runner for one multi-turn entry: the turn count, then ``multi_turn_checker``
    (2026.3.23's runner imports ``multi_turn_irrelevance_checker`` but never calls it)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    if len(calls) != len(task.ground_truth):
        return {
            "valid": False,
            "error_type": "multi_turn:force_terminated",
            "error_message": f"{len(calls)} turns of calls for {len(task.ground_truth)} turns",
        }
    decoded = [[turn] if turn else [] for turn in calls]
    entry = {
        "id": task.id,
        "initial_config": task.initial_config,
        "involved_classes": task.involved_classes,
    }
    model = f"envmill_{uuid.uuid4().hex}"
    verdict = multi_turn_checker(decoded, task.ground_truth, entry, task.category, model)
    return {
        "valid": bool(verdict.get("valid")),
        "error_type": str(verdict.get("error_type", "")),
        "error_message": str(verdict.get("error_message", "")),
    }


def _long_context(task: BfclTask) -> bool:
    category = task.id.rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category


OPS = {"initial_state": initial_state, "replay": replay, "check": check}


MEMORY_BYTES = 2 << 30  # BFCL's classes need little; a huge power or precision needs more


def serve() -> None:
    """Answer one JSON line per request until stdin closes; BFCL's prints go to stderr. A
    trajectory's calls are a model's: the child's memory is capped, so one that asks BFCL's
    code for a gigantic number ends its request with a MemoryError (its own time is the
    parent's timeout)."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    time.tzset()
    kinds()  # BFCL's modules loaded, their random and clock replaced, before any request
    out = sys.stdout
    sys.stdout = sys.stderr
    for line in sys.stdin:
        try:
            request = json.loads(line)
            task = BfclTask(**request["task"])
            op = OPS[request["op"]]
            result = op(task) if request["op"] == "initial_state" else op(task, request["calls"])
            reply = {"ok": True, "result": result}
        except Exception as exc:  # one line back to the parent, whatever BFCL raised
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
        out.write(json.dumps(reply) + "\n")
        out.flush()
