"""Retrying failed topics: which topics of a run ended failed, and a flow that builds them again.

A topic of the llm backend ends accepted (an environment) or failed (a failure row at one of the
generating stages). A retry reruns exactly the failed ones that have no environment yet; the
response cache makes every LLM call that finished the first time free.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from envmill.flows.synthesize import synthesize
from envmill.schemas.settings import EnvmillSettings
from envmill.warehouse.views import query


def failed_topics(root: Path, run_id: str | None = None, stage: str | None = None) -> list[str]:
    """Topics whose item failed in ``run_id`` (default: the latest llm run), optionally at
    ``stage`` only, and that no run has since turned into an environment."""
    run = run_id or _latest_llm_run(root)
    if run is None:
        return []
    sql = """
        SELECT DISTINCT f.item
        FROM failures f
        WHERE f.run_id = $run  -- scenario skips and certification leave an environment behind
          AND f.stage NOT IN ('scenarios', 'certify', 'batch')
          AND ($stage IS NULL OR f.stage = $stage)
        ORDER BY f.item
    """
    items = [row["item"] for row in query(root, sql, {"run": run, "stage": stage}).to_pylist()]
    topics = [item.rsplit("#", 1)[0] for item in items if "#" in item]
    built = {row["topic"] for row in query(root, "SELECT topic FROM environments").to_pylist()}
    return [topic for topic in dict.fromkeys(topics) if topic not in built]


def retry_settings(settings: EnvmillSettings, root: Path, topics: list[str]) -> EnvmillSettings:
    """Settings that build ``topics`` as a new attempt (numbered by the llm runs so far), so
    answers that were checked and failed are asked anew while the rest come from the cache."""
    runs = query(root, "SELECT count(*) AS n FROM runs WHERE backend = 'llm'").to_pylist()
    skeleton = settings.skeleton.model_copy(update={"attempt": runs[0]["n"]})
    return settings.model_copy(update={"backend": "llm", "topics": topics, "skeleton": skeleton})


def _latest_llm_run(root: Path) -> str | None:
    rows = query(
        root, "SELECT run_id FROM runs WHERE backend = 'llm' ORDER BY started_at DESC LIMIT 1"
    ).to_pylist()
    return rows[0]["run_id"] if rows else None


@flow(name="retry-failed", log_prints=False)
def retry_failed(
    settings: EnvmillSettings, data_dir: str, run_id: str | None = None, stage: str | None = None
) -> dict[str, Any]:
    """Build again the topics of ``run_id`` (default: the latest llm run) that ended failed."""
    topics = failed_topics(Path(data_dir), run_id, stage)
    if not topics:
        return {"retried_topics": 0}
    retry = retry_settings(settings, Path(data_dir), topics)
    return {"retried_topics": len(topics)} | synthesize(settings=retry, data_dir=data_dir)
