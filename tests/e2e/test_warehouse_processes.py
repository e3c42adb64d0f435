"""The warehouse against other processes: a folder lock or a write permit held by a live or a dead
process, a second run on a busy folder, and ``envmill verify`` / ``sql`` as the console commands
(the in-process checks of the same warehouse: tests/unit/warehouse/test_warehouse_integrity.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envmill.warehouse.commits import committed_keys
from envmill.warehouse.lock import FolderBusy, folder_lock, is_free
from envmill.warehouse.verify import verify
from envmill.warehouse.views import query
from tests.timing import scaled
from tests.unit.warehouse.test_warehouse_integrity import (  # noqa: F401
    RUN,
    _commit_batch,
    _damage,
    run_row,
    wh_fixture,
)

HOLD = """
import sys, time
from pathlib import Path
from envmill.warehouse.lock import folder_lock
with folder_lock(Path(sys.argv[1]), "envmill run --test"):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def held_by_another_process(wh):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(wh.root)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    yield holder
    holder.kill()
    holder.wait()


def test_the_lock_refuses_a_second_holder_by_name_and_frees_when_its_holder_dies(
    wh, held_by_another_process
):
    assert not is_free(wh.root)
    with pytest.raises(FolderBusy, match=rf"pid {held_by_another_process.pid} \(envmill run"):
        with folder_lock(wh.root):
            pass
    held_by_another_process.kill()  # the kernel lets go of a dead holder's lock
    held_by_another_process.wait()
    assert is_free(wh.root)
    with folder_lock(wh.root), folder_lock(wh.root):  # re-entrant within a process
        assert is_free(wh.root)


def test_a_second_run_on_a_busy_folder_is_refused_at_once(wh, held_by_another_process):
    command = [sys.executable, "-c", "from envmill.flows.cli import main; main()", "run",
               "--out", str(wh.root), "--envs", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=scaled(120))
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert "in use by pid" in line and "another --out" in line
    assert committed_keys(wh.root) == set()


def test_a_run_left_running_by_a_dead_process_is_settled_as_interrupted(
    wh, held_by_another_process
):
    from envmill.flows.run_record import settle_abandoned_runs

    wh.write("runs", [run_row("running")], key=RUN)
    assert settle_abandoned_runs(wh.root) == []  # its process may still live: left alone
    held_by_another_process.kill()
    held_by_another_process.wait()
    assert settle_abandoned_runs(wh.root) == [RUN]
    row = query(wh.root, "SELECT status, finished_at FROM runs").to_pylist()[0]
    assert row["status"] == "interrupted" and row["finished_at"] is not None


def _envmill(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from envmill.flows.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=scaled(120))


def test_the_verify_command_reports_then_repairs(wh):
    _commit_batch(wh, "good", ["item-good"])
    _commit_batch(wh, "bad", ["item-bad"])
    _damage(wh, "truncated")
    sql = _envmill(
        "sql", "--out", str(wh.root), "SELECT count(*) AS n FROM environments", "--format", "csv"
    )
    assert sql.returncode == 0 and sql.stdout.split() == [
        "n",
        "2",
    ]  # its table unharmed by the bad part
    (warning,) = sql.stderr.strip().splitlines()
    assert warning.startswith("envmill: warning: scenarios/part-bad.parquet left out")
    found = _envmill("verify", "--out", str(wh.root))
    assert found.returncode == 1
    assert found.stdout.strip().splitlines() == [
        f"_commits/bad.json: {verify(wh.root).findings[0].problem} "
        "(would retract the commit; the next run redoes its items)"
    ]
    repaired = _envmill("verify", "--repair", "--out", str(wh.root))
    assert repaired.returncode == 0 and "redoes 1 item(s)" in repaired.stderr
    assert _envmill("verify", "--out", str(wh.root)).returncode == 0


GRANT = """
import sys
from pathlib import Path
from envmill.warehouse.lock import grant
grant(Path(sys.argv[1]), "run-gone")
print("granted", flush=True)
sys.stdin.read()
"""


def test_a_permit_ends_with_the_process_that_holds_it(wh):
    """kill -9 revokes nothing: workers that outlive their run must still stop publishing."""
    from envmill.warehouse.lock import grant, may_write, revoke

    holder = subprocess.Popen(
        [sys.executable, "-c", GRANT, str(wh.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "granted"
    assert may_write(wh.root, "run-gone") and not may_write(wh.root, "run-other")
    holder.kill()
    holder.wait()
    assert not may_write(wh.root, "run-gone")
    grant(wh.root, "run-here")
    assert may_write(wh.root, "run-here") and not (wh.root / "_active" / "run-gone").exists()
    revoke(wh.root, "run-here")
    assert not may_write(wh.root, "run-here")


def test_a_permit_holds_while_the_clock_moves_the_boot_time(wh, monkeypatch):
    """The kernel's boot time, and so a process's start in wall-clock seconds, moves by a second
    when the clock is adjusted: a live run read as dead left its batches unpublished without a
    word (CI, stop 43). The permit names the start in ticks since boot, which nothing moves."""
    import psutil

    from envmill.warehouse.lock import grant, may_write

    grant(wh.root, "run-here")
    started, boot = psutil.Process().create_time(), psutil.boot_time()
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: boot + 1.0)
    assert psutil.Process().create_time() == started + 1.0  # as the kernel moved it
    assert may_write(wh.root, "run-here")
