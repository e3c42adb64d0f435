"""Which isolation layers this platform grants, probed once per process.

The layers stack: rlimits and a scrubbed environment always; a network and pid namespace when
``unshare`` works; chroot into the host's empty directory and a uid of its own when we are root.
Where a layer is refused we fall back and say so: ``describe()`` goes into ``envmill doctor`` and
every run record.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Literal

IsolationMode = Literal["auto", "full", "basic"]
UNSHARE_ARGS = ("--net", "--pid", "--ipc", "--uts", "--mount", "--fork", "--kill-child")


@dataclass(frozen=True)
class IsolationLevel:
    namespaces: bool  # no network, IPC, hostname or mounts of the machine; hosts die with it
    chroot: bool  # the filesystem is the host's empty directory
    drop_uid: bool  # a uid per host: RLIMIT_NPROC binds, leftovers are swept by uid
    seccomp: bool = False  # no exec, IPC, keyrings, sockets or namespaces (syscalls.py)

    def describe(self) -> str:
        layers = ["rlimits", "scrubbed-env", "tmp-cwd"]
        layers += ["netns", "pidns", "ipcns", "utsns", "mntns"] if self.namespaces else []
        layers += ["chroot"] if self.chroot else []
        layers += ["uid-per-host", "nproc"] if self.drop_uid else []
        layers += ["seccomp"] if self.seccomp else []
        return "+".join(layers)


@functools.cache
def unshare_works() -> bool:
    path = shutil.which("unshare")
    if path is None:
        return False
    try:
        probe = subprocess.run([path, *UNSHARE_ARGS, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@functools.cache
def seccomp_module() -> str | None:
    """The file of the libseccomp binding the zygote loads, when it and libseccomp are here."""
    try:
        import pyseccomp  # noqa: PLC0415 - optional: loads libseccomp through ctypes
    except (ImportError, OSError, RuntimeError):
        return None
    return pyseccomp.__file__


def resolve_isolation(mode: IsolationMode) -> IsolationLevel:
    """``auto`` takes every layer the platform grants; ``basic`` forces the fallback path."""
    if mode == "basic":
        return IsolationLevel(namespaces=False, chroot=False, drop_uid=False)
    root = os.geteuid() == 0
    level = IsolationLevel(
        namespaces=unshare_works(), chroot=root, drop_uid=root, seccomp=bool(seccomp_module())
    )
    if mode == "full" and not all(vars(level).values()):
        raise RuntimeError(
            f"full isolation was asked for, but this platform grants only {level.describe()}"
        )
    return level
