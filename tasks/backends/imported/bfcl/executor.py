"""BFCL's own code, run in a child process: initial states, replays and checks.

BFCL's executor ``eval``s call strings, so it never runs in the factory's process. The child
(``python -m envmill.tasks.backends.imported.bfcl.executor``) reads one JSON request per line on
stdin and answers one JSON line on stdout; ``BfclExecutor`` starts it, bounds each request by a
timeout (a child past it is killed and the next request starts a new one) and turns failures
into one-line ``BfclExecutorError``s. The child runs with ``TZ=UTC``, the zone the adapted
modules compute timestamps in, and counts the words each ``random.Random`` draws, so its
instances encode in the adapted modules' state form (``seed``/``drawn``).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import asdict
from typing import Any

from envmill.tasks.backends.imported.bfcl.package import BfclTask

TIMEOUT_SECONDS = 60.0
MAX_REPLY_BYTES = 64 * 1024 * 1024


class BfclExecutorError(RuntimeError):
    """BFCL's executor failed or refused a request; the message is one line."""


class BfclExecutor:
    """A child process running BFCL's executor and checker (a context manager)."""

    def __init__(self, timeout: float = TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self._child: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> BfclExecutor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.kill()
            child.wait()
            for stream in (child.stdin, child.stdout):
                if stream is not None:
                    stream.close()

    def initial_state(self, task: BfclTask) -> dict[str, Any]:
        """BFCL's ``_load_scenario`` on the task's config, as the adapted module's state."""
        return self._ask("initial_state", task)

    def replay(self, task: BfclTask, calls_per_turn: list[list[str]]) -> dict[str, Any]:
        """``{"results": per-turn result strings, "states": {class: public_state}}``."""
        return self._ask("replay", task, calls_per_turn)

    def replay_ground_truth(self, task: BfclTask) -> dict[str, Any]:
        """``replay`` of the task's ground truth; a call that errors is a one-line error."""
        replayed = self.replay(task, task.ground_truth)
        for turn, (calls, results) in enumerate(
            zip(task.ground_truth, replayed["results"], strict=True)
        ):
            for call, result in zip(calls, results, strict=True):
                if result.startswith("Error during execution"):
                    raise BfclExecutorError(
                        f"{task.id}: turn {turn}: ground truth {call} fails in BFCL: {result}"
                    )
        return replayed

    def check(self, task: BfclTask, calls_per_turn: list[list[str]]) -> dict[str, Any]:
        """BFCL's verdict on calls against the ground truth, as its eval runner gives it."""
        return self._ask("check", task, calls_per_turn)

    def _ask(self, op: str, task: BfclTask, calls: list[list[str]] | None = None) -> Any:
        request = {"op": op, "task": asdict(task), "calls": calls}
        child = self._start()
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(request).encode() + b"\n")
            child.stdin.flush()
        except BrokenPipeError:
            self.close()
            raise BfclExecutorError(f"the BFCL executor exited ({op} {task.id})") from None
        line = self._read_line(child, op, task.id)
        reply = json.loads(line)
        if not reply.get("ok"):
            raise BfclExecutorError(f"{task.id}: {op}: {reply.get('error')}")
        return reply["result"]

    def _start(self) -> subprocess.Popen[bytes]:
        if self._child is None or self._child.poll() is not None:
            env = {**os.environ, "TZ": "UTC", "PYTHONHASHSEED": "0"}
            self._child = subprocess.Popen(
                [sys.executable, "-m", "envmill.tasks.backends.imported.bfcl.executor"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        return self._child

    def _read_line(self, child: subprocess.Popen[bytes], op: str, task_id: str) -> bytes:
        assert child.stdout is not None
        deadline = time.monotonic() + self.timeout
        chunks: list[bytes] = []
        size = 0
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self.close()
                    raise BfclExecutorError(f"{task_id}: {op} took over {self.timeout:g} s")
                chunk = os.read(child.stdout.fileno(), 1 << 16)
                if not chunk:
                    self.close()
                    raise BfclExecutorError(f"{task_id}: the BFCL executor exited during {op}")
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    self.close()
                    raise BfclExecutorError(f"{task_id}: {op} replied over {MAX_REPLY_BYTES} bytes")
                if chunk.endswith(b"\n"):
                    return b"".join(chunks)


if __name__ == "__main__":
    from envmill.tasks.backends.imported.bfcl.child import serve

    serve()
