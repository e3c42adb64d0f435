"""State-changing probe calls whose resulting states must round-trip (DESIGN §3.1).

In the admission's one sandbox episode, every state-changing tool is called a few times with
plausible arguments (``probe_args``), then every query once. After each call the state must
hold only JSON values (the host checks that), keep exactly the attributes ``__init__`` creates,
and load into a fresh instance unchanged; the run goes on from that reloaded instance. Then the
same calls run again from the default state without reloading, and must give the same results
and states: a tool that keeps state outside the instance (a class attribute or module variable
it changes) or stores a value a saved state does not keep (a tuple) answers differently. Last,
the calls after a midpoint run again in a fresh host loaded with the state before them: what a
module variable or a cache remembers survives a reload in one host, but not a new host.

Many probes fail (``success: False``), which is fine; what they must not do is break the state
contract. Each problem is a line-numbered violation with what to do instead.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.environment import PolicyViolation, ToolSchema
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.envs.policy.names import violation
from envmill.tasks.envs.probe_args import StateFacts, probe_arguments
from envmill.tasks.envs.probe_state import fabricate_state, literal_hints, record_shapes
from envmill.tasks.envs.reading import (
    derive_state_schema,
    instance_names,
    list_tool_methods,
    load_environment,
)
from envmill.tasks.envs.state_values import advice, module_class_kinds, stores
from envmill.tasks.sandbox import SandboxEpisode, ToolOutcome
from envmill.tasks.sandbox.client import episode_room

ROUNDS = 2  # probes per state-changing tool from each start; each query once
_STOPPED = frozenset({"timeout", "killed"})
_GONE = frozenset({"too_large", "protocol", "dead"})
_JSON_ERROR = re.compile(
    r"^(?P<path>(?:state|result).*?) (?:is an? (?P<type>\w+), not a JSON value"
    r"|has a (?P<key>non-string key) .*|is (?P<nan>not a finite number))$",
    re.DOTALL,
)
_RESULT_ERRORS = ("tool returned ", "tool result is not JSON: ")


@dataclass
class ProbeReport:
    """What the probes found, and how much they ran (``complete``: not cut short by a budget)."""

    violations: list[PolicyViolation] = field(default_factory=list)
    calls: int = 0  # probe calls, one host round trip each
    round_trips: int = 0  # states loaded into a fresh instance and compared
    replayed: int = 0  # calls run again in one go from the same start
    complete: bool = True

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "round_trips": self.round_trips,
            "replayed": self.replayed,
            "complete": self.complete,
        }


@dataclass
class _Call:
    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any]
    state: dict[str, Any]


class ToolLines:
    """Where to point a dynamic finding: each tool's ``def`` line and the lines where it writes
    each part of the state (``self.orders[oid] = {"total": ...}`` names the line of "total");
    and the module's classes by kind and its literal hints, for messages and probe arguments."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tree, self.cls = load_environment(source)
        self.hints = literal_hints(self.tree)
        self.class_kinds = module_class_kinds(self.tree)
        init = next((fn for fn in self.cls.body if getattr(fn, "name", "") == "__init__"), None)
        self.init_line: int = (init or self.cls).lineno
        self.defs: dict[str, int] = {}
        self.writes: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        for fn in list_tool_methods(self.cls):
            self.defs[fn.name] = fn.lineno
            found = []
            for path, value in stores(fn, instance_names(fn)):
                found.append((path, value.lineno))
                if isinstance(value, ast.Dict):
                    found += [
                        ((*path, key.value), item.lineno)
                        for key, item in zip(value.keys, value.values, strict=True)
                        if isinstance(key, ast.Constant) and isinstance(key.value, str)
                    ]
            self.writes[fn.name] = sorted(found, key=lambda entry: entry[1])

    def of(self, tool: str, path: list[str] | None = None) -> int:
        """The line in ``tool`` that writes the part of the state at ``path`` most closely,
        else its ``def`` line."""
        best, line = 0, self.defs.get(tool, 1)
        for written, at in self.writes.get(tool, []):
            score = _match(written, path or [])
            if score > best:
                best, line = score, at
        return line


def run_probes(
    episode: SandboxEpisode,
    tools: list[ToolSchema],
    kinds: Mapping[str, str],
    lines: ToolLines,
) -> ProbeReport:
    """Probe a loaded episode from its default state, then from the default state with records
    made up for its empty collections (most tools need one to get past "not found")."""
    run = _ProbeRun(episode, lines)
    schema = derive_state_schema(lines.source, run.default)
    shapes = record_shapes(lines.cls, tools)
    richer = fabricate_state(run.default, schema, tools, lines.hints, shapes)
    schemas = {t.function.name: t.function.parameters for t in tools}
    changes = [name for name in schemas if kinds.get(name) == "state_change"]
    queries = [name for name in schemas if kinds.get(name) != "state_change"]
    plan = [(name, attempt) for attempt in range(ROUNDS) for name in changes]
    starts = [run.default] + ([richer] if richer else [])
    for start in starts:
        if not run.begin(start):
            continue
        last = start is starts[-1]  # queries once, where records exist to query
        for name, attempt in plan + ([(name, 0) for name in queries] if last else []):
            if not run.step(name, schemas[name], attempt):
                return run.report
        if run.report.violations:
            break
        if run.calls:
            run.replay_straight()
            run.resume_in_fresh_host(first_query=len(run.calls) - len(queries) if last else None)
    return run.report


class _ProbeRun:
    def __init__(self, episode: SandboxEpisode, lines: ToolLines) -> None:
        self.episode, self.lines, self.class_kinds = episode, lines, lines.class_kinds
        self.default = episode.state() or {}
        self.start = self.state = self.default
        self.report = ProbeReport()
        self.calls: list[_Call] = []
        self.done: set[str] = set()  # tools that broke the contract once: not probed again
        self.host_calls = 0  # calls the current host has served
        self.served_before = 0  # calls the host had served before the latest call
        limits = episode.sandbox.limits
        self.deadline = time.monotonic() + 4 * limits.wall_seconds + 2

    def begin(self, start: dict[str, Any]) -> bool:
        """Start probing from ``start`` if it loads as it is (a made-up state that does not is
        no finding: it was made from the state schema, which may say too little)."""
        loaded = self.episode.load_state(start)
        if not (loaded.ok and loaded.state == start):
            return False
        self.start = self.state = start
        self.calls = []
        return True

    def step(self, tool: str, parameters: dict[str, Any], attempt: int) -> bool:
        """One probe call; False when the probes must stop (a budget is spent)."""
        if tool in self.done:
            return True
        if not self._has_room():
            self.report.complete = False
            return False
        facts = StateFacts(self.state, self.lines.hints)
        arguments = probe_arguments(parameters, facts, attempt)
        outcome = self._call(tool, arguments)
        if not outcome.ok:
            return self._host_failed(tool, arguments, outcome)
        self._check_result(tool, arguments, outcome.result)
        new = outcome.state or {}
        if not self._same_attributes(tool, arguments, new):
            return self._recover(tool)
        if new != self.state and not self._round_trips(tool, arguments, new):
            return self._recover(tool)
        self.calls.append(_Call(tool, arguments, outcome.result, new))
        self.state = new
        return True

    def replay_straight(self) -> None:
        """The same calls from the same start, in one go with no reloads, must end in the same
        state with the same calls succeeding."""
        steps = [(call.tool, call.arguments) for call in self.calls]
        replay = self.episode.replay(self.start, steps)
        self.report.replayed += len(steps)
        if not replay.ok:
            return
        succeeded = [call.result.get("success") is True for call in self.calls]
        if replay.succeeded != succeeded or replay.state != self.state:
            self._hidden_state()

    def resume_in_fresh_host(self, first_query: int | None) -> None:
        """The calls after a midpoint (the first query, when queries ran) again in a fresh host
        loaded with the state before them, and the same results and states must come back.
        Replays in the probing host cannot see it: a module variable or an ``lru_cache`` that
        tools fill survives there, and makes a later query answer from outside the state."""
        split = first_query if first_query else len(self.calls) // 2
        if not 0 < split < len(self.calls) or self.report.violations:
            return
        start = self.calls[split - 1].state
        episode = self.episode
        with episode.sandbox.episode(episode.source, episode.class_name, start) as fresh:
            if not fresh.load_outcome.ok:
                return
            for call in self.calls[split:]:
                outcome = fresh.call(call.tool, call.arguments)
                self.report.replayed += 1
                if not outcome.ok:
                    return
                if outcome.result != call.result or outcome.state != call.state:
                    self._add_hidden_state(call, *_difference(call, outcome))
                    return

    def _call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        self.served_before = self.host_calls
        outcome = self.episode.call(tool, arguments)
        self.report.calls += 1
        self.host_calls += 1
        if outcome.error_class in _STOPPED | _GONE:
            self.host_calls = 0  # the episode starts a fresh host for the next call
        return outcome

    def _has_room(self) -> bool:
        if time.monotonic() > self.deadline:
            return False
        received = self.episode.received
        last_bytes, last_values = received[-1] if received else (0, 0)
        room_bytes, room_values = episode_room(self.episode.sandbox.limits, received)
        return room_bytes > 4 * last_bytes + 4096 and room_values > 4 * last_values + 100

    def _host_failed(self, tool: str, arguments: dict[str, Any], outcome: ToolOutcome) -> bool:
        error, error_class = outcome.error or "", outcome.error_class
        if error_class in _STOPPED and self.served_before:
            retry = self._call(tool, arguments)  # a host that served many calls may be spent
            if retry.ok:
                return True
            error, error_class = retry.error or "", retry.error_class
        if error_class == "host" and _JSON_ERROR.match(error):
            self._add_json_problem(tool, arguments, error)
        elif error_class in _STOPPED:
            self._add(
                "tool_stopped",
                self.lines.of(tool),
                f"calling {_show(tool, arguments)} was stopped ({error_class}: {error}); make "
                "sure every loop ends and the tool does little work for one call",
            )
        elif error_class == "program":
            self._add(
                "tool_error",
                self.lines.of(tool),
                f"calling {_show(tool, arguments)} ended the program ({error}); return "
                "{'success': False, 'error': ...} instead of raising it",
            )
        else:
            self.report.complete = False
            return False
        return self._recover(tool)

    def _recover(self, tool: str) -> bool:
        """After a broken contract: this tool is not probed again, the others go on from the
        last good state."""
        self.done.add(tool)
        return self.episode.load_state(self.state).ok

    def _check_result(self, tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> None:
        error = result.get("error")
        if result.get("success") is not False or not isinstance(error, str):
            return
        if error.startswith(_RESULT_ERRORS):
            self.done.add(tool)  # one finding per tool is enough to repair it
        if error.startswith(_RESULT_ERRORS[0]):
            self._add(
                "tool_result",
                self.lines.of(tool),
                f"calling {_show(tool, arguments)}: the {error.removeprefix('tool ')}; return a "
                "dict such as {'success': True, 'data': ...} on every path",
            )
        elif error.startswith(_RESULT_ERRORS[1]):
            problem = error.removeprefix(_RESULT_ERRORS[1])
            what, instead = _advice_of(problem, self.class_kinds)
            self._add(
                "tool_result",
                self.lines.of(tool),
                f"calling {_show(tool, arguments)} returned {what} ({problem.split(' ')[0]}); "
                f"return {instead}",
            )

    def _same_attributes(self, tool: str, arguments: dict[str, Any], new: dict[str, Any]) -> bool:
        added = [k for k in new if k not in self.default]
        removed = [k for k in self.default if k not in new]
        for name in added:
            self._add(
                "attribute_outside_init",
                self.lines.of(tool, [name]),
                f"calling {_show(tool, arguments)} created the attribute {name}, which __init__ "
                f"does not; create every attribute a tool writes in __init__ (self.{name} = ...)",
            )
        for name in removed:
            self._add(
                "attribute_deleted",
                self.lines.of(tool),
                f"calling {_show(tool, arguments)} removed the attribute {name}; set it to an "
                "empty value instead (a state keeps every attribute __init__ creates)",
            )
        return not (added or removed)

    def _round_trips(self, tool: str, arguments: dict[str, Any], new: dict[str, Any]) -> bool:
        loaded = self.episode.load_state(new)
        self.report.round_trips += 1
        if loaded.ok and loaded.state == new:
            return True
        if not loaded.ok:
            detail = f"does not load into a fresh instance ({loaded.error})"
        else:
            change = diff_states(new, loaded.state)[0]
            detail = f"loads into a fresh instance changed at {_path(change['path'])}"
        self._add(
            "round_trip",
            self.lines.of(tool),
            f"the state after {_show(tool, arguments)} {detail}; keep only JSON values in "
            "attributes __init__ creates, and no logic in loading",
        )
        return False

    def _hidden_state(self) -> None:
        """Run the calls once more one by one to name the first that answers differently."""
        call, detail, attr = self.calls[-1], "the state ended different", None
        if self.episode.load_state(self.start).ok:
            for candidate in self.calls:
                outcome = self._call(candidate.tool, candidate.arguments)
                if not outcome.ok:
                    break
                if outcome.result != candidate.result or outcome.state != candidate.state:
                    call, (detail, attr) = candidate, _difference(candidate, outcome)
                    break
        self._add_hidden_state(call, detail, attr)

    def _add_hidden_state(self, call: _Call, detail: str, attr: list[str] | None) -> None:
        self._add(
            "hidden_state",
            self.lines.of(call.tool, attr),
            f"calling {_show(call.tool, call.arguments)} again from the same state gave "
            f"{detail}: the environment keeps state outside its instance attributes (a class "
            "attribute, module variable or cache a tool changes) or stores a value a saved state "
            "does "
            "not keep (a tuple); keep all state as JSON values in attributes created in "
            "__init__",
        )

    def _add_json_problem(self, tool: str, arguments: dict[str, Any], error: str) -> None:
        path = _JSON_ERROR.match(error)["path"]  # type: ignore[index]
        what, instead = _advice_of(error, self.class_kinds)
        self._add(
            "state_json",
            self.lines.of(tool, _parts(path)),
            f"calling {_show(tool, arguments)} left {what} in {path}; store {instead}",
        )

    def _add(self, rule: str, line: int, message: str) -> None:
        self.report.violations.append(violation(rule, line, message))


def json_problem(error: str, line: int, class_kinds: dict[str, str]) -> PolicyViolation | None:
    """A violation for a host's "not a JSON value" error on loading the default state."""
    if not _JSON_ERROR.match(error):
        return None
    what, instead = _advice_of(error, class_kinds)
    path = _JSON_ERROR.match(error)["path"]  # type: ignore[index]
    return violation("state_json", line, f"__init__ leaves {what} in {path}; store {instead}")


def _advice_of(error: str, class_kinds: dict[str, str]) -> tuple[str, str]:
    match = _JSON_ERROR.match(error)
    if match is None:
        return "a value that is not JSON", "plain JSON values (dict, list, str, number, None)"
    if match["key"]:
        return advice("key")
    if match["nan"]:
        return advice("nan")
    return advice(match["type"], class_kinds)


def _difference(call: _Call, outcome: ToolOutcome) -> tuple[str, list[str] | None]:
    """("a different state at state.members.GM-0003", its path), else a different result."""
    changes = diff_states(call.state, outcome.state or {})
    if changes and changes[0]["path"]:
        path = changes[0]["path"]
        return f"a different state at {_path(path)}", [str(p) for p in path]
    return "a different result", None


def _match(written: tuple[str, ...], path: list[str]) -> int:
    """How many leading parts of a state path a static write path matches ("*" is any key)."""
    count = 0
    for part, actual in zip(written, path, strict=False):
        if part not in ("*", actual):
            break
        count += 1
    return count


def _parts(path: str) -> list[str]:
    """``state.orders.O-1.lines[0]`` → ["orders", "O-1", "lines", "0"]."""
    text = path.split(".", 1)[1] if "." in path else ""
    return [p for p in re.split(r"\.|\[(\d+)\]", text) if p]


def _show(tool: str, arguments: dict[str, Any], limit: int = 90) -> str:
    text = f"{tool}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    return text if len(text) <= limit else text[: limit - 4] + "...)"


def _path(path: list[Any]) -> str:
    return "state" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
