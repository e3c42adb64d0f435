"""``envmill compact`` as the console command runs it, on the warehouse of
tests/unit/warehouse/test_compact.py (the merge itself is tested there, in-process)."""

from __future__ import annotations

import pytest

from envmill.warehouse.commits import read_commit
from envmill.warehouse.lock import folder_lock
from tests.cli import envmill

# the warehouse the in-process tests use (fixtures ``template`` and ``wh``)
from tests.unit.warehouse.test_compact import (  # noqa: F401
    batch_key,
    part_names,
    template_fixture,
    wh_fixture,
)

pytestmark = pytest.mark.timeout(60)


def test_cli_compact_prints_parts_before_and_after(wh):
    done = envmill("compact", "--out", str(wh.root))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "trajectories: 7 → 1 parts, 12 rows (1 duplicate rows dropped)" in lines
    assert "scenarios: 7 → 1 parts, 12 rows (1 duplicate rows dropped)" in lines
    assert not any(line.startswith("topics") for line in lines)  # a table without parts
    assert "parts fewer in" in done.stderr
    again = envmill("compact", "--out", str(wh.root))
    assert "trajectories: 1 → 1 parts, 12 rows" in again.stdout.splitlines()
    assert again.returncode == 0 and "0 parts fewer" in again.stderr


def test_cli_compact_refuses_a_busy_folder(wh):
    with folder_lock(wh.root, "envmill run"):
        done = envmill("compact", "--out", str(wh.root))
    assert done.returncode == 2
    assert (
        done.stderr.strip().splitlines() == [done.stderr.strip().splitlines()[0]]
        and "is in use by pid" in done.stderr
    )
    assert "envmill run" in done.stderr and len(part_names(wh.root, "scenarios")) == 7


def test_cli_compact_leaves_a_damaged_table_and_says_so(wh):
    key = batch_key("2")
    (wh.root / "scenarios" / f"part-{key}.parquet").write_bytes(b"damaged")
    done = envmill("compact", "--out", str(wh.root))
    assert done.returncode == 1
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("scenarios")]
    assert line == (
        f"scenarios: 7 → 7 parts, 13 rows; left as it was: scenarios/part-{key}.parquet has 7 "
        f"bytes, its commit recorded {read_commit(wh.root, key).parts['scenarios'].bytes}; "
        "run `envmill verify --repair` first"
    )
    assert "trajectories: 7 → 1 parts" in done.stdout
