"""A file read from a data folder is a regular file of bounded size: a named pipe at a cache
entry hung a run forever, a link to a 1 GiB sparse file was read whole before it counted as a
miss, a link to /dev/zero would grow until the process died (issue 24)."""

from __future__ import annotations

import os
import threading

import pytest

from envmill.tasks.core.regular_file import UnreadableFile, read_regular
from envmill.tasks.llm.cache import ResponseCache, request_key


def test_a_regular_file_is_read_whole(tmp_path):
    path = tmp_path / "entry.json"
    path.write_bytes(b"{}")
    assert read_regular(path, 10) == b"{}"


@pytest.mark.parametrize("kind", ["fifo", "link", "dev_zero", "big", "folder"])
def test_anything_else_is_refused_at_once_and_named(tmp_path, kind):
    path = tmp_path / "entry.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        (tmp_path / "real").write_bytes(b"{}")
        path.symlink_to(tmp_path / "real")
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "big":
        with open(path, "wb") as handle:
            handle.truncate(1 << 30)  # sparse: no disk used
    else:
        path.mkdir()
    done = threading.Event()
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_regular(path, 1 << 20)
        except OSError as exc:
            outcome.append(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), f"reading a {kind} hung"
    assert outcome and str(path) in str(outcome[0]), outcome
    assert kind == "folder" or isinstance(outcome[0], UnreadableFile)


def test_a_hostile_cache_entry_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    key = request_key({"model": "m", "messages": []})
    cache.path(key).parent.mkdir(parents=True)
    os.mkfifo(cache.path(key))
    assert cache.get(key) is None
    cache.path(key).unlink()
    cache.path(key).symlink_to("/dev/zero")
    assert cache.get(key) is None
    cache.path(key).unlink()
    cache.put(key, {"answer": 1})
    assert cache.get(key) == {"answer": 1}
