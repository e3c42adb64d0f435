"""The factory's side of the sandbox: start the zygote, open episodes, run checks.

Nothing here executes generated code. Every failure of a host (timeout, kill, crash, oversized or
malformed reply) comes back as a value with an ``error_class``; the caller's process never sees an
exception from the program, and the next episode runs normally.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox.framing import FrameError, recv_frame, send_frame
from envmill.tasks.sandbox.isolation import (
    UNSHARE_ARGS,
    IsolationLevel,
    resolve_isolation,
)

ZYGOTE = Path(__file__).with_name("zygote.py")
PRECOMPILE_MAX_CHARS = 100_000  # a control datagram must stay well under the socket buffer
HOST_DIED = "the host died (killed by a limit or crashed)"
CONTROL_TIMEOUT_SECONDS = 30.0  # the zygote answers in milliseconds; longer means it is stuck


class SandboxError(RuntimeError):
    """The sandbox itself could not be started or reached (not a failure of a program)."""


@dataclass
class CallOutcome:
    """What one request to a host produced; ``error_class`` is set when the host failed."""

    result: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] | None = None
    error: str | None = None
    error_class: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_class is None


class Sandbox:
    """One zygote per Sandbox (start it once per process); thread-safe."""

    def __init__(self, limits: SandboxLimits | None = None, level: IsolationLevel | None = None):
        """``level`` overrides what ``limits.isolation`` resolves to (benchmarks compare layers)."""
        self.limits = limits or SandboxLimits()
        self.level: IsolationLevel = level or resolve_isolation(self.limits.isolation)
        self._lock = threading.Lock()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._base_dir: str | None = None

    @property
    def isolation(self) -> str:
        return self.level.describe()

    def episode(self, source: str, class_name: str, state: dict[str, Any] | None = None):
        from envmill.tasks.sandbox.episode import Episode

        return Episode(self, source, class_name, state)

    def run_checks(
        self, check_sources: list[str], pairs: list[tuple[dict[str, Any], dict[str, Any]]]
    ) -> CallOutcome:
        """Run each check on each (initial, final) pair in a fresh host with no environment.

        ``outcome.result["results"][i][j]`` is ``{"value": bool | None, "error", "mutated"}``
        for check i on pair j.
        """
        host = self.spawn_host()
        try:
            outcome = host.request({"op": "checks", "checks": check_sources, "pairs": pairs})
        finally:
            host.close()
        rows = outcome.result.get("results") if outcome.ok else None
        if rows is not None and (
            len(rows) != len(check_sources) or any(len(r) != len(pairs) for r in rows)
        ):
            return CallOutcome(
                error="malformed reply: wrong number of check results", error_class="protocol"
            )
        return outcome

    def spawn_host(self, source: str | None = None) -> HostHandle:
        """Fork a host; with ``source``, the zygote compiles it once for every later host."""
        parent_end, child_end = socket.socketpair()
        try:
            with self._lock:
                control = self._ensure_zygote()
                limits = self.limits.model_dump(exclude={"isolation"})
                if source is not None and len(source) > PRECOMPILE_MAX_CHARS:
                    source = None  # the host compiles it for itself
                message = json.dumps({"op": "spawn", "limits": limits, "source": source}).encode()
                socket.send_fds(control, [message], [child_end.fileno()])
                reply = json.loads(control.recv(1 << 16) or b"{}")
        except OSError as exc:  # includes the control timeout: restart the zygote next time
            parent_end.close()
            with self._lock:
                self._stop_zygote()
            raise SandboxError(f"the sandbox zygote is not answering: {exc}") from None
        finally:
            child_end.close()
        if not reply.get("ok"):
            parent_end.close()
            raise SandboxError(f"the sandbox could not start a host: {reply.get('error')}")
        return HostHandle(self, parent_end, reply["pid"])

    def kill_host(self, pid: int) -> None:
        with self._lock:
            if self._control is None:
                return
            try:
                self._control.send(json.dumps({"op": "kill", "pid": pid}).encode())
                self._control.recv(1 << 16)
            except OSError:
                pass

    def _ensure_zygote(self) -> socket.socket:
        if self._control is not None and self._zygote is not None and self._zygote.poll() is None:
            return self._control
        self._stop_zygote()
        self._base_dir = tempfile.mkdtemp(prefix="envmill-sandbox-")
        os.chmod(self._base_dir, 0o711)  # hosts with their own uid must reach their own folder
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = {
            "base_dir": self._base_dir,
            "chroot": self.level.chroot,
            "drop_uid": self.level.drop_uid,
            "pid_namespace": self.level.namespaces,
            "uid_base": 1_000_000 + secrets.randbelow(1 << 20) * 4096,
        }
        prefix = ["unshare", *UNSHARE_ARGS, "--"] if self.level.namespaces else []
        # -S -s: no site-packages; the environment below replaces ours: no PYTHON* variable leaks
        argv = [*prefix, sys.executable, "-S", "-s", str(ZYGOTE), str(theirs.fileno())]
        self._zygote = subprocess.Popen(
            [*argv, json.dumps(config)],
            pass_fds=[theirs.fileno()],
            env={
                "PATH": os.defpath,
                "LANG": "C.UTF-8",
                "PYTHONHASHSEED": "0",
            },  # no keys, no tokens
            cwd=self._base_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        ours.settimeout(CONTROL_TIMEOUT_SECONDS)
        self._control = ours
        return ours

    def _stop_zygote(self) -> None:
        if self._control is not None:
            self._control.close()  # the zygote sees EOF, kills its hosts and exits
            self._control = None
        if self._zygote is not None:
            try:
                self._zygote.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._zygote.kill()
                self._zygote.wait()
            self._zygote = None
        if self._base_dir is not None:
            # rm, not shutil.rmtree: a basic-mode host may leave a tree too deep to recurse into
            subprocess.run(["rm", "-rf", "--one-file-system", "--", self._base_dir], check=False)
            self._base_dir = None

    def close(self) -> None:
        with self._lock:
            self._stop_zygote()

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
    if op in ("load", "state", "set_state", "call") and type(reply.get("state")) is not dict:
        return "no state object"
    if op == "call" and type(reply.get("result")) is not dict:
        return "no result object"
    if op == "checks" and not _check_rows_ok(reply.get("results")):
        return "check results are not rows of {value, error, mutated}"
    return None


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


class HostHandle:
    """One live host process and its channel; dead after a timeout, kill or protocol error."""

    def __init__(self, sandbox: Sandbox, channel: socket.socket, pid: int) -> None:
        self.sandbox, self.channel, self.pid = sandbox, channel, pid
        self.alive = True

    def request(self, message: dict[str, Any]) -> CallOutcome:
        """Send one request; whatever the host does, the answer is a CallOutcome, never a raise."""
        if not self.alive:
            return CallOutcome(error="the host is gone", error_class="dead")
        limits = self.sandbox.limits
        deadline = time.monotonic() + limits.wall_seconds
        self.channel.settimeout(limits.wall_seconds)
        try:
            send_frame(self.channel, message)
            reply = recv_frame(self.channel, limits.max_reply_bytes, deadline)
        except TimeoutError:
            return self._fail("timeout", f"no reply within {limits.wall_seconds:g} s wall time")
        except FrameError as exc:
            if exc.kind != "closed":
                return self._fail(exc.kind, str(exc))
            return self._fail("killed", HOST_DIED)
        except OSError:
            return self._fail("killed", HOST_DIED)
        problem = reply_problem(message["op"], reply)
        if problem:
            return self._fail("protocol", f"malformed reply: {problem}")
        if not reply["ok"]:
            return CallOutcome(
                error=str(reply.get("error")), error_class=str(reply.get("error_class"))
            )
        return CallOutcome(result=reply, state=reply.get("state"))

    def _fail(self, error_class: str, error: str) -> CallOutcome:
        self.close()
        return CallOutcome(error=error, error_class=error_class)

    def close(self) -> None:
        if self.alive:
            self.alive = False
            self.channel.close()
            self.sandbox.kill_host(self.pid)
