"""The embedded server's database template: reuse, a busy template lock, stale templates."""

from __future__ import annotations

import fcntl
import json
import sqlite3
import urllib.request
from importlib.metadata import version

import pytest

from envmill.flows.runtime import prefect_home
from envmill.flows.runtime.prefect_home import (
    DATABASE,
    MARKER,
    SKIP_MIGRATIONS,
    prepare_home,
    remember_migrated,
    save_template,
    template_dir,
)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVMILL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _migrated_database(home, head="rev-1", rows=("block-a",)):
    """What a server leaves after its first start: an Alembic head and registered blocks."""
    home.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(home / DATABASE) as db:
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        db.execute("INSERT INTO alembic_version VALUES (?)", (head,))
        db.execute("CREATE TABLE block_type (name TEXT)")
        db.executemany("INSERT INTO block_type VALUES (?)", [(r,) for r in rows])
    db.close()


def _blocks(home):
    db = sqlite3.connect(home / DATABASE)
    try:
        return [row[0] for row in db.execute("SELECT name FROM block_type")]
    finally:
        db.close()


def test_a_created_database_becomes_the_template_a_new_folder_starts_from(tmp_path):
    first, second = tmp_path / "a" / "_prefect", tmp_path / "b" / "_prefect"
    first.mkdir(parents=True)
    assert prepare_home(first) == {}  # nothing to start from: migrate as usual
    _migrated_database(first)
    remember_migrated(first, created=True)
    second.mkdir(parents=True)
    assert prepare_home(second) == SKIP_MIGRATIONS
    assert _blocks(second) == ["block-a"]
    marker = json.loads((second / MARKER).read_text())
    assert marker == {"prefect": version("prefect"), "head": "rev-1"}


def test_a_folder_this_version_migrated_starts_without_migrations(tmp_path):
    home = tmp_path / "_prefect"
    _migrated_database(home)
    assert prepare_home(home) == {}  # never marked: its version is unknown
    remember_migrated(home, created=False)
    assert prepare_home(home) == SKIP_MIGRATIONS
    assert not (template_dir() / DATABASE).exists()  # a used database is never the template


def test_a_marker_of_another_prefect_version_means_migrating(tmp_path):
    home = tmp_path / "_prefect"
    _migrated_database(home)
    (home / MARKER).write_text(json.dumps({"prefect": "0.0.1", "head": "rev-1"}))
    assert prepare_home(home) == {}


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda folder: (folder / DATABASE).write_bytes(b"not sqlite"), id="damaged"),
        pytest.param(
            lambda folder: (folder / MARKER).write_text(
                json.dumps({"prefect": "0.0.1", "head": "rev-1"})
            ),
            id="other-version",
        ),
        pytest.param(
            lambda folder: (folder / MARKER).write_text(
                json.dumps({"prefect": version("prefect"), "head": "rev-0"})
            ),
            id="head-mismatch",
        ),
        pytest.param(lambda folder: (folder / MARKER).unlink(), id="half-made"),
    ],
)
def test_a_stale_template_is_ignored_and_replaced(tmp_path, spoil):
    made = tmp_path / "made" / "_prefect"
    _migrated_database(made)
    remember_migrated(made, created=True)
    spoil(template_dir())
    fresh = tmp_path / "fresh" / "_prefect"
    fresh.mkdir(parents=True)
    assert prepare_home(fresh) == {}
    assert not (fresh / DATABASE).exists()  # the server creates and migrates it itself
    _migrated_database(fresh, head="rev-1", rows=("block-b",))
    remember_migrated(fresh, created=True)  # and the next folder starts from this one
    nxt = tmp_path / "next" / "_prefect"
    nxt.mkdir(parents=True)
    assert prepare_home(nxt) == SKIP_MIGRATIONS
    assert _blocks(nxt) == ["block-b"]


def test_a_busy_template_lock_skips_writing_it(tmp_path):
    home = tmp_path / "_prefect"
    _migrated_database(home)
    template_dir().mkdir(parents=True)
    with open(template_dir() / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another run is writing it
        assert save_template(home / DATABASE, "rev-1") is False
    assert not (template_dir() / DATABASE).exists()
    assert save_template(home / DATABASE, "rev-1") is True


def test_an_unwritable_cache_does_not_stop_a_run(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("ENVMILL_CACHE_DIR", str(tmp_path / "file" / "cache"))
    home = tmp_path / "_prefect"
    _migrated_database(home)
    remember_migrated(home, created=True)  # no template, no error
    assert prepare_home(home) == SKIP_MIGRATIONS


def test_a_server_started_from_the_template_serves_the_api(tmp_path, monkeypatch):
    """Two new folders: the first server migrates and leaves the template, the second starts
    from it with migrations off and still answers API calls that need its tables."""
    from envmill.flows.runtime.prefect_api import start_server

    for key in ("PREFECT_API_URL", "PREFECT_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    starts = []
    for name in ("first", "second"):
        assert (template_dir() / DATABASE).exists() == (name == "second")
        home = tmp_path / name / "_prefect"
        home.mkdir(parents=True)
        server = start_server(home)
        try:
            server.wait_healthy()
            request = urllib.request.Request(
                f"{server.url}/block_types/filter", data=b"{}", method="POST"
            )
            request.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(request, timeout=30) as response:
                starts.append(len(json.loads(response.read())))
        finally:
            server.stop()
    assert starts[0] > 0 and starts[1] == starts[0]  # the block types came with the copy
    assert prefect_home._is_current(tmp_path / "second" / "_prefect")
