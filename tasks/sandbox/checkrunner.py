"""Check functions evaluated outside the host's own process (runs only inside a sandbox host).

A fresh namespace is not enough for "nothing one evaluation stores is visible to the next"
(DESIGN §3.3): a check can leave marks in the modules it imports (a regex cache, the decimal
context, a dict inside ``json``) and so tell its first evaluation in a process from later ones,
and behave one way in certification and another when a reward is computed. So every
(check, pair) is evaluated in a process forked for it, in a fresh namespace: the very context in
which any later reward is computed, so what certification saw is what a trainer gets, and no
check can reach into another's evaluation (rewrite the runner, forge the guard's answer).

Each check is also probed in a process that runs it many times, with its namespace kept and on
heaps moved at random: a check whose answers then change remembers, or reads addresses, and is
reported ``unstable``. A request may also ask for one process per check rather than per
evaluation (``apart: false``): the other image's run, whose answers are only compared with the
fresh ones, where a check that remembers can only cause a mismatch, never hide one. A check
that hangs or ends its process is named as the culprit; the others still run, within one time
budget for the whole request, so a checklist of hanging checks costs that budget and not each
check's time over every pair. Stdlib only; imported by the zygote.
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LATE = "no answer within"
NOT_EVALUATED = "not evaluated: a later check already fails on this pair"
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


def run_checks(request: dict[str, Any], describe: Describe) -> dict[str, Any]:
    """``{"results": check -> pair -> cell, "unstable": per check}``.

    A cell is ``{"value": bool | None, "error", "mutated"}``: ``None`` when the check raised,
    returned a non-bool, ran out of time or ended its process. On the first ``full_pairs``
    pairs every check runs, ``mutated`` says whether it changed its arguments, and (``probe``)
    the probes run there. On the pairs after them only full reward is in question: the checks
    run last to first (the guard first) until one does not hold; the rest are not evaluated.
    """
    pairs = [_wire_pair(pair[0], pair[1]) for pair in request["pairs"]]
    full_pairs = int(request.get("full_pairs") or 0)
    probe_pairs = full_pairs if request.get("probe") else 0
    per_check = float(request.get("seconds_per_check") or 1.0)
    budget = float(request.get("budget_seconds") or per_check * 1000)
    clock = Clock(per_check, time.monotonic() + budget, inline=bool(request.get("inline")))
    codes, errors = _compile_all(request["checks"], describe)
    evaluate = _apart if request.get("apart", True) else _together
    rows = [
        evaluate(code, error, pairs[:full_pairs], clock, describe)
        for code, error in zip(codes, errors, strict=True)
    ]
    for pair in pairs[full_pairs:]:
        column = _until_one_fails(codes, errors, pair, clock, describe)
        for row, cell in zip(rows, column, strict=True):
            row.append(cell)
    unstable = []
    for code, row in zip(codes, rows, strict=True):
        fresh = [cell["value"] for cell in row[:probe_pairs]]
        hung = any(cell["late"] for cell in row)  # refused already; no probing
        unstable.append(not hung and _unstable(code, pairs[:probe_pairs], fresh, clock, describe))
    return {"results": rows, "unstable": unstable}


def _apart(code, error, pairs: list[list[str]], clock: Clock, describe) -> list[dict]:
    """The check on each pair, each evaluation in a process of its own."""
    return [_alone(code, error, pair, True, clock, describe) for pair in pairs]


def _together(code, error, pairs: list[list[str]], clock: Clock, describe) -> list[dict]:
    """The check on each pair, in fresh namespaces of one process."""
    if code is None or not pairs:
        return [_cell(None, error) for _ in pairs]
    seconds = clock.allow(clock.per_check * len(pairs))
    work = functools.partial(_evaluate_all, code, pairs, describe)
    answer = (_in_child(work, seconds, clock.inline) if seconds > 0 else None) or {}
    cells = answer.get("cells")
    if type(cells) is list and len(cells) == len(pairs) and all(type(c) is dict for c in cells):
        return [{**cell, "late": False} for cell in cells]
    late = f"{LATE} {clock.per_check * len(pairs):g} s (it hung or ended its process)"
    return [_cell(None, late, late=True) for _ in pairs]


def _evaluate_all(code: Any, pairs: list[list[str]], describe: Describe) -> dict:
    return {"cells": [_evaluate(code, pair, True, describe) for pair in pairs]}


def _alone(code, error, pair: list[str], watch: bool, clock: Clock, describe) -> dict:
    """One check on one pair, in a process of its own; a child that hangs or dies owes a cell
    that names it, and so does one the request's time budget no longer covers."""
    if code is None:
        return _cell(None, error)
    seconds = clock.allow(clock.per_check)
    if seconds <= 0:
        spent = f"{LATE} the checks' time budget (checks before it used it up)"
        return _cell(None, spent, late=True)
    work = functools.partial(_evaluate, code, pair, watch, describe)
    answer = _in_child(work, seconds, clock.inline)
    if answer is None:
        hung = f"{LATE} {clock.per_check:g} s (it hung or ended its process)"
        return _cell(None, hung, late=True)
    return {**answer, "late": False}  # only this process says an answer was late


def _until_one_fails(codes, errors, pair, clock: Clock, describe) -> list[dict]:
    column: list[dict[str, Any] | None] = [None] * len(codes)
    for k in reversed(range(len(codes))):
        cell = column[k] = _alone(codes[k], errors[k], pair, False, clock, describe)
        if cell["value"] is not True:
            break
    skipped = _cell(None, NOT_EVALUATED)
    return [cell if cell is not None else dict(skipped) for cell in column]


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


def _wire_pair(initial: Any, final: Any) -> list[str]:
    """A pair as it travels to a child: both states as JSON text."""
    return [json.dumps(initial, sort_keys=True), json.dumps(final, sort_keys=True)]


def _evaluate(code: Any, pair: list[str], watch: bool, describe: Describe) -> dict:
    """In a child: the check on fresh copies of the pair's states."""
    initial, final = json.loads(pair[0]), json.loads(pair[1])
    value, problem = _call(code, initial, final, describe)
    mutated = watch and (_dumps(initial) != pair[0] or _dumps(final) != pair[1])
    return _cell(value, problem, mutated)


def _unstable(code, pairs: list[list[str]], fresh: list[Any], clock: Clock, describe) -> bool:
    """Whether the check's answers on ``pairs`` change when it runs again in one process (a
    probe the time budget no longer covers counts as a change: the check is not certified)."""
    if code is None or not pairs:
        return False
    evaluations = len(pairs) * (PROBE_ROUNDS + 1)
    seconds = clock.allow(clock.per_check * evaluations)
    work = functools.partial(_again, code, pairs, describe)
    answer = (_in_child(work, seconds, clock.inline) if seconds > 0 else None) or {}
    return answer.get("values") != fresh * (PROBE_ROUNDS + 1)


def _again(code, pairs: list[list[str]], describe) -> dict:
    """In a child: the check twice over the pairs in one kept namespace, then once over them
    per remaining round in fresh namespaces, the heap moved by a random amount each time."""
    namespace: dict[str, Any] = {}
    values = [_call(code, *_fresh(pair), describe, namespace)[0] for pair in pairs * 2]
    ballast = []
    for _ in range(PROBE_ROUNDS - 1):
        ballast.append(_ballast(1 << 14))  # moves the higher address bits
        for pair in pairs:
            nudge = _ballast(1 << 8)  # and the lower ones, per evaluation
            values.append(_call(code, *_fresh(pair), describe)[0])
            del nudge
    del ballast
    return {"values": values}


def _fresh(pair: list[str]) -> tuple[Any, Any]:
    return json.loads(pair[0]), json.loads(pair[1])


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


def _in_child(
    work: Callable[[], dict[str, Any]], seconds: float, inline: bool
) -> dict[str, Any] | None:
    """``work()``'s answer from a forked child within ``seconds``; None when it hung or died,
    or no child could be forked (``inline``: then here, where a host can never fork)."""
    try:
        read_end, write_end = os.pipe()
    except OSError:  # a check lowered the host's limits: fail closed
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return work() if inline else None
    if pid == 0:  # the child: one JSON line, then leave without running any cleanup
        try:  # keep only the pipe: the host's channel to the factory is not the child's to use
            os.closerange(3, write_end)
            os.closerange(write_end + 1, MAX_FD)
            os.write(write_end, json.dumps(work()).encode() + b"\n")
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        return _read_answer(read_end, seconds)
    finally:
        os.close(read_end)
        _end(pid)


def _read_answer(fd: int, seconds: float) -> dict[str, Any] | None:
    """The child's one line, unless it is late, missing, or not what a child writes."""
    buffer, deadline = b"", time.monotonic() + seconds
    while b"\n" not in buffer:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        buffer += chunk
    return _answer_of(buffer.split(b"\n", 1)[0])


def _answer_of(line: bytes) -> dict[str, Any] | None:
    try:
        answer = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        return None
    return answer if type(answer) is dict else None


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


def _dumps(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True)
    except Exception:
        return None
