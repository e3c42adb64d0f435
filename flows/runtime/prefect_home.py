"""What an embedded Prefect server's database starts from, so a run does not pay its migrations.

A fresh Prefect database is created by running every migration and registering every block type
(most of the server's first start: 12-17 s of a ~50 s default run). Both depend only on the
Prefect version, so envmill keeps one migrated, empty database per Prefect version as a template
in the user's cache folder (``ENVMILL_CACHE_DIR``, else ``$XDG_CACHE_HOME/envmill``, else
``~/.cache/envmill``) and copies it into each new data folder's ``_prefect``. The run's records
still live in its own data folder; nothing is written to ``~/.prefect``.

A database known to be migrated by this Prefect version (copied from a template, or marked after a
server of this version started on it) starts with migrations and block registration turned off.
Anything else (no template yet, a template of another version, an unreadable one, a marker of
another version) starts the usual way, and a server that created its database from nothing leaves
a copy as the template for the next folder. The template is written under an advisory lock, to a
temporary name then renamed: a reader never sees half a file, and while another run holds the
lock this one simply does not write one.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from importlib.metadata import version
from pathlib import Path

DATABASE = "prefect.db"
MARKER = "migrated.json"  # beside a database: the Prefect version and migration head it is at
SKIP_MIGRATIONS = {
    "PREFECT_SERVER_DATABASE_MIGRATE_ON_START": "false",
    "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
}


def cache_dir() -> Path:
    """The user's cache folder for envmill (``ENVMILL_CACHE_DIR`` overrides it)."""
    if os.environ.get("ENVMILL_CACHE_DIR"):
        return Path(os.environ["ENVMILL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "envmill"


def template_dir() -> Path:
    return cache_dir() / f"prefect-{version('prefect')}"


def prepare_home(home: Path) -> dict[str, str]:
    """Seed ``home`` from the template when it has no database yet; returns the settings the
    server starts with (migrations off when the database is known to be current)."""
    database = home / DATABASE
    if not database.exists():
        _copy_template(home)
    return dict(SKIP_MIGRATIONS) if _is_current(home) else {}


def remember_migrated(home: Path, created: bool) -> None:
    """After a server of this Prefect version answered on ``home``'s database: mark it current,
    and when the server ``created`` it (an empty, migrated database), keep it as the template."""
    head = _migration_head(home / DATABASE)
    if head is None:
        return
    _write_marker(home, head)
    if created and not _is_current(template_dir()):
        save_template(home / DATABASE, head)


def save_template(database: Path, head: str) -> bool:
    """Copy ``database`` (consistently, even while a server writes it) as this version's
    template; False when another process holds the template lock or the cache is unwritable."""
    folder = template_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # another run is writing it: this one need not
            partial = folder / f".{DATABASE}.{os.getpid()}"
            _backup(database, partial)
            partial.replace(folder / DATABASE)
            _write_marker(folder, head)
            return True
    except (OSError, sqlite3.Error):
        return False


def _copy_template(home: Path) -> bool:
    """Copy a valid template into ``home`` with its marker; False when there is none."""
    folder = template_dir()
    if not _is_current(folder):
        return False  # none, half made, another version's, or damaged: migrate as usual
    head = _read_marker(folder)
    if head is None:  # _is_current read it: not expected
        return False
    partial = home / f".{DATABASE}.{os.getpid()}"
    try:
        _backup(folder / DATABASE, partial)
        partial.replace(home / DATABASE)
    except (OSError, sqlite3.Error):
        partial.unlink(missing_ok=True)
        return False
    _write_marker(home, head)
    return True


def _is_current(folder: Path) -> bool:
    """Whether ``folder``'s database is at the migration head its marker records for this
    Prefect version (a template or a data folder's ``_prefect``)."""
    head = _read_marker(folder)
    return head is not None and _migration_head(folder / DATABASE) == head


def _backup(source: Path, target: Path) -> None:
    """SQLite's online backup: a consistent copy even of a database in WAL mode being written."""
    target.unlink(missing_ok=True)
    src = _open_read_only(source)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _open_read_only(database: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=5)


def _migration_head(database: Path) -> str | None:
    """The Alembic revision ``database`` is at, None when it cannot be read."""
    if not database.is_file():
        return None
    try:
        connection = _open_read_only(database)
        try:
            rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
        finally:
            connection.close()
    except sqlite3.Error:
        return None
    return rows[0][0] if len(rows) == 1 else None


def _read_marker(folder: Path) -> str | None:
    """The migration head a marker records, if the marker is this Prefect version's."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("prefect") != version("prefect"):
        return None
    head = marker.get("head")
    return head if isinstance(head, str) else None


def _write_marker(folder: Path, head: str) -> None:
    partial = folder / f".{MARKER}.{os.getpid()}"
    partial.write_text(json.dumps({"prefect": version("prefect"), "head": head}))
    partial.replace(folder / MARKER)
