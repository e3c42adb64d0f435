"""Fork server for sandbox hosts: a lean, single-threaded process that forks one host per episode.

Run by the parent as ``python -S -s zygote.py CONTROL_FD`` (inside ``unshare --net
--pid`` when the platform allows), never imported by the factory. Stdlib only. Forking from here is
~10x cheaper than starting an interpreter per host, and safe, since nothing here runs threads.

Each host, right after the fork: starts its own session, keeps only its channel (stdio becomes
/dev/null), moves into a fresh empty directory (chroot to it when root), sets its resource limits,
drops to a uid of its own (so RLIMIT_NPROC binds even for root), and serves JSON requests.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Everything generated code may import is loaded now: a chrooted host cannot read the stdlib.
import __future__  # noqa: E402,F401

import _strptime  # noqa: E402,F401  (datetime.strptime imports it lazily)
import collections.abc  # noqa: E402,F401
import copy  # noqa: E402,F401
import dataclasses  # noqa: E402,F401
import datetime  # noqa: E402,F401
import decimal  # noqa: E402,F401
import enum  # noqa: E402,F401
import functools  # noqa: E402,F401
import itertools  # noqa: E402,F401
import json  # noqa: E402
import math  # noqa: E402,F401
import re  # noqa: E402,F401
import resource  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import string  # noqa: E402,F401
import tempfile  # noqa: E402
import time  # noqa: E402,F401  (the check runner's deadlines)
import typing  # noqa: E402,F401

import host  # noqa: E402
import syscalls  # noqa: E402

UID_SPAN = 4096
REAP_INTERVAL_SECONDS = 0.5


class Zygote:
    """Forks hosts on request, kills them on request, and reaps and cleans up after them."""

    def __init__(self, config: dict, installer: typing.Any) -> None:
        self.config, self.installer = config, installer
        # pid -> (workdir, uid of its own or None, whether it may fork)
        self.hosts: dict[int, tuple[str, int | None, bool]] = {}
        self.next_uid = 0

    def serve(self, control: socket.socket, parent: int) -> None:
        """Answer requests until the parent closes the channel or, without a pid namespace
        (``parent`` is then its pid, else 0), is gone: a control socket inherited by some other
        process would otherwise keep the zygote and its hosts alive after a ``kill -9``."""
        while True:
            readable, _, _ = select.select([control], [], [], REAP_INTERVAL_SECONDS)
            self.reap()
            if parent and os.getppid() != parent:
                return
            if not readable:
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(control, 1 << 20, 1)
            except OSError:
                data, fds = b"", []
            if not data:
                return
            try:
                reply = self.handle(json.loads(data), fds)
            except Exception as exc:
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            control.send(json.dumps(reply).encode())

    def handle(self, request: dict, fds: list[int]) -> dict:
        if request["op"] == "spawn":
            source = request.get("source")
            if source:
                host.precompile(source)
            return {"ok": True, "pid": self.spawn(request["limits"], fds[0], source)}
        if request["op"] == "kill":
            self.kill(request["pid"])
            return {"ok": True}
        return {"ok": False, "error": f"unknown op {request['op']!r}"}

    def spawn(self, limits: dict, channel_fd: int, source: str | None) -> int:
        uid = self.allocate_uid() if self.config["drop_uid"] else None
        workdir = tempfile.mkdtemp(prefix="host-", dir=self.config["base_dir"])
        if uid is not None:
            # Root-owned and read-only for the host: environments need no files, and a host that
            # cannot write cannot fill the disk or leave a tree too deep to remove.
            os.chmod(workdir, 0o555)
        chroot = self.config["chroot"]
        zygote_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                self.forget_others(source)
                channel = enter_host(channel_fd, workdir, uid, limits, chroot)
                die_with_zygote(zygote_pid, uid is not None)  # after the uid change
                seal(self.installer, os.getpid())
                self.installer = None
                host.serve(channel, limits["max_reply_bytes"])
            finally:
                os._exit(0)
        os.close(channel_fd)
        self.hosts[pid] = (workdir, uid, limits.get("processes", 1) > 1)
        return pid

    def forget_others(self, source: str | None) -> None:
        """In a new host: keep nothing of other hosts (their sources, pids, uids, folders)."""
        host.forget_compiled(but=source)
        self.hosts.clear()
        self.config = {}

    def allocate_uid(self) -> int:
        in_use = {uid for _, uid, _ in self.hosts.values()}
        while True:
            uid = self.config["uid_base"] + self.next_uid % UID_SPAN
            self.next_uid += 1
            if uid not in in_use:
                return uid

    def kill(self, pid: int) -> None:
        # Only an unreaped child: its pid cannot have been reused, so the signal hits the host.
        if pid in self.hosts:
            kill_group(pid)

    def reap(self) -> None:
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.clean_after(pid)

    def clean_after(self, pid: int) -> None:
        """A reaped child: when a host, kill what it left and remove its folder."""
        if pid not in self.hosts:
            return  # an adopted orphan of some host: reaped, nothing else to do
        workdir, uid, forks = self.hosts.pop(pid)
        try:
            kill_group(pid)  # children a host left in its session die with it
            # a host with a uid of its own and RLIMIT_NPROC 1 could start no process to sweep
            if uid is not None and forks:
                sweep_uid(uid)
            if workdir is not None:
                remove_tree(workdir)
        except Exception:  # cleanup of one host must never take the zygote down
            pass

    def shutdown(self) -> None:
        """Kill every host, clean up after each, then remove the base folder: the parent may
        be gone (killed, or a worker ended with ``os._exit``) and cannot do it."""
        for pid in list(self.hosts):
            self.kill(pid)
        while self.hosts:
            try:
                pid, _ = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            self.clean_after(pid)
        self.reap()
        if self.config.get("base_dir"):
            remove_tree(self.config["base_dir"])


def enter_host(channel_fd: int, workdir: str, uid: int | None, limits: dict, chroot: bool):
    """Lock a freshly forked child down, return its channel. Order: fds, dir, limits, uid."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.dup2(channel_fd, 3)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(4, 1 << 16)
    if chroot:
        os.chroot(workdir)
        os.chdir("/")
    else:
        os.chdir(workdir)
    set_limits(limits)
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.environ.clear()
    return socket.socket(fileno=3)


def seal(installer: typing.Any, host: int) -> None:
    """The host's last lock: the syscall filter for this host (``installer`` is a
    ``syscalls.Installer``, None without libseccomp): no signal to ``host``, its pid, from it or
    the check children it forks; then the native-call machinery that made it leaves
    ``sys.modules`` (the host cannot load it again from disk, nor use it to undo the filter)."""
    global syscalls, _prctl  # this module is a host's __main__: no way back to ctypes
    if installer is not None:
        installer.install(host)
    native = ("ctypes", "_ctypes", "pyseccomp", "syscalls")
    for name in [m for m in sys.modules if m.split(".")[0] in native]:
        del sys.modules[name]
    del syscalls
    _prctl = None


def load_installer(module_path: str | None) -> typing.Any:
    """The hosts' filter installer, from the libseccomp binding the parent found (loaded and
    compiled once: a binding that cannot compile fails here); None without one."""
    if not module_path:
        return None
    import importlib.util

    spec = importlib.util.spec_from_file_location("pyseccomp", module_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no libseccomp binding at {module_path}")
    binding = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(binding)
    return syscalls.Installer(binding)


def limit_self(memory_mb: int) -> None:
    """The zygote's own memory bound: compiling hostile sources must not grow it without end.
    Hosts lower it to their own limit."""
    ceiling = (memory_mb + 1024) << 20
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))


def set_limits(limits: dict) -> None:
    cpu = max(1, int(limits["cpu_seconds"] + 0.999))
    memory = limits["memory_mb"] << 20
    pairs = {
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_AS: (memory, memory),
        resource.RLIMIT_FSIZE: (limits["file_size_bytes"], limits["file_size_bytes"]),
        resource.RLIMIT_NOFILE: (limits["open_files"], limits["open_files"]),
    }
    # The host is the only process its uid may have: no forks, no threads. Without a uid of its
    # own this still binds for a non-root user (who runs other processes already), not for root.
    # A checks host may have one child at a time: each check evaluation runs in a fork of it.
    processes = limits.get("processes", 1)
    pairs[resource.RLIMIT_NPROC] = (processes, processes)
    for which, value in pairs.items():
        resource.setrlimit(which, value)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def remove_tree(path: str) -> None:
    """Remove a host's folder without recursion (``shutil.rmtree`` recurses and follows depth)."""
    try:
        os.rmdir(path)  # the usual case: the host could not, or did not, write anything
        return
    except OSError:
        pass
    pid = os.fork()  # rm walks iteratively; not subprocess, which every host would then inherit
    if pid == 0:
        try:
            os.execvp("rm", ["rm", "-rf", "--one-file-system", "--", path])
        finally:
            os._exit(127)
    os.waitpid(pid, 0)


def sweep_uid(uid: int) -> None:
    """Kill every process left with a host's uid (a fork that escaped its session, say)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_prctl = None  # libc's prctl, loaded only without a pid namespace (become_subreaper)


def become_subreaper() -> None:
    """Without a pid namespace, adopt the orphans of hosts so the reap loop ends them too.

    Only on that path: ctypes stays out of a chrooted host's ``sys.modules`` otherwise, and
    without a chroot a host could import it from disk anyway.
    """
    import ctypes

    global _prctl
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
    _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def die_with_zygote(zygote_pid: int, own_uid: bool) -> None:
    """In a new host: end now if the zygote is already gone, and, with ``own_uid``, be killed
    (SIGKILL) when it dies, however it dies.

    A pid namespace does the latter by itself (the zygote is its init). Without one, a host
    whose program sleeps would outlive a zygote killed by SIGKILL. The zygote forks from its
    only thread, so the signal follows the zygote's lifetime. Only for a host with a uid of
    its own (set before: a uid change clears the signal): a host with the zygote's uid can
    kill the zygote, and must not thereby take the other hosts, bystanders, down with it.
    """
    if own_uid and _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if zygote_pid and os.getppid() != zygote_pid:
        os._exit(0)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    config = json.loads(control.recv(1 << 20))  # not the command line, which anyone can read
    sys.argv[:] = ["envmill-sandbox"]
    parent = 0  # as the init of a pid namespace, unshare's --kill-child ends us with it
    if not config.get("pid_namespace"):
        become_subreaper()
        parent = os.getppid()
    before = set(sys.modules)
    installer = load_installer(config.get("seccomp_module"))
    for name in set(sys.modules) - before:  # ctypes.util brought subprocess, shutil, ...
        del sys.modules[name]
    limit_self(config.get("memory_mb", 512))
    zygote = Zygote(config, installer)
    del config, installer  # hosts inherit this frame: the installer is the zygote's alone
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    try:
        zygote.serve(control, parent)
    finally:
        zygote.shutdown()


if __name__ == "__main__":
    main()
