"""Nothing a run starts outlives it, even ``kill -9``; its temp folders are reaped by the next
run; a Prefect API that stops answering ends a run with one line instead of hanging it."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from envmill.flows.runtime.leftovers import reap_leftovers
from envmill.flows.runtime.prefect_api import SERVER_RECORD
from envmill.tasks.core.scratch import folder_owner, owned_folders, owned_tempdir, process_start
from tests.procs import processes_started_under
from tests.timing import scaled

CLI = [sys.executable, "-c", "from envmill.flows.cli import main; main()"]
RUN = ["run", "--envs", "4", "--scenarios-per-env", "2", "--batch-size", "1"]
GONE_WITHIN_SECONDS = 10.0  # a hang guard, not a measurement: it takes well under a second


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ENVMILL_", "OPENAI_"))
    }
    # TMPDIR: every temp folder of the run, and so every leftover, is under tmp_path
    return {**env, "TMPDIR": str(tmp_path), "ENVMILL_SANDBOX__WALL_SECONDS": "5", **extra}


def _alive(pid: int) -> bool:
    """Still a process: a zombie is not (an orphan's zombie waits for init, not for us)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _survivors(pids: dict[int, str], seconds: float = GONE_WITHIN_SECONDS) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        left = [f"{pid}: {line}" for pid, line in pids.items() if _alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _descendants(pid: int) -> dict[int, str]:
    found = {}
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return found
    for child in children:
        try:
            found[child.pid] = " ".join(child.cmdline())[:160]
        except psutil.Error:
            continue
    return found


def _leftover_folders(tmp: Path) -> list[str]:
    """envmill temp folders (of any owner) and Dask scratch folders directly in ``tmp``."""
    names = ("envmill-", "dask-scratch-space", "dask-worker-space")
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(names))


def _start_run(tmp_path: Path, root: Path, **popen) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, *RUN, "--out", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        **popen,
    )


def _watch_until(
    process: subprocess.Popen[str], ready: Callable[[dict[int, str]], bool], seconds: float = 240
) -> dict[int, str]:
    """Every process seen below ``process`` until ``ready`` says so (given what runs now)."""
    seen: dict[int, str] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-2000:]
        now = _descendants(process.pid)
        seen.update(now)
        if ready(now):
            return seen
        time.sleep(0.05)
    raise AssertionError("the run never got there")


def _server_starting(root: Path) -> Callable[[dict[int, str]], bool]:
    """The lifeline and the server it forked exist; the server is still importing."""
    return lambda now: (
        (root / "_prefect" / SERVER_RECORD).exists()
        and (sum("server start" in line for line in now.values()) >= 2)
    )


def _workers_starting(now: dict[int, str]) -> bool:
    """The forkserver the workers fork from is up (importing the task code)."""
    return any("multiprocessing.forkserver" in line for line in now.values())


def _workers_busy(root: Path) -> Callable[[dict[int, str]], bool]:
    """A batch is done and others are in flight (a host forked by a zygote is working)."""
    return lambda now: any(
        re.fullmatch(r"[0-9a-f]{16}\.json", p.name) for p in (root / "_commits").glob("*.json")
    )


MOMENTS = {
    "server-starting": _server_starting,
    "workers-starting": lambda root: _workers_starting,
    "workers-busy": _workers_busy,
}


def _kill_9_and_check(tmp_path: Path, root: Path, moment: str) -> None:
    run = _start_run(tmp_path, root)
    try:
        seen = _watch_until(run, MOMENTS[moment](root))
        seen.update(_descendants(run.pid))
    finally:
        run.kill()
        run.communicate()
    assert seen, "the run had started nothing yet"
    assert _survivors(seen) == []
    deadline = time.monotonic() + GONE_WITHIN_SECONDS
    while (strays := processes_started_under(str(tmp_path))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert strays == []  # nothing else that names the run's folders (the server's PREFECT_HOME)


# A run killed at each moment and then run again is tests/e2e/test_kill9.py (with its data checked).


@pytest.mark.timeout(120)
def test_kill_9_while_workers_start_leaves_no_process(tmp_path):
    root = tmp_path / "data"
    _kill_9_and_check(tmp_path, root, "workers-starting")
    reap_leftovers(root, tmp_path)
    assert _leftover_folders(tmp_path) == []


def _like_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as tests/e2e/test_cli_run.py: a foreground job


@pytest.mark.timeout(240)
def test_ctrl_c_leaves_no_sandbox_folder_and_no_process(tmp_path):
    root = tmp_path / "data"
    run = _start_run(tmp_path, root, start_new_session=True, preexec_fn=_like_a_terminal)
    try:
        seen = _watch_until(run, _workers_busy(root))
        os.killpg(run.pid, signal.SIGINT)
        _, err = run.communicate(timeout=scaled(120))
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 130, err[-2000:]
    assert "interrupted; finished batches are kept" in err
    assert _survivors(seen) == []
    assert _leftover_folders(tmp_path) == []  # the sandbox's folders among them


# -- the parts, one at a time --------------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_owned_tempdir_names_its_owner(tmp_path):
    folder = Path(owned_tempdir("sandbox", parent=str(tmp_path)))
    owner = folder_owner(folder.name)
    assert owner is not None and owner.kind == "sandbox"
    assert (owner.pid, owner.start) == (os.getpid(), process_start(os.getpid()))
    assert owned_folders(tmp_path) == [(folder, owner)]
    assert folder.stat().st_mode & 0o777 == 0o700


def test_reap_keeps_a_live_owners_folder_and_removes_a_dead_ones(tmp_path):
    mine = Path(owned_tempdir("dask", parent=str(tmp_path)))
    live_child = subprocess.Popen(["sleep", "60"])
    try:
        theirs = tmp_path / f"envmill-llm-gate-{live_child.pid}-abc"
        dead = tmp_path / f"envmill-sandbox-{_dead_pid()}-xyz"
        for folder in (theirs, dead / "host-1" / "deeper"):
            folder.mkdir(parents=True)
        (dead / "host-1" / "file").write_text("left behind")
        reaped = reap_leftovers(temp_dir=tmp_path)
        assert reaped == [str(dead)]
        assert mine.is_dir() and theirs.is_dir() and not dead.exists()
    finally:
        live_child.kill()
        live_child.wait()


def test_reap_ends_what_still_works_in_a_dead_owners_sandbox_folder(tmp_path):
    """A zygote that missed its parent's death (and its hosts) works in the sandbox folder."""
    dead = tmp_path / f"envmill-sandbox-{_dead_pid()}-stuck"
    (dead / "host-1").mkdir(parents=True)
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]  # sandbox processes are ours
    stuck = subprocess.Popen(sleep, cwd=dead / "host-1")
    elsewhere = subprocess.Popen(sleep, cwd=tmp_path)
    looking = subprocess.Popen(["sleep", "60"], cwd=dead)  # a person's shell looking around
    try:
        assert reap_leftovers(temp_dir=tmp_path) == [str(dead)]
        assert stuck.wait(timeout=scaled(10)) == -signal.SIGKILL
        assert elsewhere.poll() is None and looking.poll() is None
    finally:
        for process in (stuck, elsewhere, looking):
            process.kill()
            process.wait()


def test_reap_knows_a_reused_pid_and_leaves_other_folders_alone(tmp_path):
    # our pid, but another start time: the pid of a dead owner, now given to someone else
    reused = tmp_path / f"envmill-dask-{os.getpid()}-t{process_start(os.getpid()) + 1}-abc"
    lookalikes = [
        tmp_path / f"envmill-data-{_dead_pid()}-12",  # not a kind envmill makes
        tmp_path / f"envmill-sandbox-{_dead_pid()}",  # no random part: not from mkdtemp
        tmp_path / "envmill-sandbox-qbifmr6s",  # an older envmill's: no owner to check
        tmp_path / "dask-scratch-space",
    ]
    for folder in (reused, *lookalikes):
        folder.mkdir()
    (tmp_path / f"envmill-dask-{_dead_pid()}-a-file").write_text("a file, not a folder")
    assert reap_leftovers(temp_dir=tmp_path) == [str(reused)]
    assert all(folder.is_dir() for folder in lookalikes)
    assert reap_leftovers(temp_dir=tmp_path) == []


def test_reapers_racing_for_the_same_folders_both_succeed(tmp_path):
    for n in range(30):
        (tmp_path / f"envmill-sandbox-{_dead_pid()}-r{n}" / "host" / "x").mkdir(parents=True)
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def reap() -> None:
        try:
            results.append(reap_leftovers(temp_dir=tmp_path))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reap) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and list(tmp_path.iterdir()) == []


def test_reap_removes_a_tree_too_deep_to_recurse_into(tmp_path):
    dead = tmp_path / f"envmill-sandbox-{_dead_pid()}-deep"
    dead.mkdir()
    level = os.open(dead, os.O_RDONLY)
    for _ in range(1200):  # deeper than Python's recursion limit, as a basic-mode host can dig
        os.mkdir("d", dir_fd=level)
        deeper = os.open("d", os.O_RDONLY, dir_fd=level)
        os.close(level)
        level = deeper
    os.close(level)
    assert reap_leftovers(temp_dir=tmp_path) == [str(dead)]
    assert not dead.exists()


def _fake_server(home: Path, owner: int, owner_start: int | None) -> subprocess.Popen[bytes]:
    """A process group standing in for a server a run left behind, and its record."""
    group = subprocess.Popen(["sh", "-c", "sleep 60 & exec sleep 60"], start_new_session=True)
    home.mkdir(parents=True)
    record = {"owner": owner, "owner_start": owner_start, "pgid": group.pid}
    record["start"] = process_start(group.pid)
    (home / SERVER_RECORD).write_text(json.dumps(record))
    return group


def test_reap_stops_the_server_of_a_dead_run_only(tmp_path):
    live = _fake_server(tmp_path / "live" / "_prefect", os.getpid(), process_start(os.getpid()))
    dead = _fake_server(tmp_path / "dead" / "_prefect", _dead_pid(), None)
    try:
        members = {p.pid: "sleep" for p in psutil.Process(dead.pid).children()} | {dead.pid: "sh"}
        assert reap_leftovers(tmp_path / "live", tmp_path) == []
        assert live.poll() is None
        assert reap_leftovers(tmp_path / "dead", tmp_path) == [f"process group {dead.pid}"]
        dead.wait(timeout=scaled(10))
        assert _survivors(members) == []
        assert not (tmp_path / "dead" / "_prefect" / SERVER_RECORD).exists()
    finally:
        for group in (live, dead):
            with _suppress_lookup():
                os.killpg(group.pid, signal.SIGKILL)
            group.wait()


@contextmanager
def _suppress_lookup() -> Iterator[None]:
    try:
        yield
    except ProcessLookupError:
        pass


STARTER = """
import sys, time
from envmill.flows.runtime.lifeline import start_tied
process, held = start_tied(["sh", "-c", "sleep 300 & exec sleep 300"])
print(process.pid, flush=True)
time.sleep(300)
"""


def test_a_tied_command_and_what_it_started_die_with_the_starter():
    starter = subprocess.Popen([sys.executable, "-c", STARTER], stdout=subprocess.PIPE, text=True)
    try:
        lifeline = int(starter.stdout.readline())
        deadline = time.monotonic() + scaled(10)
        while len(group := _descendants(lifeline)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        group[lifeline] = "lifeline"
        assert len(group) == 3, group  # the lifeline, the command and its background child
    finally:
        starter.kill()
        starter.wait()
    assert _survivors(group) == []


FORKING_STARTER = """
import os, sys, time
from envmill.flows.runtime.lifeline import start_tied
process, held = start_tied(["sleep", "300"])
holder = os.fork()  # no exec: the child keeps a copy of every descriptor, the pipe's write end too
if holder == 0:
    time.sleep(300)
    os._exit(0)
print(process.pid, holder, flush=True)
time.sleep(300)
"""


def test_a_tied_command_dies_with_its_starter_though_a_forked_child_holds_the_pipe():
    """The pipe's end of file cannot tell the starter is gone while a child it forked without
    exec (as a library may) still holds the write end: the lifeline sees its parent change."""
    starter = subprocess.Popen(
        [sys.executable, "-c", FORKING_STARTER], stdout=subprocess.PIPE, text=True
    )
    lifeline, holder = map(int, starter.stdout.readline().split())
    try:
        starter.kill()
        starter.wait()
        assert _survivors({lifeline: "lifeline"}) == []
    finally:
        os.kill(holder, signal.SIGKILL)


SANDBOX_OWNER = """
import json, sys, threading, time
from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox import Sandbox
box = Sandbox(SandboxLimits(isolation=sys.argv[1], wall_seconds=60, cpu_seconds=30))
source = "import time\\nclass Nap:\\n    def nap(self):\\n        time.sleep(300)\\n"
episode = box.episode(source, "Nap")
threading.Thread(target=episode.call, args=("nap", {}), daemon=True).start()
time.sleep(0.5)
print(json.dumps({"zygote": box._zygote.pid, "base": box._base_dir}), flush=True)
time.sleep(300)
"""


@pytest.mark.parametrize("isolation", ["auto", "basic"])
def test_the_sandbox_dies_with_its_owner_and_removes_its_folder(tmp_path, isolation):
    owner = subprocess.Popen(
        [sys.executable, "-c", SANDBOX_OWNER, isolation],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    try:
        started = json.loads(owner.stdout.readline())
        sandbox = _descendants(owner.pid)
        assert started["zygote"] in sandbox and len(sandbox) >= 2, sandbox  # a host is napping
    finally:
        owner.kill()
        owner.wait()
    assert _survivors(sandbox) == []
    deadline = time.monotonic() + GONE_WITHIN_SECONDS
    while Path(started["base"]).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(started["base"]).exists()  # the zygote removed it on its way out


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid per host needs root")
def test_without_a_pid_namespace_a_host_of_its_own_uid_dies_with_a_killed_zygote():
    """(A host with the zygote's uid, in basic mode, outlives it: it could kill the zygote, and
    would take the other hosts along; the zygote's parent or the next run's reaper ends it.)"""
    from envmill.schemas.settings import SandboxLimits
    from envmill.tasks.sandbox import Sandbox
    from envmill.tasks.sandbox.isolation import IsolationLevel, seccomp_module

    level = IsolationLevel(
        namespaces=False, chroot=True, drop_uid=True, seccomp=bool(seccomp_module())
    )
    limits = SandboxLimits(wall_seconds=60, cpu_seconds=30)
    source = "import time\nclass Nap:\n    def nap(self):\n        time.sleep(300)\n"
    with Sandbox(limits, level) as box:
        episode = box.episode(source, "Nap")
        threading.Thread(target=episode.call, args=("nap", {}), daemon=True).start()
        time.sleep(0.5)
        hosts = {p.pid: "host" for p in psutil.Process(box._zygote.pid).children()}
        assert hosts
        box._zygote.kill()  # SIGKILL: the zygote cleans up nothing
        assert _survivors(hosts) == []


# -- the Prefect API ------------------------------------------------------------------------------


@contextmanager
def _silent_api(health: bool) -> Iterator[str]:
    """A loopback HTTP "API" that accepts connections and never answers (with ``health``, it
    answers ``/health`` and nothing else)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def answer(conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(1 << 16)
            if not chunk:
                return
            data += chunk
        path = data.split(b" ", 2)[1]
        if health and path.endswith(b"/health"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\ntrue")
            conn.close()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/api"
    finally:
        listener.close()
        for conn in held:
            conn.close()


@pytest.mark.timeout(60)
def test_a_configured_api_that_never_answers_is_one_line_before_anything_starts(tmp_path):
    with _silent_api(health=False) as url:
        done = subprocess.run(
            [*CLI, *RUN, "--out", str(tmp_path / "data")],
            capture_output=True,
            text=True,
            timeout=scaled(50),
            cwd=tmp_path,
            env=_env(tmp_path, PREFECT_API_URL=url),
        )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert lines == [f"envmill: error: the Prefect API at {url} did not answer /health within 5 s "
                     "(PREFECT_API_URL)"]  # fmt: skip
    assert _leftover_folders(tmp_path) == []


@pytest.mark.timeout(120)
def test_an_api_that_stops_answering_ends_the_run_with_one_line(tmp_path):
    """Its /health answers; every other request hangs, as a server that stalls mid-run does."""
    quick = {"PREFECT_API_REQUEST_TIMEOUT": "2", "PREFECT_CLIENT_MAX_RETRIES": "0"}
    with _silent_api(health=True) as url:
        done = subprocess.run(
            [*CLI, *RUN, "--out", str(tmp_path / "data")],
            capture_output=True,
            text=True,
            timeout=scaled(110),
            cwd=tmp_path,
            env=_env(tmp_path, PREFECT_API_URL=url, **quick),
        )
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert errors == [
        f"envmill: error: the Prefect API at {url} stopped answering (no reply within 2 s); "
        "finished batches are kept, rerun the same command to resume"
    ], done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert _leftover_folders(tmp_path) == []


def test_request_timeouts_are_set_unless_the_user_chose_them(tmp_path):
    from envmill.flows.runtime.prefect_api import API_TIMEOUTS, prefect_api

    saved = dict(os.environ)  # prefect_api sets its defaults for the whole process
    try:
        with _silent_api(health=True) as url:
            os.environ.pop("PREFECT_API_REQUEST_TIMEOUT", None)
            os.environ.update({"PREFECT_API_URL": url, "PREFECT_CLIENT_MAX_RETRIES": "7"})
            with prefect_api(tmp_path / "_prefect"):
                timeout = os.environ["PREFECT_API_REQUEST_TIMEOUT"]
                retries = os.environ["PREFECT_CLIENT_MAX_RETRIES"]
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert timeout == API_TIMEOUTS["PREFECT_API_REQUEST_TIMEOUT"] and retries == "7"
    assert float(timeout) < 60  # Prefect's own default, which let a stalled API hang a run


def test_a_sandbox_folder_is_named_after_the_process_that_made_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    from envmill.schemas.settings import SandboxLimits
    from envmill.tasks.sandbox import Sandbox

    with Sandbox(SandboxLimits(isolation="basic")) as box:
        box.spawn_host().close()
        owner = folder_owner(Path(box._base_dir).name)
        assert owner is not None and (owner.kind, owner.pid) == ("sandbox", os.getpid())
    assert list(tmp_path.iterdir()) == []
