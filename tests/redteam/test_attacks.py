"""Red team: every attack of ``attacks.py`` run straight against the sandbox, bypassing the policy.

Each attack runs as a tool method, as a check function and as module-level code. Effects are
judged from the parent's side: secrets and canary files, listening sockets, processes (psutil),
the zygote, the caller's own objects; then the sandbox must serve a clean job, and no process may
be left behind. Real holes are ``xfail(strict=True)`` with the hole named in the reason.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil
import pytest

from envmill.tasks.envs.policy import check_check_source, check_module
from envmill.tasks.sandbox import (
    CheckCell,
    ChecksOutcome,
    Sandbox,
    SandboxLimits,
    SandboxOutcome,
    ToolOutcome,
)
from envmill.tasks.sandbox.client import CHECKS_BUDGET
from tests.procs import descendants
from tests.redteam.attacks import ATTACKS, BY_NAME, MODES, PRELUDE, Attack

LIMITS = SandboxLimits(cpu_seconds=1, wall_seconds=1.5, memory_mb=256)
CANARY = "sk-redteam-canary"
SLACK_SECONDS = 0.75  # a request may exceed its time by the kill round trip, no more
# A call or a load has the wall time; a checks request runs each check several times (apart, then
# probed), each evaluation within half the wall time, all within one budget for the request.
PROMISED_SECONDS = {"checks": CHECKS_BUDGET * LIMITS.wall_seconds}
# A check's evaluation runs in a child of a disposable host, holding only a pipe to it: one that
# dies or hangs is reported by the host ("no answer within"), one that takes its host down with
# it (same uid) as the host's death, and one that writes to the factory's channel finds no such
# descriptor.
CHECK_DIED = "no answer within|killed|closed|Bad file descriptor"
REPO = Path(__file__).resolve().parents[2]

TEMPLATES = {
    "method": """
class Target:
    def __init__(self):
        self.n = 0

    def attack(self, p: dict) -> dict:
        return {"success": True, "data": run(p)}

    def ping(self) -> dict:
        return {"success": True, "data": "pong"}
""",
    "check": """
def check(initial_state, final_state):
    out = run(initial_state["p"])
    if type(out) is dict:
        raise ValueError(repr(out))  # the error text is a check's only way out
    return out
""",
    "check_return": """
def check(initial_state, final_state):
    return run(initial_state["p"])
""",
    "module": """
LEAK = run({P})


class Target:
    def __init__(self):
        self.n = 0
        self.leak = LEAK

    def ping(self) -> dict:
        return {"success": True, "data": "pong"}
""",
}
CLEAN = """
class Clean:
    def __init__(self):
        self.n = 0

    def bump(self) -> dict:
        self.n += 1
        return {"success": True, "data": self.n}
"""
CLEAN_CHECK = "def check(initial_state, final_state):\n    return final_state['n'] > 0\n"


def build_source(body: str, mode: str, p: dict, returns: bool = False) -> str:
    """The hostile program: prelude, ``run(p)`` with the attack's body, and the mode's wrapper."""
    run = "def run(p):\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"
    wrapper = TEMPLATES["check_return" if mode == "check" and returns else mode]
    return f"{PRELUDE}\n\n{run}\n{wrapper.replace('{P}', repr(p))}"


def attack_source(attack: Attack, mode: str, p: dict) -> str:
    return build_source(attack.body, mode, p, returns=attack.serializes)


def expected(attack: Attack, mode: str) -> str | None:
    """A check may only return a bool: a hostile return value is refused by its type alone."""
    if mode == "check" and attack.serializes:
        return "not bool"
    if mode == "check" and attack.expect:  # each evaluation runs in a child of a disposable host
        return f"{attack.expect}|{CHECK_DIED}"
    return attack.expect


def policy_violations(source: str, mode: str) -> list:
    return check_check_source(source) if mode == "check" else check_module(source)


# -- the world outside the sandbox: canaries and listeners ----------------------------------------


@dataclass
class World:
    outside: Path
    markers: tuple[str, ...]
    sockets: dict[str, socket.socket]
    names: dict[str, object]

    def params(self, mode: str) -> dict:
        return {**copy.deepcopy(self.names), "mode": mode}

    def snapshot(self) -> dict[str, tuple[int, bool]]:
        return {
            str(p.relative_to(self.outside)): (p.lstat().st_size, p.is_symlink())
            for p in sorted(self.outside.rglob("*"))
        }

    def intrusions(self) -> list[str]:
        """What reached the test's listeners (draining it, so one test never taints the next)."""
        found = []
        for name in ("tcp", "abstract", "unix"):
            try:
                self.sockets[name].accept()[0].close()
                found.append(name)
            except BlockingIOError:
                pass
        try:
            self.sockets["udp"].recvfrom(1 << 16)
            found.append("udp")
        except BlockingIOError:
            pass
        return found

    def reach_reverse(self) -> list[str]:
        """Which of the host's own listeners (see ``listen_for_parent``) the parent can reach."""
        reached = []
        for family, address in (
            (socket.AF_INET, ("127.0.0.1", self.names["rport"])),
            (socket.AF_UNIX, self.names["rabstract"]),
        ):
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.settimeout(0.2)
                try:
                    probe.connect(address)
                    reached.append(str(address))
                except OSError:
                    pass
        return reached


def _listener(family: int, kind: int, address: object) -> socket.socket:
    sock = socket.socket(family, kind)
    sock.bind(address)
    if kind == socket.SOCK_STREAM:
        sock.listen(16)
    sock.setblocking(False)
    return sock


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _outside_markers(outside: Path, secret: str) -> tuple[str, ...]:
    """Strings that exist only outside the sandbox; none may ever reach the parent from a host."""
    markers = [CANARY, secret, "uid_base"]  # uid_base: in the zygote's own command line
    repo_lines = (REPO / "pyproject.toml").read_text().splitlines()
    markers.append(max(repo_lines, key=len))
    for path in ("/etc/passwd", "/proc/1/cmdline"):
        try:
            head = Path(path).read_bytes().split(b"\n")[0].split(b"\0")[0][:40].decode()
        except OSError:
            continue
        if len(head) > 6:
            markers.append(head)
    return tuple(markers)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    outside = tmp_path_factory.mktemp("redteam-outside")
    secret = f"REDTEAM-SECRET-{secrets.token_hex(8)}"
    (outside / "secret.txt").write_text(secret)
    (outside / "victim").mkdir()
    (outside / "victim" / "keep").write_text("keep")
    tag = secrets.token_hex(6)
    sockets = {
        "tcp": _listener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)),
        "udp": _listener(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)),
        "abstract": _listener(socket.AF_UNIX, socket.SOCK_STREAM, f"\0redteam-{tag}"),
        "unix": _listener(socket.AF_UNIX, socket.SOCK_STREAM, str(outside / "sock")),
    }
    names = {
        "path": str(outside / "written"),
        "secret_file": str(outside / "secret.txt"),
        "dir": str(outside / "victim"),
        "unix_path": str(outside / "sock"),
        "reads": [
            "/etc/passwd",
            str(REPO / "pyproject.toml"),
            str(outside / "secret.txt"),
            "/proc/1/cmdline",
            "/proc/self/environ",
        ],
        "port": sockets["tcp"].getsockname()[1],
        "udp_port": sockets["udp"].getsockname()[1],
        "abstract": f"\0redteam-{tag}",
        "rport": _free_port(),
        "rabstract": f"\0redteam-r-{tag}",
        "factory": os.getpid(),
        "fork_limit": 8,
        "linger": 8,
    }
    yield World(outside, _outside_markers(outside, secret), sockets, names)
    for sock in sockets.values():
        sock.close()


@pytest.fixture(scope="module")
def canary_env():
    """A fake API key in this process's environment before any sandbox of this module starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", CANARY)
        yield


@pytest.fixture(scope="module")
def box(canary_env):
    with Sandbox(LIMITS) as sandbox:
        level = sandbox.level
        if not (level.namespaces and level.chroot and level.drop_uid):
            pytest.skip(f"only {sandbox.isolation}: these attacks would hit the machine itself")
        assert not run_clean_jobs(sandbox)  # starts the zygote: a legitimate long-lived child
        yield sandbox


@pytest.fixture(scope="module")
def basic_box(canary_env):
    with Sandbox(LIMITS.model_copy(update={"isolation": "basic"})) as sandbox:
        assert sandbox.isolation == "rlimits+scrubbed-env+tmp-cwd"  # basic promises no more
        assert not run_clean_jobs(sandbox)
        yield sandbox


# -- running one attack and collecting evidence from the parent's side ---------------------------


@dataclass
class Evidence:
    outcomes: list[tuple[str, SandboxOutcome]] = field(default_factory=list)
    durations: list[tuple[str, float]] = field(default_factory=list)
    parent_error: str | None = None
    host_files: str = ""
    reverse: list[str] = field(default_factory=list)
    recovered: bool | None = None
    bystander: object = None
    clean: list[str] = field(default_factory=list)
    leftover: set[int] = field(default_factory=set)
    strays: set[int] = field(default_factory=set)
    host_dirs: list[str] = field(default_factory=list)
    mutated_args: bool = False

    def record(self, kind: str, start: float, outcome: SandboxOutcome) -> SandboxOutcome:
        self.durations.append((kind, time.monotonic() - start))
        self.outcomes.append((kind, outcome))
        return outcome

    @property
    def text(self) -> str:
        return "\n".join(f"{kind}: {outcome!r}" for kind, outcome in self.outcomes)


def zygote_pids(box: Sandbox) -> set[int]:
    """The zygote (and the ``unshare`` wrapper in front of it): legitimate long-lived children."""
    if box._zygote is None or box._zygote.poll() is not None:
        return set()
    wrapper = box._zygote.pid
    if not box.level.namespaces:
        return {wrapper}
    return {wrapper, *(child.pid for child in psutil.Process(wrapper).children())}


def sandbox_processes(base_dirs: set[str]) -> set[int]:
    """Every process whose command line names one of these sandboxes (forks inherit it)."""
    found = set()
    for proc in psutil.process_iter(["cmdline", "status"]):
        line = " ".join(proc.info["cmdline"] or [])
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(d in line for d in base_dirs):
            found.add(proc.pid)
    return found


def read_host_files(box: Sandbox) -> str:
    """What hosts wrote into their folders (read while they live: the zygote removes them)."""
    chunks = []
    for path in list(Path(box._base_dir).rglob("*"))[:300] if box._base_dir else []:
        try:
            if path.is_file() and not path.is_symlink():
                chunks.append(path.read_bytes()[: 1 << 16].decode("latin-1"))
        except OSError:
            pass
    return "\n".join(chunks)


def attack_host(
    box: Sandbox, world: World, ev: Evidence, *, source: str, mode: str, p: dict, same_host: bool
) -> None:
    """Run the hostile program once in ``mode``; read what it left while its host still lives."""
    if mode == "check":
        start = time.monotonic()
        ev.record("checks", start, box.run_checks([source], [({"p": p}, {"p": p})]))
        ev.host_files = read_host_files(box)
        return
    start = time.monotonic()
    episode = box.episode(source, "Target")
    try:
        ev.record("load", start, episode.load_outcome)
        if mode == "method":
            start = time.monotonic()
            ev.record("call", start, episode.call("attack", {"p": p}))
        ev.host_files = read_host_files(box)
        ev.reverse = world.reach_reverse()
        if mode == "method" and same_host:
            pings = [episode.call("ping", {}) for _ in range(2)]
            ev.recovered = any(o.result == {"success": True, "data": "pong"} for o in pings)
    finally:
        episode.close()


def run_clean_jobs(box: Sandbox) -> list[str]:
    problems = []
    with box.episode(CLEAN, "Clean") as episode:
        outcome = episode.call("bump", {})
        if outcome.result != {"success": True, "data": 1} or outcome.state != {"n": 1}:
            problems.append(f"clean episode: {outcome!r}")
    checks = box.run_checks([CLEAN_CHECK], [({"n": 0}, {"n": 1})])
    if checks.cells != [[CheckCell(value=True, error=None, mutated=False)]]:
        problems.append(f"clean checks: {checks!r}")
    return problems


def settle(box: Sandbox, ev: Evidence, before: set[int], base_dirs: set[str]) -> None:
    """Wait for the zygote to reap and clean up; then record what is still there."""
    deadline = time.monotonic() + 5
    box.release_idle()  # a checks host kept for the next request is not left behind: ended here
    while True:
        box.kill_host(-1)  # a no-op request: the zygote reaps before it answers
        known = zygote_pids(box)
        ev.leftover = descendants() - before - known
        ev.host_dirs = [p.name for p in Path(box._base_dir).iterdir()] if box._base_dir else []
        if (not ev.leftover and not ev.host_dirs) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    # Not waited for: a process outside our tree that still names this sandbox escaped its host.
    ev.strays = sandbox_processes(base_dirs) - zygote_pids(box) - descendants()


def run_attack(box: Sandbox, world: World, attack: Attack, mode: str) -> Evidence:
    ev, p = Evidence(), world.params(mode)
    source = attack_source(attack, mode, p)
    before, base_dirs = descendants(), {box._base_dir or "-"}
    try:
        with box.episode(CLEAN, "Clean") as bystander:
            bystander.call("bump", {})
            try:
                attack_host(
                    box, world, ev, source=source, mode=mode, p=p, same_host=attack.same_host
                )
            finally:
                ev.bystander = bystander.call("bump", {}).result
        ev.clean = run_clean_jobs(box)
    except Exception as exc:  # the parent must never raise on a hostile program
        ev.parent_error = f"{type(exc).__name__}: {str(exc)[:200]}"
    base_dirs.add(box._base_dir or "-")
    settle(box, ev, before, base_dirs)
    ev.mutated_args = p != world.params(mode)
    return ev


# -- judging the evidence ---------------------------------------------------------------------


def contract_problems(kind: str, outcome: SandboxOutcome) -> list[str]:
    """What the caller is promised about every outcome, whatever the program did."""
    problems = []
    if isinstance(outcome, ToolOutcome) and type(outcome.result) is not dict:
        problems.append(f"{kind}: result is a {type(outcome.result).__name__}")
    if outcome.ok and kind != "checks" and type(getattr(outcome, "state", None)) is not dict:
        problems.append(f"{kind}: an ok outcome without a dict state")
    try:
        json.dumps(asdict(outcome), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        problems.append(f"{kind}: not finite JSON ({type(exc).__name__})")
    if isinstance(outcome, ChecksOutcome) and outcome.ok:
        rows = outcome.cells
        cells = rows[0] if len(rows) == 1 else []
        if len(cells) != 1 or not all(
            type(c) is CheckCell
            and any(c.value is v for v in (True, False, None))
            and type(c.mutated) is bool
            for c in cells
        ):
            problems.append(f"checks: malformed results {str(rows)[:80]}")
    return problems


def assert_common(ev: Evidence, attack: Attack, expect: str | None, markers: tuple[str, ...]):
    assert ev.parent_error is None, f"the parent raised: {ev.parent_error}"
    problems = [p for kind, outcome in ev.outcomes for p in contract_problems(kind, outcome)]
    assert not problems, f"broken reply contract: {problems}"
    text = ev.text
    leaked = [m for m in (*markers, *attack.absent, "ESCAPED") if m in text or m in ev.host_files]
    assert not leaked, f"reached the parent or a host file: {[m[:24] for m in leaked]}"
    for kind, seconds in ev.durations:
        promised = PROMISED_SECONDS.get(kind, LIMITS.wall_seconds)
        assert seconds <= promised + SLACK_SECONDS, f"a {kind} request took {seconds:.2f} s"
    if expect:  # quotes and escapes differ between a result, a state and a check's error text
        plain = re.sub(r"[\\'\"]", "", text)
        assert re.search(expect, plain, re.S), f"expected /{expect}/ in {plain[:600]}"
    assert ev.recovered is not False, "the episode did not answer a clean call after the attack"
    assert ev.bystander == {"success": True, "data": 2}, f"a bystander was hit: {ev.bystander}"
    assert not ev.clean, f"the next clean job failed: {ev.clean}"
    assert not ev.mutated_args, "the caller's arguments changed"
    assert not ev.leftover and not ev.strays, f"processes left behind: {ev.leftover | ev.strays}"
    assert not ev.host_dirs, f"host folders left behind: {ev.host_dirs}"


def _param(attack: Attack, mode: str, hole: str | None, strict: bool = True):
    marks = [pytest.mark.xfail(strict=strict, reason=hole)] if hole else []
    return pytest.param(attack, mode, id=f"{attack.name}-{mode}", marks=marks)


FULL_CASES = [_param(a, mode, a.hole) for a in ATTACKS for mode in a.modes]
BASIC_CASES = [
    _param(a, "method", a.basic_hole, a.basic_hole_every_time) for a in ATTACKS if a.basic
]


@pytest.mark.parametrize(("attack", "mode"), FULL_CASES)
def test_attack_fails_against_full_isolation(box, world, capfd, attack, mode):
    if attack.policy:
        source = attack_source(attack, mode, world.params(mode))
        assert policy_violations(source, mode), "the static policy should refuse this source"
    zygote, outside = zygote_pids(box), world.snapshot()
    ev = run_attack(box, world, attack, mode)
    intrusions = world.intrusions()
    assert_common(ev, attack, expected(attack, mode), world.markers)
    assert not intrusions, f"the test's listeners were reached: {intrusions}"
    assert not ev.reverse, f"the parent reached what a host bound: {ev.reverse}"
    assert world.snapshot() == outside, "files outside the sandbox changed"
    assert zygote_pids(box) == zygote, "the zygote was killed or replaced"
    assert "FLOOD" not in "".join(capfd.readouterr()), "a host wrote to the parent's stdio"


@pytest.mark.parametrize(("attack", "mode"), BASIC_CASES)
def test_attack_fails_against_basic_isolation(basic_box, world, attack, mode):
    """Basic mode promises a scrubbed environment, limits and recovery; no fs or network."""
    try:
        ev = run_attack(basic_box, world, attack, mode)
    finally:
        world.intrusions()  # basic mode has network: drain what reached the listeners
    for pid in ev.strays:  # forks of our own hosts that escaped (a basic-mode hole): end them
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert_common(ev, attack, attack.basic_expect, (CANARY,))


# -- attacks that need more than one host or process --------------------------------------------


def test_catalogue_is_broad_and_attributable():
    names = [a.name for a in ATTACKS]
    assert len(names) == len(set(names)) >= 40
    assert len({a.category for a in ATTACKS}) >= 12
    assert all(a.stops and set(a.modes) <= set(MODES) for a in ATTACKS)
    for mode in MODES:  # the wrappers pass the policy, so a refusal is the attack body's doing
        for returns in (False, True):
            source = build_source("return {}", mode, {"mode": mode}, returns)
            assert policy_violations(source, mode) == []


def test_detectors_see_real_effects(world):
    """Controls: the parent-side detectors fire when the effect does happen (outside a sandbox)."""
    before = world.snapshot()
    (world.outside / "written").write_text("ESCAPED")
    assert world.snapshot() != before
    (world.outside / "written").unlink()
    with socket.create_connection(("127.0.0.1", world.names["port"])):
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.sendto(b"x", ("127.0.0.1", world.names["udp_port"]))
    for address in (world.names["abstract"], world.names["unix_path"]):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
            unix.connect(address)
    assert sorted(world.intrusions()) == ["abstract", "tcp", "udp", "unix"]
    assert world.intrusions() == []  # drained
    assert Path(world.names["secret_file"]).read_text() in world.markers


@pytest.mark.parametrize("isolation", ["auto", "basic"])
def test_deep_tree_does_not_break_the_sandbox(canary_env, isolation):
    """A fresh sandbox: a deep tree once killed the zygote (recursive rmtree) and poisoned close().

    With full isolation the host's folder is read-only, so the tree cannot even start; in basic
    mode it is writable and the tree is built, so this is where the iterative cleanup is proven.
    """
    attack = BY_NAME["deep_directory_tree"]
    limits = LIMITS.model_copy(update={"isolation": isolation})
    box, base, error, clean, seen, dug = Sandbox(limits), None, None, ["not run"], None, None
    try:
        with box.episode(CLEAN, "Clean") as bystander:
            bystander.call("bump", {})
            with box.episode(build_source(attack.body, "method", {}), "Target") as episode:
                base = box._base_dir
                dug = episode.call("attack", {"p": {"depth": 1500}})
            deadline = time.monotonic() + 3
            while any(Path(base).iterdir()) and time.monotonic() < deadline:  # until reaped
                box.kill_host(-1)
                time.sleep(0.05)
            seen = bystander.call("bump", {}).result
        clean = run_clean_jobs(box)
    except Exception as exc:  # noqa: BLE001 - the parent must never raise; record what it did
        error = f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(Exception):
            box.close()
        if base:  # rm, not shutil.rmtree: the tree is deeper than Python's recursion limit
            subprocess.run(["rm", "-rf", "--", base], check=False)
    assert error is None, f"the parent raised: {error}"
    assert dug is not None and dug.result.get("success") is not None, dug
    assert seen == {"success": True, "data": 2}, f"a concurrent episode was killed: {seen}"
    assert not clean, clean


PEER = """
import socket, sys


class Peer:
    def __init__(self):
        self.n = 0

    def listen(self, name: str) -> dict:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(name)
        server.listen()
        server.setblocking(False)
        sys.modules["host"].KEEP = server
        return {"success": True}

    def talk(self, name: str, token: str) -> dict:
        try:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(name)
            client.sendall(token.encode())
            return {"success": True, "data": "connected"}
        except OSError as exc:
            return {"success": False, "error": repr(exc)}

    def hear(self) -> dict:
        try:
            conn = sys.modules["host"].KEEP.accept()[0]
            return {"success": True, "data": conn.recv(100).decode()}
        except OSError as exc:
            return {"success": False, "error": repr(exc)}
"""


def test_concurrent_hosts_cannot_talk(box):
    """Two live episodes of one sandbox: the seccomp filter refuses new sockets, so neither can
    open the abstract socket their shared network namespace would otherwise carry."""
    name, token = f"\0redteam-peer-{secrets.token_hex(4)}", secrets.token_hex(8)
    with box.episode(PEER, "Peer") as one, box.episode(PEER, "Peer") as two:
        listened = one.call("listen", {"name": name}).result
        talked = two.call("talk", {"name": name, "token": token}).result
        heard = one.call("hear", {}).result
    assert token not in repr(heard) and not talked["success"], f"hosts talked: {talked} {heard}"
    if box.level.seccomp:
        assert "Operation not permitted" in repr(listened), listened


SNOOP = """
import gc, sys


class Snoop:
    def __init__(self):
        self.n = 0

    def snoop(self) -> dict:
        hits = [k for k in getattr(sys.modules["host"], "COMPILED", {}) if "ITEM-A-" in k]
        for o in gc.get_objects():
            items = o if type(o) in (list, tuple) else []
            items = list(o) + list(o.values()) if type(o) is dict else items
            hits += [x for x in items if type(x) is str and "ITEM-A-" in x]
        return {"success": True, "data": [h[h.find("ITEM-A-"):][:40] for h in hits]}
"""


def test_episode_cannot_read_other_sources(box):
    token = f"ITEM-A-{secrets.token_hex(8)}"
    with box.episode(CLEAN + f"\n# {token}\n", "Clean") as first:
        assert first.call("bump", {}).result["success"]
    with box.episode(SNOOP, "Snoop") as second:
        found = second.call("snoop", {}).result
    assert token not in repr(found), "another episode's source was readable"


MUTABLE = """
class Mutable:
    def __init__(self):
        self.items = []

    def push(self, values: list) -> dict:
        values.append("from-the-host")
        self.items.append(values)
        self.items[0].append("changed")
        return {"success": True, "data": self.items}
"""
MUTATING_CHECK = (
    "def check(initial_state, final_state):\n    initial_state['items'].append(9)\n"
    "    final_state.clear()\n    return True\n"
)


def test_callers_objects_never_change(box):
    state, args = {"items": [["seed"]]}, {"values": ["arg"]}
    state_copy, args_copy = copy.deepcopy(state), copy.deepcopy(args)
    with box.episode(MUTABLE, "Mutable", state) as episode:
        first = episode.call("push", args)
        first_state = copy.deepcopy(first.state)
        episode.call("push", args)
    assert (state, args, first.state) == (state_copy, args_copy, first_state)
    pairs = [(copy.deepcopy(state), copy.deepcopy(state))]
    outcome = box.run_checks([MUTATING_CHECK], pairs)
    assert pairs == [(state_copy, state_copy)]
    assert outcome.cells == [[CheckCell(value=True, error=None, mutated=True)]]


FACTORY_SCRIPT = """
import json, os, sys
from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox import Sandbox
limits = SandboxLimits(cpu_seconds=1, wall_seconds=1.5, memory_mb=256, isolation=sys.argv[2])
with Sandbox(limits) as box, box.episode(sys.argv[1], "Target") as episode:
    print("BASE", box._base_dir, flush=True)
    outcome = episode.call("attack", {"p": {"factory": os.getpid()}})
    print("REPLY", json.dumps(outcome.result), flush=True)
print("ALIVE", flush=True)
"""
BASIC_FACTORY_HOLES = {
    "kill_factory": "HOLE (basic mode): a host has the factory's uid and sees its pid, so it can "
    "SIGKILL the factory (the whole run, not one item)",
    "env_proc_ancestors": "HOLE (basic mode): a host has the factory's uid and sees its /proc "
    "entry, so it reads OPENAI_API_KEY from /proc/<factory pid>/environ",
}


def run_factory(attack: Attack, isolation: str) -> subprocess.CompletedProcess:
    """Run one attack from a sacrificial factory process whose *startup* environment has the key."""
    source = build_source(attack.body, "method", {})
    run = subprocess.run(
        [sys.executable, "-c", FACTORY_SCRIPT, source, isolation],
        cwd=REPO,
        env={**os.environ, "OPENAI_API_KEY": CANARY},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = run.stdout.splitlines()
    base = next((line.split(" ", 1)[1] for line in lines if line.startswith("BASE")), None)
    if base:  # a killed factory cannot clean up: end its leftovers and remove its folder
        deadline = time.monotonic() + 5
        while sandbox_processes({base}) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in sandbox_processes({base}):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)
    return run


@pytest.mark.parametrize("isolation", ["auto", "basic"])
@pytest.mark.parametrize("name", sorted(BASIC_FACTORY_HOLES))
def test_host_cannot_reach_its_factory(request, name, isolation):
    """The factory's pid and its startup environment (where API keys live) stay out of reach."""
    if isolation == "basic":
        request.applymarker(pytest.mark.xfail(strict=True, reason=BASIC_FACTORY_HOLES[name]))
    run = run_factory(BY_NAME[name], isolation)
    assert run.returncode == 0 and "ALIVE" in run.stdout, f"the factory died ({run.returncode})"
    assert "REPLY" in run.stdout and CANARY not in run.stdout, "the factory's API key leaked"


SIGNAL_THE_HOST = """
import os, signal
def check(initial_state, final_state):
    os.kill(os.getppid(), signal.{sig})
    return True
"""


@pytest.mark.parametrize("sig", ["SIGSTOP", "SIGKILL"])
def test_a_check_child_cannot_stop_or_kill_its_checks_host(box, sig):
    """Issue 24: each evaluation runs in a child of the checks host, with the host's uid. The
    host's syscall filter names its own pid: no signal reaches it from a child, so the host
    lives on and answers the next check of the request (before: stopped, or dead, and every
    other check of the request lost with it)."""
    hostile = SIGNAL_THE_HOST.format(sig=sig)
    outcome = box.run_checks([hostile, CLEAN_CHECK], [({"n": 0}, {"n": 1})], probe=False)
    assert outcome.error is None, outcome
    (refused,), (clean,) = outcome.cells
    assert refused.value is None and "Operation not permitted" in str(refused.error), outcome
    assert clean.value is True, outcome


LOWER_THE_HOSTS_LIMITS = """
import os, sys, resource
def check(initial_state, final_state):
    resource.prlimit(os.getppid(), resource.RLIMIT_{which}, (1, 1))
    return True
"""
FORGE_IN_THE_HOST = """
import os, sys, resource
def check(initial_state, final_state):
    try:  # the host may fork no more: a fallback would run every later check in the host
        resource.prlimit(os.getppid(), resource.RLIMIT_NPROC, (1, 1))
    except OSError:
        pass
    sys.modules['checkrunner']._call = lambda *a, **k: (True, None)
    return True
"""
NEVER = "def check(initial_state, final_state):\n    return False\n"


@pytest.mark.parametrize("which", ["NPROC", "NOFILE", "AS"])
def test_a_check_child_cannot_lower_its_hosts_limits(box, which):
    """A breaker's: a check child shares its host's uid, so prlimit on the host worked; with
    RLIMIT_NPROC the host's next fork failed and the fallback evaluated the checks in the host
    itself; with NOFILE or AS every later check of the request was lost."""
    hostile = LOWER_THE_HOSTS_LIMITS.format(which=which)
    outcome = box.run_checks([hostile, CLEAN_CHECK], [({"n": 0}, {"n": 1})], probe=False)
    assert outcome.error is None, outcome
    (refused,), (clean,) = outcome.cells
    assert "Operation not permitted" in str(refused.error) and clean.value is True, outcome


RENICE_THE_GROUP = """
import os
def check(initial_state, final_state):
    os.{call}
    return True
"""


@pytest.mark.parametrize(
    "call",
    [
        "setpriority(os.PRIO_PGRP, 0, 19)",
        "setpriority(os.PRIO_USER, 0, 19)",
        "setpriority(os.PRIO_PGRP, os.getpgrp(), 19)",
    ],
)
def test_a_check_child_cannot_renice_its_hosts_group_or_uid(box, call):
    """A breaker's: the host's own pid was refused, but its process group (which its check
    children share) and its uid were not, so a check reniced its host to 19 for good."""
    outcome = box.run_checks(
        [RENICE_THE_GROUP.format(call=call), CLEAN_CHECK],
        [({"n": 0}, {"n": 1})],
        probe=False,
        pure=[False, True],
    )
    assert outcome.error is None, outcome
    (refused,), (clean,) = outcome.cells
    assert "Operation not permitted" in str(refused.error) and clean.value is True, outcome


def test_no_check_forges_another_checks_answer(box):
    """The same breaker's forgery: a guard that never holds stays False beside it."""
    pairs = [({"n": 0}, {"n": 1})] * 3
    outcome = box.run_checks([FORGE_IN_THE_HOST, NEVER], pairs)
    assert [cell.value for cell in outcome.cells[1]] == [False, False, False], outcome


def test_an_fcntl_command_with_high_bits_is_still_refused():
    """A breaker's: the kernel reads fcntl's command as 32 bits, so (1 << 32) | F_SETOWN was
    F_SETOWN past a rule that compared all 64 (then SIGIO killed the host). A host can reach
    native calls (``_ctypes`` stays in a process once loaded), so the filter is the boundary:
    every fcntl rule and every rule on a pid compares the low 32 bits, as the kernel reads."""
    import pyseccomp

    from envmill.tasks.sandbox import syscalls

    added: list[tuple[str, object]] = []

    class Recording(pyseccomp.SyscallFilter):
        def add_rule(self, action, name, *args):
            added.extend((name, arg) for arg in args)
            return super().add_rule(action, name, *args)

    binding = type("Binding", (), {**vars(pyseccomp), "SyscallFilter": Recording})
    assert syscalls.build_filter(binding, 4242)
    compared = [arg for name, arg in added if name in ("fcntl", "kill", "prlimit64")]
    assert compared and all(arg._op == pyseccomp.MASKED_EQ for arg in compared)
