"""The attack catalogue, as data: each entry is the body of ``def run(p)`` in a hostile program.

``tests/redteam/test_attacks.py`` wraps each body three ways (a tool method, a check function,
module-level code) and runs it straight against the sandbox, bypassing the static policy. ``p``
carries the test's canaries: ``path`` (a file that must never appear), ``reads`` (files that must
never be read), ``port``/``udp_port``/``abstract``/``unix_path`` (listeners that must never be
reached), ``rport``/``rabstract`` (where a host may listen; the parent must not reach it), ``dir``
(a folder that must stay as it is), ``mode``, ``factory`` (the test's pid), ``fork_limit``.

A body reports what it got; it returns the word ESCAPED only when it did something it must not
be able to do (measured inside the host, e.g. memory beyond the limit). Effects visible from the
parent (files, connections, processes, secrets) are checked from the parent, never trusted to
the body. This catalogue is long because it is data: one entry per distinct attack.
"""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("method", "check", "module")
NOT_MODULE = ("method", "check")

# Policy-clean helpers included in every hostile program; rejections come from the attack body.
PRELUDE = '''
def effects(g, p):
    """Try every outside effect with os functions reached by some escape; report what happened."""
    seen = {"env": dict(g["environ"])}
    for path in p["reads"]:
        try:
            seen[path] = g["read"](g["open"](path, 0), 200).decode("utf-8", "replace")
        except Exception as exc:
            seen[path] = repr(exc)[:60]
    try:
        g["write"](g["open"](p["path"], 577, 420), b"ESCAPED")
        seen["write"] = "ESCAPED"
    except Exception as exc:
        seen["write"] = repr(exc)[:60]
    seen["system"] = g["system"]("echo ESCAPED > " + p["path"])
    return seen


def frame_bytes(payload):
    """A length-prefixed frame, as the sandbox's channel carries them."""
    return len(payload).to_bytes(4, "big") + payload


def forged_reply(p, extra):
    """A reply shaped for the request this mode's host is answering, with ``extra`` merged in."""
    shape = {
        "method": {"ok": True, "result": {"success": True, "data": "FORGED-OK"}, "state": {"n": 0}},
        "check": {"ok": True, "results": [[{"value": True, "error": None, "mutated": False}]]},
        "module": {"ok": True, "state": {"n": 0, "leak": "FORGED-OK"}},
    }[p["mode"]]
    shape.update(extra)
    return shape
'''


@dataclass(frozen=True)
class Attack:
    """One hostile program body and what must stop it."""

    name: str
    category: str
    body: str
    stops: str  # the mechanism that stops it (the report's table)
    expect: str | None = None  # regex the parent's evidence must match: the mechanism, observed
    policy: bool = True  # the static policy is expected to refuse the source
    modes: tuple[str, ...] = MODES
    same_host: bool = True  # the episode answers a clean call right after (within two tries)
    absent: tuple[str, ...] = ()  # attack-specific strings that must never reach the parent
    hole: str | None = None  # a real hole: xfail(strict=True, reason=hole)
    serializes: bool = False  # as a check, return the object itself (checks must return a bool)
    basic: bool = False  # also run with isolation="basic" (promises env, limits, recovery)
    basic_expect: str | None = None
    basic_hole: str | None = None
    # the hole shows only when the machine lets the host fork: under load a fork may fail for
    # reasons of its own and the attack with it, so a pass there does not mean the hole closed
    basic_hole_every_time: bool = True


A = Attack
FNF = "FileNotFoundError"
DEAD = "killed|timeout"

ATTACKS: list[Attack] = [
    # -- secrets: the parent's environment ------------------------------------------------------
    A(
        "env_os_environ",
        "secrets",
        """
        import os, posix
        raw = {k.decode(): v.decode() for k, v in posix.environ.items()}
        return {"env": dict(os.environ), "startup_env": sorted(raw), "values": sorted(raw.values())}
    """,
        "scrubbed env: zygote started with env={PATH,LANG,PYTHONHASHSEED}; host clears os.environ",
        expect=r"env: \{\}",
        basic=True,
        basic_expect=r"env: \{\}",
    ),
    A(
        "env_proc_environ",
        "secrets",
        """
        import os
        out = {}
        for path in ("/proc/self/environ", "/proc/%d/environ" % os.getppid()):
            try:
                out[path] = open(path, "rb").read().decode("latin-1")
            except OSError as exc:
                out[path] = repr(exc)
        return out
    """,
        "chroot: no /proc (basic: the zygote's own environ is already scrubbed)",
        expect=FNF,
        basic=True,
    ),
    A(
        "env_proc_ancestors",
        "secrets",
        """
        import os
        found, pid = [], os.getppid()
        for _ in range(4):
            try:
                block = open("/proc/%d/environ" % pid, "rb").read().split(b"\\0")
                found += [e.decode() for e in block if e.startswith(b"OPENAI_API_KEY=")]
                if pid == p["factory"]:
                    break
                pid = int(open("/proc/%d/status" % pid).read().split("PPid:")[1].split()[0])
            except (OSError, IndexError, ValueError) as exc:
                found.append(repr(exc))
                break
        return {"found": found}
    """,
        "chroot + pidns: the factory's /proc entry is unreachable (basic: see the HOLE)",
        expect=FNF,
    ),
    A(
        "env_memory_scan",
        "secrets",
        """
        import gc
        hits = []
        for o in gc.get_objects():
            if type(o) is dict:
                hits += ["%r=%r" % (k, o[k]) for k in list(o) if "OPENAI" in repr(k)]
            elif type(o) in (list, tuple):
                hits += [repr(x)[:200] for x in o if type(x) in (str, bytes) and "KEY=sk" in str(x)]
        return {"hits": hits[:20]}
    """,
        "scrubbed env: the zygote (whose memory every host inherits) never held the secret",
        expect=r"hits: \[",
        basic=True,
    ),
    # -- reading files outside the working directory ------------------------------------------
    A(
        "read_etc_passwd",
        "read files",
        'return {"passwd": open("/etc/passwd").read()[:300]}',
        "chroot: file not found",
        expect=FNF,
    ),
    A(
        "read_repo_file",
        "read files",
        'return {"repo": open(p["reads"][1]).read()[:300]}',
        "chroot: file not found",
        expect=FNF,
    ),
    A(
        "read_proc1_cmdline",
        "read files",
        'return {"init": open("/proc/1/cmdline").read()[:300]}',
        "chroot: no /proc (and pid 1 of the pidns is the zygote)",
        expect=FNF,
    ),
    A(
        "read_listdir_escape",
        "read files",
        """
        import os
        out = {"root": os.listdir("/"), "up": os.listdir("/../../.."), "cwd": os.getcwd()}
        try:
            out["secret"] = open(p["secret_file"]).read()
        except OSError as exc:
            out["secret"] = repr(exc)
        return out
    """,
        "chroot: '/' is the host's empty folder",
        expect=r"root: \[\].*FileNotFoundError",
    ),
    # -- writing files outside ------------------------------------------------------------------
    A(
        "write_outside",
        "write files",
        'open(p["path"], "w").write("ESCAPED")\nreturn {"wrote": 1}',
        "chroot: the folder does not exist",
        expect=FNF,
    ),
    A(
        "write_relative_escape",
        "write files",
        """
        import os
        os.chdir("/")
        open("../" * 30 + p["path"].lstrip("/"), "w").write("ESCAPED")
        return {"wrote": "ESCAPED"}
    """,
        "chroot: '..' of '/' is '/'",
        expect=FNF,
    ),
    A(
        "chroot_escape",
        "privilege",
        """
        import os
        os.makedirs("jail", exist_ok=True)
        os.chroot("jail")
        for _ in range(40):
            os.chdir("..")
        os.chroot(".")
        return effects(vars(os), p)
    """,
        "uid per host: no CAP_SYS_CHROOT, chroot() fails",
        expect="PermissionError",
    ),
    A(
        "symlink_tricks",
        "write files",
        """
        import os
        os.makedirs("a/b", exist_ok=True)
        links = {"victim": p["dir"], "a/b/victim": p["dir"], "secret": p["secret_file"]}
        for link, target in links.items():
            os.symlink(target, link)
        out = {}
        try:
            out["read"] = open("secret").read()
        except OSError as exc:
            out["read"] = repr(exc)
        try:
            open("victim/pwned", "w").write("ESCAPED")
            out["wrote"] = "ESCAPED"
        except OSError as exc:
            out["wrote"] = repr(exc)
        return out
    """,
        "chroot resolves links inside the host's folder, which is read-only: nothing is linked",
        expect="FileNotFoundError|PermissionError",
    ),
    A(
        "hardlink_outside",
        "write files",
        """
        import os
        os.link(p["secret_file"], "stolen")
        return {"stolen": open("stolen").read()}
    """,
        "chroot: the target is not in the host's tree",
        expect=FNF,
    ),
    A(
        "deep_directory_tree",
        "write files",
        """
        import os
        for _ in range(p["depth"]):
            os.mkdir("d")
            os.chdir("d")
        return {"depth": p["depth"]}
    """,
        "read-only working folder: the first mkdir fails; cleanup is an iterative rm that "
        "can never raise in the zygote",
        modes=(),
    ),  # run by test_deep_tree_does_not_break_the_sandbox
    A(
        "many_files",
        "write files",
        """
        import os
        n = 0
        try:
            while n < 1500:
                os.close(os.open("f%d" % n, os.O_CREAT | os.O_WRONLY, 0o644))
                n += 1
        except OSError as exc:
            return {"n": n, "stopped": repr(exc)}
        return {"n": n}
    """,
        "per-host folder removed when the zygote reaps the host",
        expect=r"n: \d+",
    ),
    A(
        "disk_fill",
        "write files",
        """
        written = 0
        for i in range(48):
            try:
                with open("blob%d" % i, "wb") as f:
                    f.write(b"x" * (1 << 20))
                written += 1 << 20
            except OSError as exc:
                return {"written_mb": written >> 20, "stopped": repr(exc)[:80]}
        verdict = "ESCAPED" if written >= 32 << 20 else "held"
        return {"written_mb": written >> 20, "verdict": verdict}
    """,
        "read-only working folder (root-owned, 0555): no file can be written at all",
        expect=r"PermissionError",
    ),
    # -- network ----------------------------------------------------------------------------------
    A(
        "tcp_connect_localhost",
        "network",
        """
        import socket
        try:
            s = socket.socket()
            s.settimeout(0.5)
            s.connect(("127.0.0.1", p["port"]))
            s.sendall(b"hello")
            return {"net": "connected"}
        except OSError as exc:
            return {"net": repr(exc)}
    """,
        "seccomp: no new sockets; netns: network unreachable",
        expect="Operation not permitted|Network is unreachable",
        basic=True,
        basic_expect="connected",
    ),  # basic mode promises no network isolation: documented, not a hole
    A(
        "udp_send_localhost",
        "network",
        """
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        return {"sent": s.sendto(b"ESCAPED", ("127.0.0.1", p["udp_port"]))}
    """,
        "seccomp: no new sockets; netns: network unreachable",
        expect="Operation not permitted|Network is unreachable",
    ),
    A(
        "abstract_unix_connect",
        "network",
        """
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(p["abstract"])
        s.sendall(b"ESCAPED")
        return {"net": "ESCAPED"}
    """,
        "seccomp: no new sockets; netns: abstract names are per namespace",
        expect="Operation not permitted|ConnectionRefusedError",
    ),
    A(
        "unix_path_connect",
        "network",
        """
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(p["unix_path"])
        s.sendall(b"ESCAPED")
        return {"net": "ESCAPED"}
    """,
        "seccomp: no new sockets; chroot: no socket files",
        expect="Operation not permitted|FileNotFoundError",
    ),
    A(
        "raw_socket",
        "network",
        """
        import socket
        out = []
        for family, proto in ((socket.AF_INET, 1), (socket.AF_PACKET, 0)):
            try:
                socket.socket(family, socket.SOCK_RAW, proto)
                out.append("ESCAPED")
            except OSError as exc:
                out.append(repr(exc))
        return {"raw": out}
    """,
        "uid per host: no CAP_NET_RAW",
        expect="PermissionError",
    ),
    A(
        "listen_for_parent",
        "network",
        """
        import socket, sys
        tcp = socket.socket()
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", p["rport"]))
        tcp.listen()
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(p["rabstract"])
        unix.listen()
        sys.modules["host"].KEEP = (tcp, unix)
        return {"listening": True}
    """,
        "seccomp: no new sockets; netns: what a host binds is invisible",
        expect="Operation not permitted|listening",
    ),
    # -- processes --------------------------------------------------------------------------------
    A(
        "os_system",
        "processes",
        'import os\nreturn {"rc": os.system("echo > " + p["path"])}',
        "RLIMIT_NPROC=1 under a uid of its own: spawn fails (glibc reports 127)",
        expect=r"rc: (32512|-1)",
    ),
    A(
        "subprocess_run",
        "processes",
        """
        import subprocess
        subprocess.run(["/bin/sh", "-c", "echo ESCAPED > " + p["path"]])
        return {"ran": "ESCAPED"}
    """,
        "not importable in the chroot; seccomp: no exec; NPROC: no fork",
        expect="ModuleNotFoundError|Operation not permitted|Resource temporarily unavailable",
    ),
    A(
        "posix_spawn",
        "processes",
        """
        import os
        pid = os.posix_spawn("/bin/sh", ["sh", "-c", "echo ESCAPED > " + p["path"]], {})
        return {"pid": pid, "spawned": "ESCAPED"}
    """,
        "RLIMIT_NPROC=1: clone fails",
        expect="BlockingIOError",
    ),
    A(
        "os_fork",
        "processes",
        """
        import os
        pid = os.fork()
        if pid == 0:
            open(p["path"], "w").write("ESCAPED")
            os._exit(0)
        return {"child": pid, "forked": "ESCAPED"}
    """,
        "RLIMIT_NPROC=1: fork fails",
        expect="BlockingIOError",
    ),
    A(
        "fork_bomb",
        "processes",
        """
        import os, time
        kids = []
        for _ in range(p["fork_limit"]):  # bounded: the suite must not bomb its own machine
            try:
                pid = os.fork()
            except OSError as exc:
                return {"forked": len(kids), "stopped": repr(exc)}
            if pid == 0:
                time.sleep(p["linger"])
                os._exit(0)
            kids.append(pid)
        return {"forked": len(kids)}
    """,
        "RLIMIT_NPROC=1: the first fork fails",
        expect=r"forked: 0",
        basic=True,
        basic_expect=r"forked: \d+",
    ),
    A(
        "fork_setsid_escape",
        "processes",
        """
        import os, time
        kids = []
        for _ in range(3):
            try:
                pid = os.fork()
            except OSError as exc:
                return {"forked": len(kids), "stopped": repr(exc)}
            if pid == 0:
                os.setsid()  # leave the host's process group, which is what the zygote kills
                time.sleep(p["linger"])
                os._exit(0)
            kids.append(pid)
        return {"forked": len(kids)}
    """,
        "RLIMIT_NPROC=1 (and pidns --kill-child, uid sweep)",
        expect=r"forked: 0",
        basic=True,
        basic_hole="HOLE (basic mode): no RLIMIT_NPROC binding (root, or no uid of its own), so a "
        "host forks children that setsid() out of its process group and outlive the "
        "episode",
        basic_hole_every_time=False,
    ),
    A(
        "thread_bomb",
        "processes",
        """
        import _thread, time
        n = 0
        try:
            for _ in range(400):
                _thread.start_new_thread(time.sleep, (p["linger"],))
                n += 1
        except RuntimeError as exc:
            return {"threads": n, "stopped": repr(exc)}
        return {"threads": n}
    """,
        "RLIMIT_NPROC=1: no thread starts (basic: RLIMIT_AS caps thread stacks)",
        expect=r"threads: 0, stopped: .*cant start new thread",
        basic=True,
        basic_expect=r"cant start new thread",
    ),
    A(
        "exec_replace",
        "processes",
        """
        import os
        os.execv("/bin/sh", ["sh", "-c", "echo ESCAPED > " + p["path"]])
    """,
        "seccomp: no execve; chroot: no programs",
        expect="Operation not permitted|FileNotFoundError",
    ),
    # -- resources --------------------------------------------------------------------------------
    A(
        "memory_bytearray",
        "resources",
        'return {"got": len(bytearray(8 << 30))}',
        "RLIMIT_AS: MemoryError",
        expect="MemoryError",
        policy=False,
        basic=True,
        basic_expect="MemoryError",
    ),
    A(
        "memory_growth",
        "resources",
        """
        blocks = []
        try:
            while True:
                blocks.append(bytearray(16 << 20))
        except MemoryError:
            mb = 16 * len(blocks)
            blocks.clear()
            return {"mb": mb, "verdict": "ESCAPED" if mb > 256 else "MemoryError"}
    """,
        "RLIMIT_AS: MemoryError, the host lives on",
        expect="MemoryError",
        policy=False,
        basic=True,
        basic_expect="MemoryError",
    ),
    A(
        "cpu_loop",
        "resources",
        "while True:\n    pass",
        "RLIMIT_CPU: SIGXCPU kills the host",
        expect=DEAD,
        policy=False,
        basic=True,
        basic_expect=DEAD,
    ),
    A(
        "c_level_loop",
        "resources",
        """
        import collections, itertools
        collections.deque(itertools.count(), maxlen=0)
    """,
        "RLIMIT_CPU: SIGXCPU kills a C loop too",
        expect=DEAD,
        policy=False,
    ),
    A(
        "regex_backtracking",
        "resources",
        """
        import re
        return {"m": bool(re.match(r"(a+)+$", "a" * 64 + "b"))}
    """,
        "RLIMIT_CPU: SIGXCPU",
        expect=DEAD,
        policy=False,
    ),
    A(
        "deep_recursion",
        "resources",
        """
        def down(n):
            return down(n + 1)
        return {"depth": down(0)}
    """,
        "recursion limit: RecursionError",
        expect="RecursionError",
        policy=False,
    ),
    A(
        "recursion_limit_raised",
        "resources",
        """
        import sys
        sys.setrecursionlimit(10 ** 8)
        def down(n):
            return list(map(down, [n + 1]))
        return {"depth": down(0)}
    """,
        "C stack overflow kills only the host (parent: killed)",
        expect="killed",
    ),
    A(
        "sleep_past_wall",
        "resources",
        'import time\ntime.sleep(30)\nreturn {"slept": True}',
        "parent wall timeout",
        expect="timeout",
        basic=True,
        basic_expect="timeout",
    ),
    A(
        "ignore_signals_spin",
        "signals",
        """
        import signal
        for sig in range(1, 65):
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (OSError, ValueError, RuntimeError):
                pass
        while True:
            pass
    """,
        "parent wall timeout + SIGKILL (and the RLIMIT_CPU hard limit)",
        expect=DEAD,
    ),
    A(
        "alarm_sabotage",
        "signals",
        """
        import signal
        def boom(signum, frame):
            raise RuntimeError("alarm")
        signal.signal(signal.SIGALRM, boom)
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
        return {"armed": True}
    """,
        "the sabotaged host dies alone; the episode restarts from the last state",
        expect="armed",
    ),
    A(
        "self_sigstop",
        "signals",
        "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)",
        "no signal to the host (seccomp, its pid in the filter); a check child stops only itself: "
        "parent wall timeout",
        expect="timeout|Operation not permitted",
    ),
    A(
        "raise_rlimits",
        "resources",
        """
        import resource
        out = {}
        for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE"):
            try:
                infinite = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
                resource.setrlimit(getattr(resource, name), infinite)
                out[name] = "ESCAPED"
            except (ValueError, OSError) as exc:
                out[name] = repr(exc)
        try:
            out["alloc"] = "ESCAPED" if bytearray(400 << 20) else ""
        except MemoryError:
            out["alloc"] = "MemoryError"
        return out
    """,
        "uid per host: no CAP_SYS_RESOURCE, hard limits cannot rise",
        expect="not allowed to raise maximum limit",
    ),
    A(
        "nofile_exhaust",
        "resources",
        """
        import os, sys
        keep = []
        try:
            while len(keep) < 5000:
                keep.append(os.pipe())
        except OSError as exc:
            sys.modules["host"].KEEP = keep
            return {"opened": len(keep), "stopped": repr(exc)}
        return {"opened": len(keep), "verdict": "ESCAPED"}
    """,
        "RLIMIT_NOFILE: EMFILE; the channel is already open",
        expect="Too many open files",
    ),
    # -- giant outputs ----------------------------------------------------------------------------
    A(
        "stdout_flood",
        "outputs",
        """
        import os, sys
        for _ in range(8):
            sys.stdout.write("FLOOD" * (1 << 20))
        sys.stdout.flush()
        os.write(1, b"FLOOD" * (1 << 20))
        return {"flooded": True}
    """,
        "stdout is /dev/null",
        expect="flooded",
        absent=("FLOOD",),
    ),
    A(
        "stderr_flood",
        "outputs",
        """
        import os, sys
        for _ in range(8):
            sys.stderr.write("FLOOD" * (1 << 20))
        os.write(2, b"FLOOD" * (1 << 20))
        return {"flooded": True}
    """,
        "stderr is /dev/null",
        expect="flooded",
        absent=("FLOOD",),
    ),
    A(
        "giant_return",
        "outputs",
        'return {"blob": "x" * (32 << 20)}',
        "reply size cap (host measures; parent refuses before reading)",
        expect="too_large",
        policy=False,
        serializes=True,
    ),
    A(
        "giant_return_multibyte",
        "outputs",
        'return {"blob": "\\u00e9" * (6 << 20)}',
        "parent's byte cap: the header is checked before the body is read",
        expect="too_large",
        policy=False,
        serializes=True,
    ),
    A(
        "giant_exception",
        "outputs",
        'raise ValueError("E" * (32 << 20))',
        "error text truncated to 2000 characters",
        expect="…",
        policy=False,
    ),
    A(
        "forge_via_stdout",
        "forgery",
        """
        import json, os
        fake = json.dumps({"ok": True, "result": {"success": True, "data": "FORGED"}}).encode()
        print(fake.decode())
        os.write(1, frame_bytes(fake))
        return {"real": True}
    """,
        "JSON-only channel of its own: stdout is /dev/null",
        expect="real",
        absent=("FORGED",),
    ),
    A(
        "read_stdin",
        "outputs",
        """
        import os, sys
        return {"stdin": sys.stdin.read(100), "fd0": os.read(0, 100).decode()}
    """,
        "stdin is /dev/null",
        expect=r"stdin: , fd0: [,}]",
    ),
    # -- introspection escapes (policy bypasses; the process still holds) ----------------------
    A(
        "subclasses_escape",
        "escapes",
        """
        for cls in ().__class__.__base__.__subclasses__():
            if cls.__name__ == "_wrap_close":
                return effects(cls.__init__.__globals__, p)
        return {"found": False}
    """,
        "process boundary: the os reached is the host's (chroot, NPROC, empty env)",
        expect=FNF,
    ),
    A(
        "globals_builtins_escape",
        "escapes",
        """
        b = (lambda: 0).__globals__["__builtins__"]
        imp = b["__import__"] if type(b) is dict else b.__import__
        return effects(vars(imp("os")), p)
    """,
        "process boundary: chroot, NPROC, empty env",
        expect=FNF,
    ),
    A(
        "frame_walk",
        "escapes",
        """
        import sys
        f, frames = sys._getframe(), []
        while f is not None:
            frames.append(f)
            f = f.f_back
        names = [fr.f_code.co_name for fr in frames]
        os_mod = next(fr.f_globals["os"] for fr in reversed(frames) if "os" in fr.f_globals)
        return {"frames": names, "effects": effects(vars(os_mod), p)}
    """,
        "process boundary: the frames are the host's own",
        expect=FNF,
    ),
    A(
        "generator_frame",
        "escapes",
        """
        me = []
        def gen():
            yield me[0].gi_frame.f_back
        me.append(gen())
        frame = next(me[0])
        while "os" not in frame.f_globals and frame.f_back is not None:
            frame = frame.f_back
        return effects(vars(frame.f_globals["os"]), p)
    """,
        "process boundary: the frames are the host's own",
        expect=FNF,
    ),
    A(
        "gc_objects_escape",
        "escapes",
        """
        import gc
        mods = [o for o in gc.get_objects() if type(o).__name__ == "module" and o.__name__ == "os"]
        hosts = [o for o in gc.get_objects() if type(o).__name__ == "EnvHost"]
        return {"hosts": len(hosts), "effects": effects(vars(mods[0]), p)}
    """,
        "process boundary: every object found belongs to this host",
        expect=FNF,
    ),
    A(
        "gc_referrers_escape",
        "escapes",
        """
        import gc, json
        tables = [r for r in gc.get_referrers(json) if type(r) is dict and "json" in r]
        table = next(r for r in tables if "os" in r)
        return effects(vars(table["os"]), p)
    """,
        "process boundary: sys.modules reached is the host's",
        expect=FNF,
    ),
    A(
        "ctypes_libc",
        "escapes",
        """
        import ctypes
        libc = ctypes.CDLL(None)
        return {"rc": libc.system(("echo ESCAPED > " + p["path"]).encode())}
    """,
        "chroot: ctypes is not importable (not preloaded, no stdlib on disk)",
        expect="ModuleNotFoundError",
    ),
    A(
        "ctypes_segfault",
        "crashes",
        'import ctypes\nreturn {"x": ctypes.string_at(0)}',
        "chroot: ctypes is not importable",
        expect="ModuleNotFoundError",
    ),
    A(
        "faulthandler_segfault",
        "crashes",
        "import faulthandler\nfaulthandler._sigsegv()",
        "raise(SIGSEGV) is refused to a host; in a check child a segfault kills only the child",
        expect="killed|no answer within|data: None|leak: None",
    ),
    A(
        "faulthandler_into_channel",
        "forgery",
        """
        import faulthandler
        faulthandler.enable(file=3)
        faulthandler._sigsegv()
    """,
        "raise(SIGSEGV) is refused to a host; else framing: a non-frame on the channel is "
        "refused (too_large/killed)",
        expect="killed|too_large|protocol|data: None|leak: None",
        same_host=False,
    ),
    # -- privilege --------------------------------------------------------------------------------
    A(
        "setuid_root",
        "privilege",
        """
        import os
        out = {}
        calls = {"setuid": (0,), "setgid": (0,), "setgroups": ([0],), "seteuid": (0,),
                 "setresuid": (0, 0, 0)}
        for name, args in calls.items():
            try:
                getattr(os, name)(*args)
                out[name] = "ESCAPED"
            except OSError as exc:
                out[name] = repr(exc)
        return out
    """,
        "uid per host: setuid(0) needs CAP_SETUID",
        expect="PermissionError",
    ),
    A(
        "unshare_namespaces",
        "privilege",
        """
        import os
        try:
            os.unshare(0x10000000 | 0x00020000)
            return {"unshare": "ESCAPED"}
        except AttributeError:
            import ctypes
            return {"rc": ctypes.CDLL(None).unshare(0x10000000)}
    """,
        "no unshare in 3.11's os, no ctypes (and the kernel refuses CLONE_NEWUSER in a chroot)",
        expect="AttributeError|ModuleNotFoundError|PermissionError",
    ),
    A(
        "mount_and_mknod",
        "privilege",
        """
        import os, stat
        out = {}
        try:
            os.mknod("disk", stat.S_IFBLK | 0o600, os.makedev(8, 0))
            out["mknod"] = "ESCAPED"
        except OSError as exc:
            out["mknod"] = repr(exc)
        try:
            import ctypes
            out["mount"] = ctypes.CDLL(None).mount(b"proc", b"/", b"proc", 0, None)
        except ImportError as exc:
            out["mount"] = repr(exc)
        return out
    """,
        "uid per host: no CAP_MKNOD/CAP_SYS_ADMIN; no ctypes for mount(2)",
        expect="PermissionError.*ModuleNotFoundError",
    ),
    A(
        "ptrace_proc_mem",
        "privilege",
        """
        import os
        mem = open("/proc/%d/mem" % os.getppid(), "r+b")
        mem.seek(0x400000)
        mem.write(b"ESCAPED")
        return {"poked": "ESCAPED"}
    """,
        "chroot: no /proc; uid per host: no ptrace on the zygote",
        expect=FNF,
    ),
    # -- killing the parent -------------------------------------------------------------------
    A(
        "kill_parent",
        "kill",
        """
        import os, signal
        os.kill(os.getppid(), signal.SIGKILL)
        return {"killed": "zygote"}
    """,
        "uid per host: EPERM (and the zygote is pidns init)",
        expect="PermissionError",
        basic=True,
        basic_expect=r"killed: zygote",
    ),  # basic: the zygote dies and is restarted (recovery)
    A(
        "kill_factory",
        "kill",
        """
        import os, signal
        status = open("/proc/%d/status" % os.getppid()).read()
        factory = int(status.split("PPid:")[1].split()[0])
        if factory == p["factory"]:  # never any other process: this runs on the test machine
            os.kill(factory, signal.SIGKILL)
        return {"factory": factory}
    """,
        "chroot + pidns: the factory has no pid and no /proc entry here (basic: see the HOLE)",
        expect=FNF,
    ),
    A(
        "kill_all",
        "kill",
        'import os, signal\nos.kill(-1, signal.SIGKILL)\nreturn {"sent": True}',
        "seccomp: no signal to a negative pid (a group, or -1); uid per host + pidns besides",
        expect=r"Operation not permitted",
    ),
    A(
        "killpg_parent",
        "kill",
        """
        import os, signal
        os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)
        return {"sent": True}
    """,
        "pidns: the zygote's group is invisible (pgid 0 = the host's own group: it kills itself)",
        expect="killed|PermissionError",
    ),
    A(
        "kill_scan",
        "kill",
        """
        import os, signal
        hit, refused = 0, 0
        for pid in range(1, 400):
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGKILL)
                    hit += 1
                except PermissionError:
                    refused += 1
                except ProcessLookupError:
                    pass
        return {"hit": hit, "refused": refused}
    """,
        "uid per host: EPERM on the zygote and every other host (the bystander lives)",
        expect=r"hit: 0, refused: [1-9]",
    ),
    # -- the channel --------------------------------------------------------------------------
    A(
        "close_channel",
        "forgery",
        'import os\nos.close(3)\nreturn {"closed": True}',
        "the parent sees EOF: killed, host replaced",
        expect="killed",
    ),
    A(
        "write_other_fds",
        "forgery",
        """
        import os
        wrote = []
        for fd in range(0, 256):
            if fd != 3:
                try:
                    os.write(fd, frame_bytes(b'{"ok": true, "result": {"data": "FORGED"}}'))
                    wrote.append(fd)
                except OSError:
                    pass
        return {"wrote": wrote}
    """,
        "only fd 3 reaches the parent; 0-2 are /dev/null",
        expect=r"wrote: \[0, 1, 2\]",
        absent=("FORGED",),
    ),
    A(
        "forge_frame_wellformed",
        "forgery",
        """
        import json, os
        os.write(3, frame_bytes(json.dumps(forged_reply(p, {})).encode()))
        return {"real": True}
    """,
        "by design: a program owns its own channel; JSON only, one episode only",
        expect="FORGED-OK|True",
        same_host=False,
    ),
    A(
        "forge_frame_missing_keys",
        "forgery",
        """
        import os
        os.write(3, frame_bytes(b'{"ok": true}'))
        return {"real": True}
    """,
        "the parent validates each reply's shape per operation (protocol)",
        expect="protocol",
        same_host=False,
    ),
    A(
        "forge_frame_wrong_types",
        "forgery",
        """
        import json, os
        bad = {"result": "not a dict", "state": 5, "results": "x"}
        bad = {"state": [1]} if p["mode"] == "module" else bad
        os.write(3, frame_bytes(json.dumps(forged_reply(p, bad)).encode()))
        return {"real": True}
    """,
        "the parent validates each reply's shape per operation (protocol)",
        expect="protocol",
        same_host=False,
    ),
    A(
        "forge_frame_nan",
        "forgery",
        """
        import os
        reply = (b'{"ok": true, "result": {"success": true, "v": NaN}, "state": {"n": Infinity},'
                 b' "results": [[{"value": NaN, "error": null, "mutated": false}]]}')
        os.write(3, frame_bytes(reply))
        return {"real": True}
    """,
        "parent refuses non-finite JSON (protocol)",
        expect="protocol",
        same_host=False,
    ),
    A(
        "forge_frame_deep",
        "forgery",
        """
        import os
        os.write(3, frame_bytes(b"[" * 300000 + b"]" * 300000))
        return {"real": True}
    """,
        "parent turns a frame too deep to decode into protocol, never a raise",
        expect="protocol|too_large",
        same_host=False,
    ),
    A(
        "forge_frame_trickle",
        "forgery",
        """
        import os, time
        os.write(3, (24).to_bytes(4, "big"))
        for _ in range(6):
            time.sleep(0.45)
            os.write(3, b" ")
        os.write(3, b'{"ok": false}' + b" " * 5)
        return {"real": True}
    """,
        "one wall deadline for the whole request, not per recv (timeout)",
        expect="timeout",
        modes=NOT_MODULE,
        same_host=False,
    ),
    A(
        "forge_frame_oversize",
        "forgery",
        'import os\nos.write(3, b"\\xff\\xff\\xff\\xf0")',
        "reply size cap: refused from the header",
        expect="too_large",
        same_host=False,
    ),
    A(
        "forge_frame_garbage",
        "forgery",
        'import os\nos.write(3, frame_bytes(b"\\xff\\xfe{"))',
        "framing: non-JSON frame refused (protocol)",
        expect="protocol",
        same_host=False,
    ),
    A(
        "forge_frame_non_object",
        "forgery",
        'import os\nos.write(3, frame_bytes(b"[1, 2]"))',
        "parent refuses a reply that is not an object (protocol)",
        expect="protocol",
        same_host=False,
    ),
    # -- sys.modules and builtins tampering -------------------------------------------------------
    A(
        "tamper_json_dumps",
        "tampering",
        """
        import json
        real = json.dumps
        def forged(obj, **kw):
            if type(obj) is dict and "result" in obj:
                obj = dict(obj, result={"success": True, "data": "TAMPERED"})
            return real(obj, **kw)
        json.dumps = forged
        return {"tampered": True}
    """,
        "one host per episode: the zygote never runs program code, the next episode is clean",
        policy=False,
        same_host=False,
    ),
    A(
        "tamper_framing",
        "tampering",
        """
        import json, sys
        def forged(sock, message):
            sock.sendall(frame_bytes(json.dumps(forged_reply(p, {"tampered": True})).encode()))
        sys.modules["framing"].send_frame = forged  # replaces every later reply of this host
        sys.modules["host"].send_frame = forged
        return {"tampered": True}
    """,
        "one host per episode: the next episode is clean",
        same_host=False,
    ),
    A(
        "tamper_builtins_len",
        "tampering",
        """
        import builtins
        builtins.len = lambda obj: 0  # defeats the host's own reply-size check
        return {"blob": "x" * (16 << 20)}
    """,
        "the parent enforces the reply cap itself (here the forged length breaks the frame)",
        expect="too_large|exceeds|…|killed|protocol",
        same_host=False,
    ),
    # -- pickle ---------------------------------------------------------------------------------
    A(
        "pickle_payload_in_host",
        "pickle",
        """
        import pickle
        command = b"echo ESCAPED > " + p["path"].encode()
        return {"r": pickle.loads(b"cos\\nsystem\\n(S'" + command + b"'\\ntR.")}
    """,
        "chroot: pickle is not importable; it could only run in the host anyway",
        expect="ModuleNotFoundError",
    ),
    A(
        "reduce_in_result",
        "pickle",
        """
        class Evil:
            def __reduce__(self):
                return (open, (p["path"], "w"))
        return {"evil": Evil(), "more": [Evil()]}
    """,
        "JSON-only channel: exact-type check refuses objects; nothing is ever unpickled",
        expect="not a JSON value",
        serializes=True,
    ),
    # -- results whose serialization runs code ------------------------------------------------
    A(
        "result_hooks",
        "serialization",
        """
        class Loud(str):
            def __str__(self):
                raise RuntimeError("str ran")
            def __repr__(self):
                return "R" * (1 << 20)
            def __eq__(self, other):
                raise RuntimeError("eq ran")
            __hash__ = str.__hash__
        return {"v": Loud("x"), "n": [Loud("y")]}
    """,
        "exact-type check: a str subclass is not JSON, no hook runs in the parent",
        expect="not a JSON value",
        serializes=True,
    ),
    A(
        "hostile_key_repr",
        "serialization",
        """
        class Key:
            def __repr__(self):
                raise RuntimeError("repr ran")
        return {Key(): 1}
    """,
        "the host's error handling: a raising repr becomes a program error",
        expect="RuntimeError|non-string key|repr ran",
        policy=False,
        serializes=True,
    ),
    A(
        "exception_str_raises",
        "serialization",
        """
        class Nasty(Exception):
            def __str__(self):
                raise Nasty()
        raise Nasty()
    """,
        "the host dies on its own error text; parent: killed, next host clean",
        expect="killed|Nasty",
        policy=False,
    ),
    A(
        "infinite_generator_result",
        "serialization",
        """
        import itertools
        return {"count": itertools.count(), "gen": (x for x in iter(int, 1))}
    """,
        "exact-type check: generators are refused, never iterated",
        expect="not a JSON value",
        policy=False,
        serializes=True,
    ),
    A(
        "deep_nested_result",
        "serialization",
        """
        v = []
        for _ in range(5000):
            v = [v]
        return {"deep": v}
    """,
        "host's json.dumps fails: the host dies alone (killed)",
        expect="killed|RecursionError",
        policy=False,
        serializes=True,
    ),
    A(
        "nan_infinity_result",
        "serialization",
        'return {"nan": float("nan"), "big": 1e308 * 10}',
        "the host refuses non-finite numbers",
        expect="not a finite number",
        policy=False,
        serializes=True,
    ),
    A(
        "non_str_keys",
        "serialization",
        'return {1: "a", (1, 2): "b", None: "c", 1.5: "d"}',
        "the host refuses non-string keys",
        expect="non-string key",
        policy=False,
        serializes=True,
    ),
    A(
        "giant_int",
        "serialization",
        """
        import sys
        sys.set_int_max_str_digits(0)
        return {"n": 10 ** 6000}
    """,
        "the parent's int digit limit refuses the frame (protocol)",
        expect="protocol",
        serializes=True,
    ),
    # -- mutating the caller's objects ---------------------------------------------------------
    A(
        "mutate_arguments",
        "mutation",
        """
        p["reads"].append("MUTATED")
        p["dir"] = "MUTATED"
        p.clear()
        return {"mutated": True}
    """,
        "separate process: mutation invisible to the caller",
        policy=False,
        modes=NOT_MODULE,
    ),
    # -- ending the call abruptly ---------------------------------------------------------------
    A(
        "os_exit_mid_call",
        "crashes",
        "import os\nos._exit(3)",
        "the parent sees EOF: killed",
        expect="killed",
        basic=True,
        basic_expect="killed",
    ),
    A(
        "system_exit",
        "crashes",
        "raise SystemExit(0)",
        "the host catches BaseException",
        expect="SystemExit",
        policy=False,
    ),
    A(
        "keyboard_interrupt",
        "crashes",
        "raise KeyboardInterrupt",
        "the host catches BaseException",
        expect="KeyboardInterrupt",
        policy=False,
    ),
    # -- second red team (issue 9): policy routes, native code, what the parent trusts -----------
    A(
        "match_class_builtins",
        "policy",
        """
        match len:
            case object(__self__=b):
                os = b.__import__("os")
                return {"env": dict(os.environ), "pid_seen": os.getpid() > 0}
        return {"matched": False}
    """,
        "policy: class-pattern keywords are attribute access; the sandbox: nothing to reach",
    ),
    A(
        "private_helper_runs_text",
        "policy",
        """
        from dataclasses import _create_fn
        f = _create_fn("f", [], ["return __import__('os').getpid()"], globals={})
        return {"pid": f()}
    """,
        "policy: private names of allowed modules; the sandbox: a pid in its own namespace",
    ),
    A(
        "format_through_getattr",
        "policy",
        """
        template = "{0." + "__class__" + "}"
        return {"reached": getattr(str, "format")(template, 1)}
    """,
        "policy: getattr of format is a template read; the sandbox: nothing to reach",
    ),
    A(
        "type_alias_class",
        "policy",
        """
        t = type
        return {"made": t("Made", (), {"x": 1}).x}
    """,
        "policy: type only with one argument",
    ),
    A(
        "memfd_exec",
        "native",
        """
        import os
        try:
            fd = os.memfd_create("payload")
        except OSError as exc:
            return {"memfd": repr(exc)}
        try:
            os.execve(fd, ["payload"], {})
        except OSError as exc:
            return {"exec": repr(exc)}
        return {"verdict": "ESCAPED"}
    """,
        "seccomp: no memory files, no execve",
        expect="Operation not permitted",
    ),
    A(
        "exec_self",
        "native",
        """
        import os, sys
        try:
            os.execv(sys.executable or "/proc/self/exe", ["python", "-c", "pass"])
        except OSError as exc:
            return {"exec": repr(exc)}
        return {"verdict": "ESCAPED"}
    """,
        "seccomp: no execve",
        expect="Operation not permitted",
    ),
    A(
        "abstract_socket_listen",
        "native",
        """
        import socket
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(b"\\0envmill-peer-talk")
            s.listen()
        except OSError as exc:
            return {"socket": repr(exc)}
        return {"verdict": "ESCAPED"}
    """,
        "seccomp: no new sockets, so concurrent hosts have nothing to talk over",
        expect="Operation not permitted",
    ),
    A(
        "many_small_values",
        "outputs",
        "return [{}] * 400000",
        "the parent bounds the values a reply may decode into (too_large)",
        expect="too_large|exceeds",
        policy=False,
        serializes=True,
    ),
    A(
        "lone_surrogate_result",
        "serialization",
        'return {"text": "\\ud800"}',
        "a reply must be valid Unicode: refused where it is made, and where it is read",
        expect="Unicode|protocol|killed",
        policy=False,
        serializes=True,
    ),
    A(
        "forge_frame_surrogate",
        "forgery",
        'import os\nos.write(3, frame_bytes(b\'{"ok": true, "state": {"s": "\\\\ud800"}}\'))',
        "the parent refuses escaped lone surrogates (protocol)",
        expect="protocol",
        same_host=False,
    ),
    A(
        "argv_config",
        "leaks",
        """
        import sys
        return {"argv": list(sys.argv)}
    """,
        "the zygote drops its command line before any host is forked",
        absent=("uid_base", "base_dir", "envmill-sandbox-"),
        policy=False,
    ),
]

BY_NAME = {attack.name: attack for attack in ATTACKS}
