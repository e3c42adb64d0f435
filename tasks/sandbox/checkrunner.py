"""Check functions evaluated outside the host's own process (runs only inside a sandbox host).

Every evaluation starts from a fresh module namespace, in a process that never ran environment
code (DESIGN §3.3). Checks the static policy proved pure (``pure``: they cannot keep anything
between calls) share one process per request: a child forked from this host evaluates them one
after another and streams each answer as a line, so a scenario costs one fork, not one per
(check, pair). A check that hangs or ends that child is named as the culprit on that pair; a new
child carries on with the rest. Any other check (one sent without the policy's word) gets a
process per evaluation, as a check that can leave marks in the modules it imports (a regex
cache, the decimal context) could otherwise tell its first evaluation from later ones, or
rewrite the runner and forge the answers after its own.

Each check is also probed: run again in one process, its namespace kept and then on heaps moved
at random, a check whose answers change remembers or reads addresses, and is reported
``unstable``. The pairs travel in an order the caller chose at random, and the checks run in
``order``: the other image's request evaluates them the other way round, so two processes
evaluating in two orders must agree (the ``deterministic`` gate). All of it within one time
budget for the whole request, so a checklist of hanging checks costs that budget and not each
check's time over every pair. Stdlib only; imported by the zygote.
"""

from __future__ import annotations

import functools
import gc
import json
import marshal
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

LATE = "no answer within"
SPENT = f"{LATE} the checks' time budget (checks before it used it up)"
RESTED = {"rested": True}  # a shared child's last line: past its CPU share, a new one goes on
MAX_FD = 1 << 16
PROBE_ROUNDS = 4  # in one process: a kept namespace (every pair twice), three on moved heaps
Describe = Callable[[BaseException], str]


@dataclass(frozen=True)
class Clock:
    """Each evaluation's time, and the request's deadline that every evaluation shares."""

    per_check: float
    deadline: float
    # a failed fork evaluates in the host only where the host cannot fork at all (no uid of its
    # own: RLIMIT_NPROC counts the user's every process); elsewhere it is a check that reached
    # the host's limits (a breaker's: prlimit on the host, then every check ran in the host)
    inline: bool = False

    def allow(self, seconds: float) -> float:
        return min(seconds, self.deadline - time.monotonic())


@dataclass(frozen=True)
class Unit:
    """One evaluation (``pair`` >= 0), or the probes of checks (``pair`` -1: ``checks``)."""

    checks: tuple[int, ...]
    pair: int = -1
    watch: bool = False  # whether to report that the check changed its arguments


@dataclass
class Job:
    """A request's checks, pairs and answers so far; the shared child and the host both walk
    ``shared_units`` over it, so a child started after a hang picks up where the last one
    stopped."""

    codes: list[Any]
    errors: list[str | None]
    pairs: list[list[bytes]]
    full_pairs: int
    pure: list[bool]
    order: list[int]
    probe: bool
    describe: Describe
    cells: list[list[dict[str, Any] | None]] = field(default_factory=list)
    probes: dict[int, list[Any] | None] = field(default_factory=dict)
    probe_apart: bool = False  # the checks' probes together gave no answer: one child each
    cpu_share: float = float("inf")  # CPU seconds one shared child spends before a new one

    def __post_init__(self) -> None:
        self.cells = [[None] * len(self.pairs) for _ in self.codes]
        for k, code in enumerate(self.codes):
            if code is None:
                self.cells[k] = [_cell(None, self.errors[k]) for _ in self.pairs]

    def units(self, shared: bool) -> Iterator[Unit]:
        """The evaluations still owed (by the shared child, or one process each), check by
        check in ``order``, each on the pairs in the request's order; then the probes."""
        chosen = [k for k in self.order if self.pure[k] == shared and self.codes[k] is not None]
        for k in chosen:
            for j, cell in enumerate(self.cells[k]):
                if cell is None:
                    yield Unit((k,), j, watch=j < self.full_pairs)
        probed = [k for k in chosen if self.probe and k not in self.probes and not self._hung(k)]
        if shared and probed and not self.probe_apart:
            yield Unit(tuple(probed))
        else:
            yield from (Unit((k,)) for k in probed)

    def run(self, unit: Unit) -> dict[str, Any]:
        """A unit's answer, computed here (in a child)."""
        if unit.pair >= 0:
            (k,) = unit.checks
            return _evaluate(self.codes[k], self.pairs[unit.pair], unit.watch, self.describe)
        codes = [self.codes[k] for k in unit.checks]
        return {"values": _again(codes, self.pairs[: self.probed_pairs], self.describe)}

    def record(self, unit: Unit, answer: dict[str, Any] | None, late: str) -> None:
        """A unit's answer as the host received it; None: late (``late`` says how)."""
        if unit.pair >= 0:
            (k,) = unit.checks
            cell = _cell(None, late, late=True) if answer is None else _received_cell(answer)
            self.cells[k][unit.pair] = cell
            return
        values = (answer or {}).get("values")
        if type(values) is list and len(values) == len(unit.checks):
            for k, answered in zip(unit.checks, values, strict=True):
                self.probes[k] = answered if type(answered) is list else None
        elif len(unit.checks) > 1:
            self.probe_apart = True  # so that one hanging check costs only its own probe
        else:
            self.probes.update(dict.fromkeys(unit.checks))  # its one check: no answer

    def give_up(self, reason: str) -> None:
        """Every evaluation still owed is late for ``reason``; every probe owed, unanswered."""
        for row in self.cells:
            row[:] = [_cell(None, reason, late=True) if c is None else c for c in row]
        owed = [k for k, code in enumerate(self.codes) if self.probe and code is not None]
        self.probes.update({k: None for k in owed if k not in self.probes})

    def evaluations(self, unit: Unit) -> int:
        evaluations = 1 if unit.pair >= 0 else self.probed_pairs * (PROBE_ROUNDS + 1)
        return evaluations * len(unit.checks)

    @property
    def probed_pairs(self) -> int:
        return self.full_pairs if self.probe else 0

    def _hung(self, k: int) -> bool:
        return any(cell is not None and cell["late"] for cell in self.cells[k])

    def unstable(self) -> list[bool]:
        """Whether each check answered otherwise when run again (a probe that gave no answer
        counts as otherwise: the check is not certified)."""
        flags = []
        for k, row in enumerate(self.cells):
            fresh = [cell["value"] for cell in row[: self.probed_pairs] if cell is not None]
            probed = k in self.probes and not self._hung(k)
            flags.append(probed and self.probes[k] != fresh * (PROBE_ROUNDS + 1))
        return flags


def run_checks(request: dict[str, Any], describe: Describe) -> dict[str, Any]:
    """``{"results": check -> pair -> cell, "unstable": per check}``.

    A cell is ``{"value": bool | None, "error", "mutated", "late"}``: ``value`` None when the
    check raised, returned a non-bool, ran out of time or ended its process. On the first
    ``full_pairs`` pairs ``mutated`` says whether it changed its arguments and (``probe``) the
    probes run there.
    """
    per_check = float(request.get("seconds_per_check") or 1.0)
    budget = float(request.get("budget_seconds") or per_check * 1000)
    clock = Clock(per_check, time.monotonic() + budget, inline=bool(request.get("inline")))
    codes, errors = _compile_all(request["checks"], describe)
    count = len(codes)
    job = Job(
        codes=codes,
        errors=errors,
        pairs=_wire_pairs(request["states"], request["pairs"]),
        full_pairs=int(request.get("full_pairs") or 0),
        pure=_flags(request.get("pure"), count),
        order=_order(request.get("order"), count),
        probe=bool(request.get("probe")),
        describe=describe,
        cpu_share=float(request.get("cpu_seconds") or float("inf")) / 2,
    )
    _run_shared(job, clock)
    for unit in job.units(shared=False):
        seconds = clock.allow(clock.per_check * job.evaluations(unit))
        work = functools.partial(job.run, unit)
        answer = _in_child(work, seconds, clock.inline) if seconds > 0 else None
        job.record(unit, answer, _late_reason(clock, job.evaluations(unit), seconds))
    return {"results": job.cells, "unstable": job.unstable()}


def _run_shared(job: Job, clock: Clock) -> None:
    """The pure checks' units in one child, or in as many as hangs make necessary."""
    while next(job.units(shared=True), None) is not None:
        if clock.allow(clock.per_check) <= 0:
            job.give_up(SPENT)
            return
        _one_child(job, clock)


def _one_child(job: Job, clock: Clock) -> None:
    """Fork a child that answers ``job``'s shared units in turn, and record what it says until
    it finishes, or one answer is late (recorded so, after which the child is ended)."""
    answers = _Child.start(lambda write: _answer_units(job, write), clock.inline)
    if answers is None:  # no child: a check lowered the host's limits; fail closed
        job.give_up(f"{LATE} any time: no process could be started for it")
        return
    try:
        for unit in job.units(shared=True):
            seconds = clock.allow(clock.per_check * job.evaluations(unit))
            answer = answers.next(seconds) if seconds > 0 else None
            if answer == RESTED:
                return  # the unit is not answered yet: the next child starts with it
            job.record(unit, answer, _late_reason(clock, job.evaluations(unit), seconds))
            if answer is None:
                return
    finally:
        answers.end()


def _answer_units(job: Job, write: Callable[[dict[str, Any]], None]) -> None:
    """In the shared child: each unit's answer, recorded as the host will record it, so the
    next unit is the one the host expects. No garbage is collected here (a finaliser one
    check left would run inside another's evaluation); past half its CPU limit, the child
    says so and a new one carries on (the limit is a process's: one check must not spend
    another's)."""
    gc.disable()
    for unit in job.units(shared=True):
        if time.process_time() > job.cpu_share:
            write(RESTED)
            return
        answer = job.run(unit)
        write(answer)
        job.record(unit, answer, LATE)


def _late_reason(clock: Clock, evaluations: float, allowed: float) -> str:
    if allowed <= 0:
        return SPENT
    return f"{LATE} {clock.per_check * evaluations:g} s (it hung or ended its process)"


def _compile_all(sources: list[str], describe: Describe) -> tuple[list[Any], list[str | None]]:
    codes, errors = [], []
    for source in sources:
        try:
            codes.append(compile(source, "<check>", "exec", dont_inherit=True))
            errors.append(None)
        except Exception as exc:
            codes.append(None)
            errors.append(describe(exc))
    return codes, errors


def _flags(flags: Any, count: int) -> list[bool]:
    """Per check, whether the policy passed it; anything else counts as not passed."""
    if type(flags) is not list or len(flags) != count:
        return [False] * count
    return [flag is True for flag in flags]


def _order(order: Any, count: int) -> list[int]:
    """The order to evaluate the checks in: a permutation of them, else as given."""
    if type(order) is list and sorted(order) == list(range(count)):
        return list(order)
    return list(range(count))


# marshal without shared references (version 2): its bytes depend only on the value, so they
# tell whether a check changed its arguments (types included: 1, 1.0 and True differ), and
# decode to fresh copies in half json's time.
STATE_FORMAT = 2


def _wire_pairs(states: list[Any], pairs: list[list[int]]) -> list[list[bytes]]:
    """Each pair (two indices into ``states``) as the checks' children copy it: both states
    serialized, each state once."""
    blobs = [marshal.dumps(state, STATE_FORMAT) for state in states]
    return [[blobs[pair[0]], blobs[pair[1]]] for pair in pairs]


def _evaluate(code: Any, pair: list[bytes], watch: bool, describe: Describe) -> dict:
    """The check on fresh copies of the pair's states."""
    initial, final = _fresh(pair)
    value, problem = _call(code, initial, final, describe)
    mutated = watch and (_serialized(initial) != pair[0] or _serialized(final) != pair[1])
    return _cell(value, problem, mutated)


def _again(codes: list[Any], pairs: list[list[bytes]], describe: Describe) -> list[list[Any]]:
    """Per check, its answers over ``pairs``: twice in one kept namespace, then once per
    remaining round in fresh namespaces, the heap moved by a random amount each round (once
    for all checks) and each evaluation."""
    values = []
    for code in codes:
        namespace: dict[str, Any] = {}
        values.append([_call(code, *_fresh(pair), describe, namespace)[0] for pair in pairs * 2])
    ballast = []
    for _ in range(PROBE_ROUNDS - 1):
        ballast.append(_ballast(1 << 12))  # moves the higher address bits (the page's and up)
        for code, answers in zip(codes, values, strict=True):
            for pair in pairs:
                nudge = _ballast(1 << 8)  # and the lower ones, per evaluation
                answers.append(_call(code, *_fresh(pair), describe)[0])
                del nudge
    del ballast
    return values


def _fresh(pair: list[bytes]) -> tuple[Any, Any]:
    return marshal.loads(pair[0]), marshal.loads(pair[1])


def _ballast(scale: int) -> list[Any]:
    """Live objects of random counts below ``scale`` in the size classes checks allocate from
    (bare objects, functions, iterators), so later allocations land at other addresses."""
    a, b, c = (int.from_bytes(os.urandom(2), "little") for _ in range(3))
    return (
        [object() for _ in range(a % scale)]
        + [lambda: 0 for _ in range(b % max(scale // 16, 2))]
        + [iter(()) for _ in range(c % max(scale // 8, 2))]
    )


def _call(
    code: Any,
    initial: Any,
    final: Any,
    describe: Describe,
    namespace: dict | None = None,
) -> tuple[bool | None, str | None]:
    """The check's answer, in a fresh namespace unless one is given to keep; a raise or a
    non-bool counts as False. It is given the two states and nothing else: whatever its
    signature, no reply reaches it (the policy refuses a third parameter besides)."""
    try:
        if namespace is None or "check" not in namespace:
            namespace = {} if namespace is None else namespace
            namespace["__name__"] = "envmill_check"
            exec(code, namespace)  # noqa: S102 - the sandbox is the boundary
        check = namespace.get("check")
        if not callable(check):
            return None, "the source defines no function 'check'"
        returned = check(initial, final)
    except BaseException as exc:  # SystemExit too: it must not end the evaluation unnamed
        return None, describe(exc)
    if type(returned) is bool:
        return returned, None
    return None, f"returned {type(returned).__name__}, not bool"


class _Child:
    """A forked child's stream of answers, one JSON line each, read with a deadline apiece."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd, self.buffer = pid, fd, b""

    @classmethod
    def start(cls, work: Callable[[Callable[[dict], None]], None], inline: bool) -> _Child | None:
        """A child running ``work(write)``; None when none could be forked (``inline``: then
        ``work`` runs here, where a host can never fork, and its answers are read back)."""
        try:
            read_end, write_end = os.pipe()
        except OSError:  # a check lowered the host's limits: fail closed
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(write_end)
            if not inline:
                os.close(read_end)
                return None
            return _Inline.run(work, read_end)
        if pid == 0:  # the child: keep only the pipe (the host's channel is not the child's)
            try:
                os.closerange(3, write_end)
                os.closerange(write_end + 1, MAX_FD)
                work(lambda answer: _write_line(write_end, answer))
            finally:
                os._exit(0)
        os.close(write_end)
        return cls(pid, read_end)

    def next(self, seconds: float) -> dict[str, Any] | None:
        """The next answer, unless it is late, missing, or not what a child writes."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return _answer_of(line)

    def end(self) -> None:
        os.close(self.fd)
        _end(self.pid)


class _Inline(_Child):
    """The answers of work run in the host itself (no fork possible), read as a child's are."""

    @classmethod
    def run(cls, work: Callable[[Callable[[dict], None]], None], read_end: int) -> _Inline:
        lines: list[bytes] = []
        work(lambda answer: lines.append(json.dumps(answer).encode() + b"\n"))
        os.close(read_end)
        child = cls(0, -1)
        child.buffer = b"".join(lines)
        return child

    def next(self, seconds: float) -> dict[str, Any] | None:
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return _answer_of(line)

    def end(self) -> None:
        pass


def _write_line(fd: int, answer: dict[str, Any]) -> None:
    data = json.dumps(answer).encode() + b"\n"
    while data:
        data = data[os.write(fd, data) :]


def _in_child(
    work: Callable[[], dict[str, Any]], seconds: float, inline: bool
) -> dict[str, Any] | None:
    """``work()``'s answer from a child of its own within ``seconds``; None when it hung or
    died, or no child could be forked."""
    child = _Child.start(lambda write: write(work()), inline)
    if child is None:
        return None
    try:
        return child.next(seconds)
    finally:
        child.end()


def _answer_of(line: bytes) -> dict[str, Any] | None:
    try:
        answer = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        return None
    return answer if type(answer) is dict else None


def _received_cell(answer: dict[str, Any]) -> dict[str, Any]:
    """A cell as a child wrote it, in the shape a cell has (``late`` is the host's to say)."""
    value, error = answer.get("value"), answer.get("error")
    if (value is not None and type(value) is not bool) or (
        error is not None and type(error) is not str
    ):
        return _cell(None, "the check's process wrote something that is not an answer")
    return _cell(value, error, answer.get("mutated") is True)


def _end(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _cell(
    value: bool | None, error: str | None, mutated: bool = False, *, late: bool = False
) -> dict[str, Any]:
    """``late``: no answer in time (set here, never taken from what a check's process wrote)."""
    return {"value": value, "error": error, "mutated": mutated, "late": late}


def _serialized(value: Any) -> bytes | None:
    """None when a check put something in a state that has no such form (a function)."""
    try:
        return marshal.dumps(value, STATE_FORMAT)
    except Exception:
        return None
