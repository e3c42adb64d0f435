"""The factory's side of the sandbox: start the zygote, open episodes, run checks.

Nothing here executes generated code. Every failure of a host (timeout, kill, crash, oversized or
malformed reply) comes back as a value with an ``error_class``; the caller's process never sees an
exception from the program, and the next episode runs normally.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox.forkserver import ZygoteProcess
from envmill.tasks.sandbox.framing import (
    FrameError,
    encode_frame,
    recv_frame,
    send_payload,
)
from envmill.tasks.sandbox.isolation import IsolationLevel, resolve_isolation
from envmill.tasks.sandbox.outcomes import CheckCell, ChecksOutcome, SandboxOutcome

if TYPE_CHECKING:
    from envmill.tasks.sandbox.episode import SandboxEpisode

# one checks request's time in all, in wall_seconds: legitimate checks answer in milliseconds,
# and a checklist of hanging ones must not cost each one's time on every pair
CHECKS_BUDGET = 4
# requests one checks host serves before it is replaced: its own CPU time (reading requests,
# forking) counts against cpu_seconds, and its children's does not
CHECKS_HOST_REQUESTS = 100
MAX_IDLE_KEYS = 4  # programs (and checks hosts) with hosts kept idle at once
CONTROL_MAX_BYTES = 64 << 10  # a control datagram, measured encoded, well under the buffer
HOST_DIED = "the host died (killed by a limit or crashed)"
EPISODE_SPENT = "the episode has received all it may keep (max_episode_bytes, max_episode_values)"
STATE_REPLIES = frozenset({"load", "state", "set_state", "call", "replay"})


class SandboxError(RuntimeError):
    """The sandbox itself could not be started or reached (not a failure of a program)."""


@dataclass(frozen=True)
class HostReply(SandboxOutcome):
    """One reply as the parent accepted it, for this package only: ``payload`` is the host's
    reply object (its keys depend on the request; ``reply_problem`` checked them) when the host
    served the request. Callers get the typed outcomes of ``outcomes.py`` instead."""

    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def state(self) -> dict[str, Any] | None:
        return self.payload.get("state")


class Sandbox:
    """Two zygotes per Sandbox (start it once per process); thread-safe.

    Image 0 serves every episode; image 1 is a separately started zygote whose hosts do not share
    image 0's memory layout, for what must hold "in separate processes" (DESIGN §3.3).
    """

    IMAGES = 2

    def __init__(self, limits: SandboxLimits | None = None, level: IsolationLevel | None = None):
        """``level`` overrides what ``limits.isolation`` resolves to (benchmarks compare layers)."""
        self.limits = limits or SandboxLimits()
        self.level: IsolationLevel = level or resolve_isolation(self.limits.isolation)
        self._lock = threading.Lock()
        self._images = [
            ZygoteProcess(self.level, self.limits.memory_mb) for _ in range(self.IMAGES)
        ]
        self._idle: dict[tuple[Any, ...], list[HostHandle]] = {}  # hosts kept for later, by use

    @property
    def isolation(self) -> str:
        return self.level.describe()

    @property
    def _zygote(self) -> subprocess.Popen[bytes] | None:
        return self._images[0].process

    @property
    def _base_dir(self) -> str | None:
        return self._images[0].base_dir

    def episode(
        self,
        source: str,
        class_name: str,
        state: dict[str, Any] | None = None,
        image: int = 0,
        reuse: bool = False,
    ) -> SandboxEpisode:
        """An episode in a host of its own; with ``reuse``, in an idle host that served an
        earlier ``reuse`` episode of the same program (a fresh instance, the same process: for
        sampling many scenarios of one trusted environment, never where a fresh process is
        what is being checked)."""
        from envmill.tasks.sandbox.episode import SandboxEpisode  # it imports this module

        return SandboxEpisode(self, source, class_name, state, image=image, reuse=reuse)

    def run_checks(
        self,
        check_sources: list[str],
        pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]],
        *,
        image: int = 0,
        full_pairs: int | None = None,
        probe: bool = True,
        pure: Sequence[bool] | None = None,
        reverse: bool = False,
    ) -> ChecksOutcome:
        """Run each check on each (initial, final) pair in a host that never runs environment
        code, every evaluation in a fresh namespace. A check never sees a reply (DESIGN §3.3):
        it is called with the two states alone.

        ``pure[i]``: the static policy passed check i, so it cannot keep anything between
        calls, and it shares one process with the other pure checks of this request; any other
        check gets a process per evaluation (the default, for sources nothing has vetted).
        The pairs travel in a random order the checks cannot predict, the checks in their
        order (``reverse``: the other way round). ``outcome.cells[i][j]`` is check i on pair j.
        On the first ``full_pairs`` pairs (all by default) ``mutated`` is watched and, with
        ``probe``, each check is run again (``outcome.unstable[i]``: it answered differently,
        so it remembers or reads addresses).
        """
        full_pairs = len(pairs) if full_pairs is None else full_pairs
        order = _shuffled(full_pairs) + [full_pairs + j for j in _shuffled(len(pairs) - full_pairs)]
        checks = list(range(len(check_sources)))
        budget = CHECKS_BUDGET * self.limits.wall_seconds
        states, pair_refs = _distinct_states(pairs)
        request = {
            "op": "checks",
            "checks": check_sources,
            "states": states,  # each once: the initial state is in every pair
            "pairs": [pair_refs[j] for j in order],
            "full_pairs": full_pairs,
            "probe": probe,
            "pure": [flag is True for flag in pure] if pure is not None else None,
            "order": checks[::-1] if reverse else checks,
            "seconds_per_check": self.limits.wall_seconds / 2,
            "cpu_seconds": self.limits.cpu_seconds,  # each process's: a shared child's too
            "budget_seconds": budget,
            "inline": not self.level.drop_uid,  # a host without a uid of its own cannot fork
        }
        with self._checks_host(image) as host:
            reply = host.request(request, wall_seconds=self.limits.wall_seconds + budget)
        if not reply.ok:
            return ChecksOutcome(error=reply.error, error_class=reply.error_class)
        rows, unstable = reply.payload["results"], reply.payload.get("unstable")
        if len(rows) != len(check_sources) or any(len(r) != len(pairs) for r in rows):
            return ChecksOutcome(
                error="malformed reply: wrong number of check results", error_class="protocol"
            )
        if type(unstable) is not list or len(unstable) != len(check_sources):
            unstable = [False] * len(check_sources)
        cells = [
            [CheckCell.from_wire(row[order.index(j)]) for j in range(len(pairs))] for row in rows
        ]
        return ChecksOutcome(cells=cells, unstable=unstable)

    @contextmanager
    def _checks_host(self, image: int) -> Iterator[HostHandle]:
        """An idle checks host of ``image``, or a new one; kept for the next request after (each
        request forks its own child for the checks, so a host holds nothing of one request
        into the next). A host that cannot fork evaluates checks itself: it serves one."""
        key = ("checks", image)
        host = self.take_idle(key) or self.spawn_host(image=image, processes=2)
        host.received = []  # the reply budget is a request's, not the host's lifetime's
        try:
            yield host
        finally:
            if self.level.drop_uid:
                self.keep_idle(key, host, CHECKS_HOST_REQUESTS)
            else:
                host.close()

    def take_idle(self, key: tuple[Any, ...]) -> HostHandle | None:
        """A host kept under ``key`` that is still of a live zygote, if any."""
        with self._lock:
            idle = self._idle.get(key) or []
            host = idle.pop() if idle else None
            zygote = self._images[host.image].process if host is not None else None
            # gone with the zygote it was forked from: restarted since, or dead and not yet
            restarted = host is not None and (
                host.zygote is not zygote or zygote is None or zygote.poll() is not None
            )
        if host is not None and restarted:
            host.close()  # its zygote ended it: only the channel is left to close
            return None
        return host

    def keep_idle(self, key: tuple[Any, ...], host: HostHandle, uses: int) -> None:
        """Keep a host that served one more use for the next, until it has served ``uses`` (its
        own CPU time counts against ``cpu_seconds``) or ``MAX_IDLE_KEYS`` others are newer."""
        host.served += 1
        if not host.alive or host.served >= uses:
            host.close()
            return
        with self._lock:
            self._idle.setdefault(key, []).append(host)
            self._idle[key] = self._idle.pop(key)  # the newest last
            old = list(self._idle)[:-MAX_IDLE_KEYS]
            evicted = [h for k in old for h in self._idle.pop(k)]
        for stale in evicted:
            stale.close()

    def spawn_host(
        self, source: str | None = None, image: int = 0, processes: int = 1
    ) -> HostHandle:
        """Fork a host; with ``source``, the zygote compiles it once for every later host.

        ``processes`` > 1 lets the host fork (one evaluation child at a time, for checks)."""
        parent_end, child_end = socket.socketpair()
        zygote = self._images[image]
        try:
            with self._lock:
                control = zygote.ensure()
                limits = {**self.limits.model_dump(exclude={"isolation"}), "processes": processes}
                message = _spawn_message(limits, source)
                socket.send_fds(control, [message], [child_end.fileno()])
                reply = json.loads(control.recv(1 << 16) or b"{}")
        except OSError as exc:  # includes the control timeout: restart the zygote next time
            parent_end.close()
            with self._lock:
                zygote.stop()
            raise SandboxError(f"the sandbox zygote is not answering: {exc}") from None
        finally:
            child_end.close()
        if not reply.get("ok"):
            parent_end.close()
            raise SandboxError(f"the sandbox could not start a host: {reply.get('error')}")
        handle = HostHandle(self, parent_end, reply["pid"], image)
        handle.zygote = zygote.process
        return handle

    def kill_host(self, pid: int, image: int = 0) -> None:
        with self._lock:
            self._images[image].kill_host(pid)

    def release_idle(self) -> None:
        """End the hosts kept for later use (``close`` does it too)."""
        with self._lock:
            idle = [host for hosts in self._idle.values() for host in hosts]
            self._idle = {}
        for host in idle:
            host.close()

    def close(self) -> None:
        self.release_idle()
        with self._lock:
            for zygote in self._images:
                zygote.stop()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reply_problem(op: str, reply: Any) -> str | None:
    """What is wrong with a reply's shape for ``op``, or None: the parent trusts nothing it gets."""
    if type(reply) is not dict or type(reply.get("ok")) is not bool:
        return "not a reply object"
    if not reply["ok"]:
        return None
    if op in STATE_REPLIES and type(reply.get("state")) is not dict:
        return "no state object"
    if op == "call" and type(reply.get("result")) is not dict:
        return "no result object"
    if op == "replay" and not _flags_ok(reply.get("succeeded")):
        return "no list of step outcomes"
    if op == "replays" and not _runs_ok(reply.get("runs")):
        return "no list of runs, each with its step outcomes and end state"
    if op == "checks" and not _check_rows_ok(reply.get("results")):
        return "check results are not rows of {value, error, mutated}"
    if op == "checks" and not _flags_ok(reply.get("unstable", [])):
        return "check flags are not lists of bools"
    return None


def _runs_ok(runs: Any) -> bool:
    """Each run: a flag per step and an end state; traced, a result and a state per step."""
    if type(runs) is not list:
        return False
    for run in runs:
        if type(run) is not dict or type(run.get("state")) is not dict:
            return False
        steps = run.get("succeeded")
        if not isinstance(steps, list) or not _flags_ok(steps):
            return False
        for key in ("results", "states"):
            traced = run.get(key, [{}] * len(steps))
            if type(traced) is not list or len(traced) != len(steps):
                return False
            if any(type(item) is not dict for item in traced):
                return False
    return True


def _check_rows_ok(rows: Any) -> bool:
    if type(rows) is not list:
        return False
    return all(
        type(row) is list
        and all(
            type(cell) is dict
            and (cell.get("value") is None or type(cell.get("value")) is bool)
            and (cell.get("error") is None or type(cell.get("error")) is str)
            and type(cell.get("mutated")) is bool
            for cell in row
        )
        for row in rows
    )


def episode_room(limits: SandboxLimits, received: list[tuple[int, int]]) -> tuple[int, int]:
    """Bytes and JSON values the next reply may have: the per-reply caps, or what is left of
    the episode's (decoded values, not bytes, are what a parent's memory holds)."""
    kept_bytes = sum(size for size, _ in received)
    kept_values = sum(values for _, values in received)
    return (
        min(limits.max_reply_bytes, limits.max_episode_bytes - kept_bytes),
        min(limits.max_reply_values, limits.max_episode_values - kept_values),
    )


def _encoded(message: dict[str, Any]) -> bytes | HostReply:
    """The request's frame, or why it cannot be sent: a state the factory was handed (a model's
    JSON) may hold what no frame carries (a lone surrogate, nesting too deep). Nothing is sent
    then, and the host stays as it was."""
    try:
        return encode_frame(message)
    except (ValueError, TypeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        return HostReply(error=f"the request cannot be sent: {reason}", error_class="protocol")


def _spawn_message(limits: dict[str, Any], source: str | None) -> bytes:
    """The zygote's spawn request; a source too large for one datagram (in bytes, after JSON
    escapes non-ASCII text) is left out, and the host compiles it for itself."""
    message = json.dumps({"op": "spawn", "limits": limits, "source": source}).encode()
    if len(message) > CONTROL_MAX_BYTES:
        message = json.dumps({"op": "spawn", "limits": limits, "source": None}).encode()
    return message


def _distinct_states(
    pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]],
) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """The states of ``pairs``, each object once (the initial state is the same object in
    every pair), and each pair as the indices of its two."""
    index: dict[int, int] = {}
    states = []
    for state in (state for pair in pairs for state in pair):
        if id(state) not in index:
            index[id(state)] = len(states)
            states.append(state)
    return states, [[index[id(initial)], index[id(final)]] for initial, final in pairs]


def _shuffled(count: int) -> list[int]:
    order = list(range(count))
    secrets.SystemRandom().shuffle(order)
    return order


def _flags_ok(flags: Any) -> bool:
    return type(flags) is list and all(type(f) is bool for f in flags)


class HostHandle:
    """One live host process and its channel; dead after a timeout, kill or protocol error."""

    def __init__(self, sandbox: Sandbox, channel: socket.socket, pid: int, image: int = 0):
        self.sandbox, self.channel, self.pid, self.image = sandbox, channel, pid, image
        self.alive = True
        self.received: list[tuple[int, int]] = []  # (bytes, values) of every reply kept
        self.served = 0  # requests answered (a checks host serves many)
        self.zygote: object = None  # the zygote process it was forked from

    def request(self, message: dict[str, Any], wall_seconds: float | None = None) -> HostReply:
        """Send one request; whatever the host does, the answer is a HostReply, never a raise.

        ``wall_seconds`` overrides the limit for a request that does many things (checks)."""
        if not self.alive:
            return HostReply(error="the host is gone", error_class="dead")
        limits = self.sandbox.limits
        wall = wall_seconds or limits.wall_seconds
        deadline = time.monotonic() + wall
        self.channel.settimeout(wall)
        room, values = episode_room(limits, self.received)
        if room <= 0 or values <= 0:
            return self._fail("too_large", EPISODE_SPENT)
        payload = _encoded(message)
        if isinstance(payload, HostReply):
            return payload
        try:
            send_payload(self.channel, payload)
            reply = recv_frame(self.channel, room, deadline, values, self.received)
        except TimeoutError:
            return self._fail("timeout", f"no reply within {wall:g} s wall time")
        except FrameError as exc:
            return self._refused_frame(exc, room, values)
        except OSError:
            return self._fail("killed", HOST_DIED)
        problem = reply_problem(message["op"], reply)
        if problem or not isinstance(reply, dict):  # reply_problem said so: not a dict
            return self._fail("protocol", f"malformed reply: {problem}")
        if not reply["ok"]:
            return HostReply(
                error=str(reply.get("error")), error_class=str(reply.get("error_class"))
            )
        return HostReply(payload=reply)

    def _refused_frame(self, exc: FrameError, room: int, values: int) -> HostReply:
        """A reply the channel refused: too large for what the episode had left spends it."""
        limits = self.sandbox.limits
        if exc.kind == "too_large" and (
            room < limits.max_reply_bytes or values < limits.max_reply_values
        ):
            self.received.append((limits.max_episode_bytes, limits.max_episode_values))
            return self._fail("too_large", EPISODE_SPENT)
        if exc.kind != "closed":
            return self._fail(exc.kind, str(exc))
        return self._fail("killed", HOST_DIED)

    def _fail(self, error_class: str, error: str) -> HostReply:
        self._end(kill=True)  # it may be stuck in the program: the zygote ends it
        return HostReply(error=error, error_class=error_class)

    def close(self) -> None:
        """End a host between requests: it waits on its channel, so the channel's end is its
        end (the zygote reaps it and removes its folder); no round trip to the zygote."""
        self._end(kill=False)

    def _end(self, kill: bool) -> None:
        if self.alive:
            self.alive = False
            self.channel.close()
            if kill:
                self.sandbox.kill_host(self.pid, self.image)
