"""A small real corpus in a data folder, made in this process: for the rollout, filter and export
tests (the procedural pipeline through the real sandbox and certification, then one commit)."""

from __future__ import annotations

from pathlib import Path

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.warehouse.rows import write_batch
from envmill.warehouse.store import Warehouse
from tests.conftest import TEST_LIMITS


def make_corpus(root: Path, sandbox, *, domains=("clinic", "banking"), per_env: int = 4) -> Path:
    """One environment per domain with ``per_env`` scenarios (both modes), committed to ``root``."""
    settings = EnvmillSettings(
        envs=len(domains),
        scenarios_per_env=per_env,
        domains=list(domains),
        batch_size=100,
        seed=22,  # both modes, each with a scenario that changes the state, and a refusal in each
        sandbox=TEST_LIMITS,
    )
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    warehouse = Warehouse(root)
    assert write_batch(warehouse, output, "run-corpus")
    return warehouse.root
