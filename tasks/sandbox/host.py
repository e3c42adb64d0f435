"""The child side of one episode: one environment instance, served over a JSON channel.

This file runs only inside a sandboxed host process, never in the factory. It is stdlib-only and
imported by the zygote before the host is locked down, so it needs nothing from the filesystem.
Every reply is plain JSON built here; the program's stdout, stderr and stdin are /dev/null.
"""

from __future__ import annotations

import json
import math
import os
import socket
from typing import Any

from framing import FrameError, recv_frame, send_frame

MAX_REQUEST_BYTES = 256 << 20
JITTER_ROUNDS = 4  # with 3 probed pairs, a check on one address bit goes unseen 1 time in 4096
MAX_ERROR_CHARS = 2000


class HostError(Exception):
    """A request this host cannot serve (bad program, unknown tool, bad state); sent as a reply."""


def check_json(value: Any, where: str) -> None:
    """Refuse what would not survive a JSON round trip unchanged (non-str keys, NaN, objects)."""
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str:
                    raise HostError(f"{path} has a non-string key {key!r}")
                stack.append((child, f"{path}.{key}"))
        elif kind is list or kind is tuple:
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
        elif kind is float and not math.isfinite(item):
            raise HostError(f"{path} is not a finite number")
        elif kind not in (str, int, float, bool, type(None)):
            raise HostError(f"{path} is a {kind.__name__}, not a JSON value")


def describe_exception(exc: BaseException) -> str:
    """``Type: message``, shortened: an error text must not become a way to flood the channel."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "…"


# Filled by the zygote before it forks, so a host inherits the code object instead of compiling.
COMPILED: dict[str, Any] = {}
MAX_COMPILED = 64


def precompile(source: str) -> None:
    """Compile (never run) a module once in the zygote; every host forked later reuses it."""
    if source in COMPILED:
        return
    if len(COMPILED) >= MAX_COMPILED:
        COMPILED.pop(next(iter(COMPILED)))
    try:
        COMPILED[source] = compile(source, "<environment>", "exec", dont_inherit=True)
    except Exception:  # the host reports the error when it compiles for itself
        pass


def exec_module(source: str, filename: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "envmill_generated"}
    code = COMPILED.get(source) or compile(source, filename, "exec", dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - the sandbox is the boundary
    return namespace


class EnvHost:
    """Holds one environment instance across the calls of an episode."""

    def __init__(self) -> None:
        self.instance: Any = None

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        handler = {
            "load": self.load,
            "call": self.call,
            "state": self.state,
            "set_state": self.set_state,
            "replay": self.replay,
            "checks": run_checks,
        }.get(op)
        if handler is None:
            raise HostError(f"unknown request {op!r}")
        return handler(request)

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        namespace = exec_module(request["source"], "<environment>")
        cls = namespace.get(request["class_name"])
        if not isinstance(cls, type):
            raise HostError(f"module defines no class {request['class_name']!r}")
        self.instance = cls()
        if request.get("state") is not None:
            self.set_state(request)
        return self.state(request)

    def state(self, _request: dict[str, Any]) -> dict[str, Any]:
        state = vars(self._require_instance())
        check_json(state, "state")
        return {"state": state}

    def set_state(self, request: dict[str, Any]) -> dict[str, Any]:
        instance, state = self._require_instance(), request["state"]
        # A state is loaded into a fresh instance, so attributes it omits keep their defaults.
        fresh = type(instance)()
        unknown = sorted(k for k in state if k not in vars(fresh))
        if unknown:
            raise HostError(f"state key {unknown[0]!r} is not an attribute created by __init__")
        for key, value in state.items():
            setattr(fresh, key, value)
        self.instance = fresh
        return self.state(request)

    def call(self, request: dict[str, Any], state: bool = True) -> dict[str, Any]:
        method = self._tool(request["tool"])
        try:
            result = method(**request.get("arguments", {}))
        except Exception as exc:  # a tool should not raise; when one does, the episode goes on
            result = {"success": False, "error": describe_exception(exc)}
        if type(result) is not dict:
            result = {
                "success": False,
                "error": f"tool returned {type(result).__name__}, not a dict",
            }
        try:
            check_json(result, "result")
        except HostError as exc:
            result = {"success": False, "error": f"tool result is not JSON: {exc}"}
        return {"result": result, **(self.state(request) if state else {})}

    def replay(self, request: dict[str, Any]) -> dict[str, Any]:
        """Load a state, run several calls, answer once: whether each succeeded, and the end
        state (certification replays dozens of variants; one round trip each keeps it cheap)."""
        self.set_state(request)
        succeeded = []
        for step in request["steps"]:
            reply = self.call({"tool": step["tool"], "arguments": step["arguments"]}, state=False)
            succeeded.append(reply["result"].get("success") is True)
        return {"succeeded": succeeded, **self.state(request)}

    def _tool(self, name: Any) -> Any:
        instance = self._require_instance()
        if type(name) is not str or not name.isidentifier() or name.startswith("_"):
            raise HostError(f"{name!r} is not a tool name")
        if not any(name in vars(klass) for klass in type(instance).__mro__[:-1]):
            raise HostError(f"no tool named {name!r}")
        method = getattr(instance, name)
        if not callable(method):
            raise HostError(f"{name!r} is an attribute, not a tool")
        return method

    def _require_instance(self) -> Any:
        if self.instance is None:
            raise HostError("no environment loaded")
        return self.instance


def run_checks(request: dict[str, Any]) -> dict[str, Any]:
    """Run each check source on each (initial, final) pair, on fresh copies of the states.

    Every evaluation executes the check's module in a fresh namespace, so nothing one evaluation
    stores is visible to the next (DESIGN §3.3). A check that raises or returns a non-bool yields
    ``None``; ``mutated`` says whether it changed its arguments. On the first ``probe_pairs``
    pairs each check is also probed: run twice in one kept namespace (a check whose answers then
    differ remembers between calls: ``stateful``), and run again fresh after the heap has been
    shifted by a random amount (a check whose answers then differ depends on object addresses
    or other accidents of the process: ``unstable``).
    """
    pairs = [
        (json.dumps(a, sort_keys=True), json.dumps(b, sort_keys=True)) for a, b in request["pairs"]
    ]
    probe_pairs = int(request.get("probe_pairs") or 0)
    rows, stateful, unstable = [], [], []
    for source in request["checks"]:
        row, flags = _run_one_check(source, pairs, probe_pairs)
        rows.append(row)
        stateful.append(flags[0])
        unstable.append(flags[1])
    return {"results": rows, "stateful": stateful, "unstable": unstable}


def _run_one_check(
    source: str, pairs: list[tuple[str, str]], probe_pairs: int
) -> tuple[list[dict[str, Any]], tuple[bool, bool]]:
    try:
        code = compile(source, "<check>", "exec", dont_inherit=True)
        _load_check(code)
    except Exception as exc:
        error = describe_exception(exc)
        return [{"value": None, "error": error, "mutated": False} for _ in pairs], (False, False)
    cells = [
        _evaluate(_load_check(code), pair, watch=index < probe_pairs)
        for index, pair in enumerate(pairs)
    ]
    fresh = [cell["value"] for cell in cells[:probe_pairs]]
    return cells, (
        _remembers(code, pairs[:probe_pairs], fresh),
        _wanders(code, pairs[:probe_pairs], fresh),
    )


def _remembers(code: Any, pairs: list[tuple[str, str]], fresh: list[Any]) -> bool:
    kept, parsed = _load_check(code), _parsed(pairs)
    return any([_call(kept, *states)[0] for states in parsed] != fresh for _ in range(2))


def _wanders(code: Any, pairs: list[tuple[str, str]], fresh: list[Any]) -> bool:
    parsed = _parsed(pairs)
    for _ in range(JITTER_ROUNDS):
        for states, expected in zip(parsed, fresh, strict=True):
            check = _load_check(code)
            ballast = _heap_jitter()
            answer = _call(check, *states)[0]
            del ballast  # freed before the next round moves the heap again
            if answer != expected:
                return True
    return False


def _parsed(pairs: list[tuple[str, str]]) -> list[tuple[Any, Any]]:
    """One parsed copy per pair for all the probe's evaluations: a check that changes its
    arguments is refused for that already, so sharing them cannot hide anything."""
    return [(json.loads(a), json.loads(b)) for a, b in pairs]


def _heap_jitter() -> list[Any]:
    """Live objects of a random count in the small size classes, so the check's allocations
    land at other addresses than in its first evaluation."""
    count = os.urandom(1)[0]
    return [(object(), [], {}) for _ in range(count)]


def _load_check(code: Any) -> Any:
    namespace: dict[str, Any] = {"__name__": "envmill_check"}
    exec(code, namespace)  # noqa: S102 - the sandbox is the boundary
    check = namespace.get("check")
    if not callable(check):
        raise HostError("the source defines no function 'check'")
    return check


def _evaluate(check: Any, pair: tuple[str, str], watch: bool = True) -> dict[str, Any]:
    """One evaluation on fresh copies; ``watch``: also report whether the check changed them."""
    initial_json, final_json = pair
    initial, final = json.loads(initial_json), json.loads(final_json)
    value, error = _call(check, initial, final)
    mutated = watch and (
        _dumps_or_none(initial) != initial_json or _dumps_or_none(final) != final_json
    )
    return {"value": value, "error": error, "mutated": mutated}


def _call(check: Any, initial: Any, final: Any) -> tuple[bool | None, str | None]:
    """The check's answer, or None with the reason: a raise or a non-bool counts as False."""
    try:
        returned = check(initial, final)
    except Exception as exc:
        return None, describe_exception(exc)
    if type(returned) is bool:
        return returned, None
    return None, f"returned {type(returned).__name__}, not bool"


def _dumps_or_none(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True)
    except Exception:
        return None


def serve(sock: socket.socket, max_reply_bytes: int) -> None:
    """Answer requests until the parent closes the channel."""
    host = EnvHost()
    while True:
        try:
            request = recv_frame(sock, MAX_REQUEST_BYTES)
        except FrameError:
            return
        reply = _answer(host, request)
        payload = json.dumps(reply, ensure_ascii=False, allow_nan=False)
        if len(payload) > max_reply_bytes:
            reply = {
                "ok": False,
                "error": f"reply of {len(payload)} bytes exceeds the limit",
                "error_class": "too_large",
            }
        send_frame(sock, reply)


def _answer(host: EnvHost, request: Any) -> dict[str, Any]:
    try:
        if type(request) is not dict:
            raise HostError("request is not an object")
        return {"ok": True, **host.handle(request)}
    except HostError as exc:
        return {"ok": False, "error": str(exc), "error_class": "host"}
    except Exception as exc:
        return {"ok": False, "error": describe_exception(exc), "error_class": "program"}
    except BaseException as exc:  # SystemExit, KeyboardInterrupt raised by the program
        return {"ok": False, "error": describe_exception(exc), "error_class": "program"}
