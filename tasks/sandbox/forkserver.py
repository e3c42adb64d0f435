"""One zygote process and its control channel, as the parent sees it.

A ``Sandbox`` keeps two of these, started independently: hosts forked from one zygote share its
memory layout (object addresses, say), so a check or a replay that must behave the same "in
separate processes" is run once in a host of each (DESIGN §3.3).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from envmill.tasks.core.scratch import owned_tempdir
from envmill.tasks.sandbox.isolation import UNSHARE_ARGS, IsolationLevel, seccomp_module

ZYGOTE = Path(__file__).with_name("zygote.py")
CONTROL_TIMEOUT_SECONDS = 30.0  # the zygote answers in milliseconds; longer means it is stuck


class ZygoteProcess:
    """Starts on first use, restarts when it died; not thread-safe (the Sandbox locks)."""

    def __init__(self, level: IsolationLevel, memory_mb: int) -> None:
        self.level, self.memory_mb = level, memory_mb
        self.process: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None
        self.base_dir: str | None = None

    def ensure(self) -> socket.socket:
        """The control socket of a live zygote, starting one if needed."""
        if self.control is not None and self.process is not None and self.process.poll() is None:
            return self.control
        self.stop()
        self.base_dir = owned_tempdir("sandbox")  # named after us: reaped if we die by SIGKILL
        os.chmod(self.base_dir, 0o711)  # hosts with their own uid must reach their own folder
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        prefix = ["unshare", *UNSHARE_ARGS, "--"] if self.level.namespaces else []
        # -S -s: no site-packages; the environment below replaces ours: no PYTHON* variable leaks
        argv = [*prefix, sys.executable, "-S", "-s", str(ZYGOTE), str(theirs.fileno())]
        self.process = subprocess.Popen(
            argv,  # the configuration travels on the channel: a command line is public
            pass_fds=[theirs.fileno()],
            env={"PATH": os.defpath, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},  # no keys
            cwd=self.base_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        ours.settimeout(CONTROL_TIMEOUT_SECONDS)
        ours.send(json.dumps(self._config()).encode())
        self.control = ours
        return ours

    def _config(self) -> dict[str, Any]:
        return {
            "base_dir": self.base_dir,
            "chroot": self.level.chroot,
            "drop_uid": self.level.drop_uid,
            "pid_namespace": self.level.namespaces,
            "uid_base": 1_000_000 + secrets.randbelow(1 << 20) * 4096,
            "seccomp_module": seccomp_module() if self.level.seccomp else None,
            "memory_mb": self.memory_mb,
        }

    def kill_host(self, pid: int) -> None:
        if self.control is None:
            return
        try:
            self.control.send(json.dumps({"op": "kill", "pid": pid}).encode())
            self.control.recv(1 << 16)
        except OSError:
            pass

    def stop(self) -> None:
        if self.control is not None:
            self.control.close()  # the zygote sees EOF, kills its hosts and exits
            self.control = None
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.base_dir is not None:
            # rm, not shutil.rmtree: a basic-mode host may leave a tree too deep to recurse into
            subprocess.run(["rm", "-rf", "--one-file-system", "--", self.base_dir], check=False)
            self.base_dir = None
