"""The floor of certification: the sandbox's requests served in this process, unisolated.

``InProcessSandbox`` stands in for ``tasks.sandbox.Sandbox`` wherever certification takes one
(``certify_scenario``): it loads the environment, calls its tools, hands back JSON states and
evaluates every check on fresh copies of every pair, as ``host.py`` (``EnvHost``) and
``checkrunner.py`` do, but with no zygote, host, fork, namespace or channel around the work. What
it costs is the cost of the work itself, the floor a sandboxed certification is measured against
(``bench.certification``). What only a process can show (a timeout, a kill, a limit reached) never
happens here. The probe for unstable checks evaluates each check as often as the sandbox's does
(five times per pair), without moving heaps between rounds.

It runs whatever source it is handed in this interpreter: only trusted sources (the procedural
backend's). That is why it lives in bench/, where neither the CLI nor the package can reach it.
"""

from __future__ import annotations

import functools
import json
import marshal
import sys
from collections.abc import Sequence
from typing import Any

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox import CheckCell, ChecksOutcome, LoadOutcome, ReplayOutcome, ToolOutcome

MODULE_NAME = "envmill_generated"  # as host.py registers it: dataclasses look the module up
PROBE_EVALUATIONS = 5  # per check and pair, as checkrunner.py (PROBE_ROUNDS + 1)
State = dict[str, Any]
Check = tuple[Any, str | None]  # (code, None) or (None, why it did not compile)
Steps = list[tuple[str, dict[str, Any]]]
Pair = tuple[bytes, bytes]  # both states serialized, as a check's process copies them


class HostRefusal(Exception):
    """A request the host refuses (``error_class`` "host"), as host.py's ``HostError``."""


class InProcessEpisode:
    """A ``ToolEpisode`` over an instance in this process; what crosses it is JSON-copied, as
    a host's requests and replies are."""

    def __init__(self, source: str, class_name: str, state: State | None) -> None:
        self.instance: Any = None
        self._state = state
        self.load_outcome = self._outcome(self._load, source, class_name, state)

    @property
    def loaded(self) -> bool:
        return self.load_outcome.ok

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        reply, error, error_class = _attempt(self._call, tool, arguments)
        if reply is None:
            return ToolOutcome.host_failed(error, error_class)
        self._state = reply[1]
        return ToolOutcome(result=reply[0], state=self._state)

    def load_state(self, state: State) -> LoadOutcome:
        self._state = state
        return self._outcome(self._set_state, state)

    def replay(self, state: State, steps: list[tuple[str, dict[str, Any]]]) -> ReplayOutcome:
        reply, error, error_class = _attempt(self._replay, state, steps)
        if reply is None:
            return ReplayOutcome([False] * len(steps), error=error, error_class=error_class)
        self._state = reply[1]
        return ReplayOutcome(reply[0], state=self._state)

    def replays(
        self, starts: list[State], plans: list[tuple[int, Steps]], trace: bool = False, **options
    ) -> list[ReplayOutcome] | None:
        """As host.py's ``replays``: every plan from its start, each step's result and state
        when traced; None when a request would have failed."""
        runs = []
        for start, steps in plans:
            try:
                self._set_state(starts[start])
                results, states = [], []
                for tool, arguments in steps:
                    results.append(self._result(tool, arguments))
                    states.append(self._snapshot() if trace else None)
                self._state = self._snapshot()
            except Exception:  # noqa: BLE001 - a host would have answered with an error
                return None
            succeeded = [result.get("success") is True for result in results]
            traced = {"results": results, "states": states} if trace else {}
            runs.append(ReplayOutcome(succeeded, state=self._state, **traced))
        return runs

    def state(self) -> State | None:
        return self._state

    def _outcome(self, work, *args: Any) -> LoadOutcome:
        state, error, error_class = _attempt(work, *args)
        if state is not None:
            self._state = state
        return LoadOutcome(state=state, error=error, error_class=error_class)

    def _load(self, source: str, class_name: str, state: State | None) -> State:
        module = type(sys)(MODULE_NAME)
        sys.modules[MODULE_NAME] = module
        exec(_compiled(source), vars(module))  # noqa: S102 - trusted sources only (module docstring)
        cls = vars(module).get(class_name)
        if not isinstance(cls, type):
            raise HostRefusal(f"module defines no class {class_name!r}")
        self.instance = cls()
        return self._snapshot() if state is None else self._set_state(state)

    def _set_state(self, state: State) -> State:
        fresh = type(self._require())()  # attributes the state omits keep their defaults
        unknown = sorted(key for key in state if key not in vars(fresh))
        if unknown:
            raise HostRefusal(f"state key {unknown[0]!r} is not an attribute created by __init__")
        for key, value in marshal.loads(marshal.dumps(state)).items():  # as host.py copies it
            setattr(fresh, key, value)
        self.instance = fresh
        return self._snapshot()

    def _call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], State]:
        return self._result(tool, arguments), self._snapshot()

    def _replay(self, state: State, steps) -> tuple[list[bool], State]:
        self._set_state(state)
        succeeded = [self._result(tool, args).get("success") is True for tool, args in steps]
        return succeeded, self._snapshot()

    def _result(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's result as host.py makes it: a raise or a non-dict is a failed call."""
        method = self._tool(tool)
        try:
            result = method(**_json(arguments))
        except Exception as exc:
            result = {"success": False, "error": _describe(exc)}
        if type(result) is not dict:
            return {"success": False, "error": f"tool returned {type(result).__name__}, not a dict"}
        try:
            return _json(result)
        except (TypeError, ValueError) as exc:
            return {"success": False, "error": f"tool result is not JSON: {exc}"}

    def _tool(self, name: Any) -> Any:
        instance = self._require()
        if type(name) is not str or not name.isidentifier() or name.startswith("_"):
            raise HostRefusal(f"{name!r} is not a tool name")
        if not any(name in vars(klass) for klass in type(instance).__mro__[:-1]):
            raise HostRefusal(f"no tool named {name!r}")
        method = getattr(instance, name)
        if not callable(method):
            raise HostRefusal(f"{name!r} is an attribute, not a tool")
        return method

    def _snapshot(self) -> State:
        try:
            return _json(vars(self._require()))
        except (TypeError, ValueError) as exc:
            raise HostRefusal(f"the state is not JSON: {exc}") from None

    def _require(self) -> Any:
        if self.instance is None:
            raise HostRefusal("no environment loaded")
        return self.instance

    def __enter__(self) -> InProcessEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.instance = None


class InProcessSandbox:
    """What certification uses of a ``Sandbox`` (``episode``, ``run_checks``, ``limits``), in
    this process; ``image`` and the other options of the sandboxed runs change nothing here."""

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()

    def episode(
        self, source: str, class_name: str, state: State | None = None, **options: Any
    ) -> InProcessEpisode:
        return InProcessEpisode(source, class_name, state)

    def run_checks(
        self,
        check_sources: list[str],
        pairs: Sequence[tuple[State, State]],
        *,
        full_pairs: int | None = None,
        probe: bool = True,
        **options: Any,
    ) -> ChecksOutcome:
        """As checkrunner.py: every check on every pair, ``mutated`` watched on the first
        ``full_pairs``. With ``probe``, a check is unstable when it answers differently when
        evaluated again on those pairs."""
        full = len(pairs) if full_pairs is None else full_pairs
        checks = [_compile_check(source) for source in check_sources]
        wire = [(_serialized(initial), _serialized(final)) for initial, final in pairs]
        rows = [
            [_evaluate(check, pair, watch=j < full) for j, pair in enumerate(wire)]
            for check in checks
        ]
        unstable = [
            probe and _answers_again(check, wire[:full], row)
            for check, row in zip(checks, rows, strict=True)
        ]
        return ChecksOutcome(cells=rows, unstable=unstable)

    def close(self) -> None:
        pass

    def __enter__(self) -> InProcessSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _evaluate(check: Check, pair: Pair, watch: bool = False) -> CheckCell:
    """One check on fresh copies of one pair's states, in a fresh namespace."""
    code, error = check
    if code is None:
        return CheckCell(value=None, error=error)
    initial, final = marshal.loads(pair[0]), marshal.loads(pair[1])
    value, problem = _call(code, initial, final)
    mutated = watch and (_serialized(initial) != pair[0] or _serialized(final) != pair[1])
    return CheckCell(value, problem, mutated)


def _call(code: Any, initial: State, final: State) -> tuple[bool | None, str | None]:
    """The check's answer; a raise or a non-bool is no answer, with the reason."""
    namespace: dict[str, Any] = {"__name__": "envmill_check"}
    try:
        exec(code, namespace)  # noqa: S102 - trusted sources only (module docstring)
        check = namespace.get("check")
        if not callable(check):
            return None, "the source defines no function 'check'"
        returned = check(initial, final)
    except Exception as exc:
        return None, _describe(exc)
    if type(returned) is not bool:
        return None, f"returned {type(returned).__name__}, not bool"
    return returned, None


@functools.lru_cache(maxsize=16)
def _compiled(source: str) -> Any:
    """An environment compiled once, as the zygote precompiles it for every host it forks."""
    return compile(source, "<environment>", "exec", dont_inherit=True)


def _answers_again(check: Check, pairs: list[Pair], row: list[CheckCell]) -> bool:
    """Whether the check answers otherwise, evaluated again on ``pairs`` as the probe does."""
    fresh = [cell.value for cell in row[: len(pairs)]]
    again = [_evaluate(check, pair).value for pair in pairs * PROBE_EVALUATIONS]
    return again != fresh * PROBE_EVALUATIONS


def _compile_check(source: str) -> Check:
    try:
        return compile(source, "<check>", "exec", dont_inherit=True), None
    except Exception as exc:
        return None, _describe(exc)


def _attempt(work, *args: Any) -> tuple[Any, str | None, str | None]:
    """``work(*args)`` as a host answers it: the value, or None with the error and its class."""
    try:
        return work(*args), None, None
    except HostRefusal as exc:
        return None, str(exc), "host"
    except Exception as exc:
        return None, _describe(exc), "program"


def _json(value: Any) -> Any:
    """What a value is once it has crossed a channel as JSON."""
    return json.loads(json.dumps(value, allow_nan=False))


def _serialized(value: Any) -> bytes | None:
    """As checkrunner.py copies states (marshal without shared references)."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
