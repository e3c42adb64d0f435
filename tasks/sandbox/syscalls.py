"""The system calls a host may not make, as a seccomp filter (runs only in the zygote and hosts).

Generated code that slips past the policy reaches native code (a static binary in a memory file,
say); what it can then do is what the kernel lets the host's process do. The filter refuses,
with ``EPERM``: starting programs (``execve``, ``execveat``, memory files), System V and POSIX
IPC, kernel keyrings, new sockets and file locks (so concurrent hosts cannot talk over abstract
sockets or lock bytes of a file they all hold, such as ``/dev/null``),
namespaces and mounts, tracing other processes, and the kernel's other escape hatches
(io_uring, bpf, perf, userfaultfd, modules). ``no_new_privs`` comes with it. The filter is built
once in the zygote with libseccomp (through ``pyseccomp``) and installed in each host after its
other locks, as its last step before serving, with the host's pid filled in.

Stdlib only, apart from the ``pyseccomp`` module the parent points the zygote at.
"""

from __future__ import annotations

import ctypes
import errno
import os
from typing import Any

DENIED = (
    "execve", "execveat", "memfd_create",
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semctl", "semtimedop",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "keyctl", "add_key", "request_key",
    "socket", "socketpair",
    "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "pidfd_open",
    "pidfd_send_signal",
    "bpf", "perf_event_open", "userfaultfd", "fanotify_init",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "init_module", "finit_module", "delete_module",
    "swapon", "swapoff", "reboot", "acct", "open_by_handle_at", "name_to_handle_at",
    "flock",
)  # fmt: skip
LOW, SIGN = 0xFFFFFFFF, 0x80000000  # the kernel reads a pid as 32 bits, the top one its sign
# fcntl commands on a shared file (locks, leases, notices, signal owners) are a channel between
# processes that share nothing else: /dev/null, every host's stdio, is one inode for the machine.
FCNTL_DENIED = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026, 8, 10, 15)
CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def build_filter(seccomp: Any, host: int | None = None) -> bytes:
    """The filter as raw BPF, compiled by libseccomp (``seccomp`` is pyseccomp); with ``host``
    (the host's pid), no signal to the host or to a process group from it or the check children
    it forks (they share its uid, so only the filter keeps one from killing or stopping it)."""
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    if host is not None:
        _hands_off(seccomp, rules, host)
    for name in DENIED:
        try:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except Exception:  # a call this kernel or libseccomp does not know: nothing to deny
            pass
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # flags in memory: fall back to clone
    for command in FCNTL_DENIED:
        rules.add_rule(  # the kernel reads an int: high bits must not hide the command
            seccomp.ERRNO(errno.EPERM), "fcntl", seccomp.Arg(1, seccomp.MASKED_EQ, LOW, command)
        )
    for flag in CLONE_NAMESPACE_FLAGS:
        rules.add_rule(
            seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag)
        )
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(write_end, "wb", closefd=True) as sink:
            rules.export_bpf(sink)
        return os.read(read_end, 1 << 20)
    finally:
        os.close(read_end)


SIGNALLING = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
# priority calls that reach a whole group or user (``which``: PRIO_PGRP, PRIO_USER; the I/O
# class's IOPRIO_WHO_PGRP, IOPRIO_WHO_USER): the host's own group, or every host of its uid
BY_GROUP_OR_USER = {"setpriority": (1, 2), "ioprio_set": (2, 3)}
# calls that reach another process by its pid (which argument): its limits, its scheduling
TOUCHING = {"prlimit64": 0, "sched_setaffinity": 0, "sched_setscheduler": 0,
            "sched_setparam": 0, "sched_setattr": 0, "setpriority": 1, "ioprio_set": 1}  # fmt: skip


def _hands_off(seccomp: Any, rules: Any, host: int) -> None:
    """No call reaches the host (``host``, its pid, in the low 32 bits whatever the high ones
    hold): no signal to it, to 0 (the caller's group, the host's) or to any group (a negative
    pid); no change to its limits or its scheduling (a breaker's: a check child lowered the
    host's RLIMIT_NPROC, so the next check ran in the host itself), nor to the priority of its
    group or of its uid's processes (a breaker's: a check child reniced its host to 19)."""
    targets = [(name, 0) for name in SIGNALLING] + list(TOUCHING.items())
    for name, arg in targets:
        matches = [seccomp.Arg(arg, seccomp.MASKED_EQ, LOW, host)]
        if name in SIGNALLING:
            matches += [
                seccomp.Arg(0, seccomp.MASKED_EQ, LOW, 0),
                seccomp.Arg(0, seccomp.MASKED_EQ, SIGN, SIGN),
            ]
        for match in matches:
            _refuse(seccomp, rules, name, match)
    for name, whiches in BY_GROUP_OR_USER.items():
        for which in whiches:
            _refuse(seccomp, rules, name, seccomp.Arg(0, seccomp.MASKED_EQ, LOW, which))


def _refuse(seccomp: Any, rules: Any, name: str, match: Any) -> None:
    try:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), name, match)
    except Exception:  # a call this kernel or libseccomp does not know
        pass


# Stand-in pids for the compiled-once filter, and real ones it must match when filled in (a
# pid namespace's first hosts, and the largest pid Linux hands out).
STAND_INS, CHECKED_PIDS = (0x1234567, 0x7654321), (2, 4194303)
INSTRUCTION = 8  # bytes of a BPF instruction: code (2), jt, jf (1 each), k (4, at offset 4)


def pid_slots(seccomp: Any) -> tuple[bytes, list[int]] | None:
    """The filter compiled once, and where the host's pid goes in it (the offsets of the
    constants it is compared with); None when a pid changes more than those constants.

    libseccomp orders a call's argument comparisons by their values, and a host's pid always
    lies between the others (0 and the sign bit), so the program is laid out the same for every
    pid. Compiling it per host cost a few milliseconds of every host's start; this checks the
    premise (two stand-ins differ only in constants, and filling in real pids gives what
    libseccomp compiles for them) instead of trusting it."""
    first, second = (build_filter(seccomp, pid) for pid in STAND_INS)
    if len(first) != len(second) or len(first) % INSTRUCTION:
        return None
    slots = []
    for at in range(0, len(first), INSTRUCTION):
        one, other = first[at : at + INSTRUCTION], second[at : at + INSTRUCTION]
        if one == other:
            continue
        if (
            one[:4] != other[:4]
            or _constant(one) != STAND_INS[0]
            or _constant(other) != STAND_INS[1]
        ):
            return None
        slots.append(at + 4)
    if not slots or any(
        _filled(first, slots, pid) != build_filter(seccomp, pid) for pid in CHECKED_PIDS
    ):
        return None
    return first, slots


def _constant(instruction: bytes) -> int:
    return int.from_bytes(instruction[4:8], "little")


def _filled(template: bytes, slots: list[int], pid: int) -> bytes:
    program = bytearray(template)
    for at in slots:
        program[at : at + 4] = pid.to_bytes(4, "little")
    return bytes(program)


class Installer:
    """Made in the zygote (where libc can still be found), used in each host: the filter is
    compiled once and each host fills in its pid (:func:`pid_slots`), else compiled per host."""

    def __init__(self, seccomp: Any) -> None:
        self.seccomp, self.compiled = seccomp, pid_slots(seccomp)
        self.prctl = ctypes.CDLL(None, use_errno=True).prctl

    def program(self, host: int) -> bytes:
        if self.compiled is None:
            return build_filter(self.seccomp, host)
        return _filled(*self.compiled, host)

    def install(self, host: int) -> None:
        """``no_new_privs`` and ``host``'s filter; raises OSError when the kernel refuses."""
        bpf = self.program(host)
        buffer = ctypes.create_string_buffer(bpf, len(bpf))
        program = _SockFprog(len(bpf) // INSTRUCTION, ctypes.addressof(buffer))
        if self.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) was refused")
        if self.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0):
            raise OSError(ctypes.get_errno(), "the seccomp filter was refused")
