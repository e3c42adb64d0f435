"""Retrying failed topics: which topics ended failed, and the settings that build them again.

A topic of the llm backend (the registry's ``LLM``) ends accepted (an environment) or failed (a
failure row at one of the generating stages). A retry reruns exactly the failed ones that have no
environment yet; the response cache makes every LLM call that finished the first time free.
``envmill retry-failed`` and the ``retry-failed`` flow of ``flows/deployed.py`` both build on
these.
"""

from __future__ import annotations

import json
from pathlib import Path

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.registry import LLM
from envmill.warehouse.store import MARKER
from envmill.warehouse.views import query

NOT_GENERATION = ("scenarios", "certify", "batch")  # these leave an environment, or no topic


class RetryError(ValueError):
    """A folder, ``--run`` or ``--stage`` with nothing to retry from; one line."""


def check_retry_folder(root: Path) -> None:
    """RetryError unless ``root`` is an envmill data folder (a retry has failures to read)."""
    if not (root / MARKER).is_file():
        raise RetryError(
            f"{root} is not an envmill data folder; run `envmill run --backend {LLM}` first"
        )


def failed_topics(root: Path, run_id: str | None = None, stage: str | None = None) -> list[str]:
    """Topics that ended failed, in ``run_id`` or in any llm run (so a later run that only
    resumed hides nothing), optionally at ``stage`` only, and that no run has since turned into
    an environment. RetryError for a run or a stage the folder has never seen."""
    _check_names(root, run_id, stage)
    sql = f"""
        SELECT DISTINCT item FROM failures
        WHERE run_id IN (SELECT run_id FROM runs WHERE backend = $backend)
          AND ($run IS NULL OR run_id = $run)
          AND stage NOT IN {NOT_GENERATION}
          AND ($stage IS NULL OR stage = $stage)
        ORDER BY item
    """
    names = {"run": run_id, "stage": stage, "backend": LLM}
    items = [row["item"] for row in query(root, sql, names).to_pylist()]
    topics = [item.rsplit("#", 1)[0] for item in items if "#" in item]
    built = {row["topic"] for row in query(root, "SELECT topic FROM environments").to_pylist()}
    return [topic for topic in dict.fromkeys(topics) if topic not in built]


def _check_names(root: Path, run_id: str | None, stage: str | None) -> None:
    if run_id is not None:
        runs = query(root, "SELECT run_id FROM runs WHERE run_id = $run", {"run": run_id})
        if not runs.num_rows:
            raise RetryError(
                f"no run '{run_id}' in {root}; list them with "
                'envmill sql "SELECT run_id, status, started_at FROM runs"'
            )
    if stage is not None:
        sql = f"SELECT DISTINCT stage FROM failures WHERE stage NOT IN {NOT_GENERATION} ORDER BY 1"
        stages = [row["stage"] for row in query(root, sql).to_pylist()]
        if stage not in stages:
            known = ", ".join(stages) or "none"
            raise RetryError(f"no topic ever failed at stage '{stage}' (stages that did: {known})")


def retry_settings(
    settings: EnvmillSettings, root: Path, topics: list[str], run_id: str | None = None
) -> EnvmillSettings:
    """Settings that build ``topics`` as a new attempt (numbered by the llm runs so far), so
    answers that were checked and failed are asked anew while the rest come from the cache; with
    the sizes and seed of the run they failed in (``run_id``, else the newest llm run with a
    failure), so a retried topic gets as many scenarios as its siblings did."""
    sql = "SELECT count(*) AS n FROM runs WHERE backend = $backend"
    runs = query(root, sql, {"backend": LLM}).to_pylist()
    skeleton = settings.skeleton.model_copy(update={"attempt": runs[0]["n"]})
    update = {"backend": LLM, "topics": topics, "skeleton": skeleton}
    return settings.model_copy(update={**update, **_failed_run_sizes(root, run_id)})


def _failed_run_sizes(root: Path, run_id: str | None) -> dict[str, object]:
    sql = f"""
        SELECT settings_json FROM runs
        WHERE backend = $backend AND ($run IS NULL OR run_id = $run)
          AND run_id IN (SELECT run_id FROM failures WHERE stage NOT IN {NOT_GENERATION})
        ORDER BY started_at DESC LIMIT 1
    """
    rows = query(root, sql, {"backend": LLM, "run": run_id}).to_pylist()
    if not rows:
        return {}
    recorded = json.loads(rows[0]["settings_json"])
    return {name: recorded[name] for name in ("scenarios_per_env", "seed") if name in recorded}
