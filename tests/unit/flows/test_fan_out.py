"""Gathering a run's batches (flows/fan_out.py): a batch its worker made but did not publish is
a failure row, not work done, unless the run was stopped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envmill.flows import fan_out
from envmill.warehouse.views import query


@dataclass(eq=False)  # hashed by identity, as a future is
class Finished:
    """A future that has finished with ``value``, as a Prefect future does."""

    value: dict[str, Any]

    def add_done_callback(self, callback) -> None:
        callback(self)

    def result(self) -> dict[str, Any]:
        return self.value


@dataclass(frozen=True)
class Batch:
    key: str
    items: tuple[str, ...]


def _gather(root, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    batches = [Batch(f"{n:016x}", (f"item-{n}",)) for n in range(len(results))]
    by_key = dict(zip([b.key for b in batches], results.values(), strict=True))
    return fan_out.gather(
        iter(batches),
        lambda batch: Finished(by_key[batch.key]),
        window=4,
        items_of=lambda batch: list(batch.items),
        data_dir=str(root),
        run_id="run-test",
        stall_seconds=60,
    )


def test_a_batch_not_published_while_the_run_stands_is_a_failure(tmp_path):
    """Round 31's breaker: with the run's permit deleted, every later batch came back
    unpublished and the run still said it made 12 of 12 environments."""
    made = {"counts": {"environments": 1}, "seconds": {}, "published": True}
    lost = {"counts": {}, "seconds": {}, "published": False}
    gathered = _gather(tmp_path, {"a": made, "b": lost, "c": lost})
    assert gathered["counts"] == {"environments": 1, "failed_batches": 2}
    rows = query(tmp_path, "SELECT message FROM failures").to_pylist()
    assert len(rows) == 2 and all("not published" in r["message"] for r in rows), rows


def test_a_stopped_run_s_unpublished_batches_are_not_failures(tmp_path, monkeypatch):
    """A stopped run revokes its permit: what its workers then hold back is not a failure."""
    stopped = iter([False, True])  # the wait sees the run going, then the batch sees it stopped
    monkeypatch.setattr(fan_out, "was_interrupted", lambda: next(stopped))
    lost = {"counts": {}, "seconds": {}, "published": False}
    assert _gather(tmp_path, {"a": lost})["counts"] == {}
    assert not (tmp_path / "failures").exists()
