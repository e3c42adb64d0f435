"""``envmill sql`` as the console command runs it: a refusal is one line and writes nothing (every
kind of refusal is tested in-process: tests/unit/warehouse/test_sql_surface.py)."""

from __future__ import annotations

from tests.cli import envmill_in as envmill
from tests.unit.warehouse.test_sql_surface import REFUSED, root_fixture  # noqa: F401


def test_the_cli_refuses_in_one_line_and_writes_nothing(root, tmp_path):
    done = envmill(tmp_path, "sql", "--out", str(root), REFUSED["COPY"].format(root=root))
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "envmill: error: SQL refused: COPY statements are refused: the warehouse is read-only "
        "here (SELECT, DESCRIBE, SUMMARIZE and SHOW run)"
    )
    assert not (root / "scenarios" / "part-evil.parquet").exists()
    read = envmill(tmp_path, "sql", "--out", str(root), "SELECT task FROM scenarios")
    assert read.returncode == 0 and "task 0" in read.stdout
