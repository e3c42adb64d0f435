"""The child side of one episode: one environment instance, served over a JSON channel.

This file runs only inside a sandboxed host process, never in the factory. It is stdlib-only and
imported by the zygote before the host is locked down, so it needs nothing from the filesystem.
Every reply is plain JSON built here; the program's stdout, stderr and stdin are /dev/null.
"""

from __future__ import annotations

import json
import marshal
import math
import socket
import sys
from typing import Any

from checkrunner import run_checks
from framing import FrameError, recv_frame, send_frame, send_text

MAX_REQUEST_BYTES = 256 << 20
MAX_ERROR_CHARS = 2000
MODULE_NAME = "envmill_generated"
SOURCE_NAME = "<environment>"


class HostError(Exception):
    """A request this host cannot serve (bad program, unknown tool, bad state); sent as a reply."""


SCALARS = (str, int, bool, type(None))


def check_json(value: Any, where: str) -> None:
    """Refuse what would not survive a JSON round trip unchanged (non-str keys, NaN, objects).
    Every state and result is checked: the walk that names where it failed runs only then."""
    if not _plain_json(value):
        _name_what_is_not_json(value, where)


def _plain_json(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if not all(type(key) is str for key in item):
                return False
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif kind not in SCALARS:
            return False
    return True


def _name_what_is_not_json(value: Any, where: str) -> None:
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
COMPILED: dict[str, Any] = {}  # source -> code, least recently spawned first
MAX_COMPILED = 8  # the zygote keeps these; hostile sources may fold into large constants
# A source no host was spawned with in this many spawns is dropped: every new host frees the
# others' code (a millisecond for eight large modules), and a run works on a few at a time.
IDLE_SPAWNS = 16
_LAST_SPAWN: dict[str, int] = {}
_spawns = 0


def precompile(source: str) -> None:
    """Compile (never run) a module once in the zygote; every host forked later reuses it."""
    global _spawns
    _spawns += 1
    if source in COMPILED:
        COMPILED[source] = COMPILED.pop(source)
    else:
        try:
            COMPILED[source] = compile(source, SOURCE_NAME, "exec", dont_inherit=True)
        except Exception:  # the host reports the error when it compiles for itself
            return
    _LAST_SPAWN[source] = _spawns
    for old in list(COMPILED):
        if len(COMPILED) <= MAX_COMPILED and _LAST_SPAWN[old] > _spawns - IDLE_SPAWNS:
            break
        del COMPILED[old], _LAST_SPAWN[old]


def forget_compiled(but: str | None) -> None:
    """In a new host: no code of other hosts' sources (the zygote's cache), only its own."""
    own = COMPILED.get(but) if but else None
    COMPILED.clear()
    _LAST_SPAWN.clear()
    if but and own is not None:
        COMPILED[but] = own


def exec_module(source: str, filename: str) -> dict[str, Any]:
    """Run a module as a real module registered under its name, as an import would: the stdlib
    looks a class's module up there (``dataclasses`` resolves string annotations through
    ``sys.modules[cls.__module__]``), and finds None otherwise."""
    module = type(sys)(MODULE_NAME)
    sys.modules[MODULE_NAME] = module
    code = COMPILED.get(source) or compile(source, filename, "exec", dont_inherit=True)
    exec(code, vars(module))  # noqa: S102 - the sandbox is the boundary
    return vars(module)


def describe_program_error(exc: BaseException) -> str:
    """``line N: Type: message`` with the environment line that raised (the innermost one in the
    module), so a refused load names the line to fix; without one, ``Type: message``."""
    line = exc.lineno if isinstance(exc, SyntaxError) and exc.filename == SOURCE_NAME else None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SOURCE_NAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    text = describe_exception(exc)
    return f"line {line}: {text}" if line else text


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
            "replays": self.replays,
            "checks": lambda request: run_checks(request, describe_exception),
        }.get(op if isinstance(op, str) else "")
        if handler is None:
            raise HostError(f"unknown request {op!r}")
        return handler(request)

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        namespace = exec_module(request["source"], SOURCE_NAME)
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

    def replays(self, request: dict[str, Any]) -> dict[str, Any]:
        """Many plans, each from one of ``starts`` (by index), in one round trip: whether each
        step succeeded and where each plan ended (``trace``: also each step's result and the
        state after it). Certification replays a scenario's reference, then all its variants."""
        trace, runs = bool(request.get("trace")), []
        for plan in request["plans"]:
            self.set_state({"state": _fresh_start(request["starts"][plan["start"]])})
            results, states = [], []
            for step in plan["steps"]:
                reply = self.call(step, state=trace)
                # a result may be the live record a later step changes (``self.items[id]``)
                results.append(_copied(reply["result"]) if trace else reply["result"])
                states.append(_copied(reply["state"]) if trace else None)
            run = {"succeeded": [r.get("success") is True for r in results], **self.state({})}
            runs.append({**run, "results": results, "states": states} if trace else run)
        return {"runs": runs}

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


def _fresh_start(state: Any) -> Any:
    """A copy of a start the request carried (JSON values only: marshal copies them exactly,
    in a fraction of JSON's time), so no plan changes another's."""
    return marshal.loads(marshal.dumps(state))


def _copied(value: Any) -> Any:
    """A JSON value no later call can change (a state the host keeps, or is handed)."""
    return json.loads(json.dumps(value))


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
            error = f"reply of {len(payload)} bytes exceeds the limit"
            payload = json.dumps({"ok": False, "error": error, "error_class": "too_large"})
        try:
            send_text(sock, payload)  # written once: replies carry whole states
        except UnicodeEncodeError:  # a lone surrogate in a result: no frame can carry it
            invalid = "the reply holds text that is not valid Unicode"
            send_frame(sock, {"ok": False, "error": invalid, "error_class": "protocol"})


def _answer(host: EnvHost, request: Any) -> dict[str, Any]:
    try:
        if type(request) is not dict:
            raise HostError("request is not an object")
        return {"ok": True, **host.handle(request)}
    except HostError as exc:
        return {"ok": False, "error": str(exc), "error_class": "host"}
    except BaseException as exc:  # SystemExit, KeyboardInterrupt raised by the program too
        return {"ok": False, "error": describe_program_error(exc), "error_class": "program"}
