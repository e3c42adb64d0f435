"""``envmill sql`` as the console command runs it: a refusal is one line and writes nothing (every
kind of refusal is tested in-process: tests/unit/warehouse/test_sql_surface.py); a command that
only reads imports no pandera."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli import clean_env
from tests.cli import envmill_in as envmill
from tests.timing import scaled
from tests.unit.warehouse.test_sql_surface import REFUSED, root_fixture  # noqa: F401

# Runs each command of argv[1] (a JSON list) in turn in this one process, and after each prints
# on stderr, as a JSON line, which of pandera and pandas it has imported so far.
COMMANDS_IN_ONE_PROCESS = """
import json, sys
from envmill.flows.cli import main
for argv in json.loads(sys.argv[1]):
    sys.argv = ["envmill", *argv]
    main()
    print(json.dumps(sorted({"pandera", "pandas"} & sys.modules.keys())), file=sys.stderr)
"""


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


def test_reading_imports_no_pandera(root, tmp_path):
    """pandera, with pandas under it, takes about a second of CPU to import: only a process that
    validates a batch imports it (warehouse.store.validate_table). ``sql`` loads no pandas either;
    pyarrow itself imports pandas to turn a zoned timestamp or a Python list into Arrow, which
    ``runs``, ``stats`` and ``show`` do."""
    out = ["--out", str(root)]
    commands = [
        ["sql", *out, "SELECT task, n_steps FROM scenarios"],
        ["runs", *out],
        ["stats", *out],
        ["show", "scenario", "", *out],
    ]
    done = subprocess.run(
        [sys.executable, "-c", COMMANDS_IN_ONE_PROCESS, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        cwd=tmp_path,
        env=clean_env(tmp_path, own_server=True),  # nothing here talks to Prefect
    )
    assert done.returncode == 0, done.stderr
    assert "task 0" in done.stdout and '"task": "task 0"' in done.stdout
    loaded = [json.loads(line) for line in done.stderr.splitlines()]
    assert loaded[0] == []
    assert len(loaded) == len(commands) and not any("pandera" in mods for mods in loaded)
