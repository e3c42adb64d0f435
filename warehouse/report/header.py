"""The page's header: the runs a report covers, their settings in one line, and versions."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from envmill.schemas.backends import OWN_SCENARIOS, uses_llm
from envmill.warehouse.report.model import RunSummary


def run_summary(row: dict[str, Any]) -> RunSummary:
    return RunSummary(
        run_id=row["run_id"],
        status=row["status"],
        backend=row["backend"],
        seed=row["seed"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        settings=settings_summary(_json(row["settings_json"])),
        isolation=row["isolation"],
    )


def settings_summary(settings: dict[str, Any]) -> str:
    """The settings a reader of the corpus needs, in one line (not limits or paths)."""
    parts = [
        f"envs {settings.get('envs', '?')}",
        f"scenarios/env {settings.get('scenarios_per_env', '?')}",
        f"domains {', '.join(settings.get('domains') or []) or 'all'}",
    ]
    if settings.get("topics"):
        parts.append(f"topics {len(settings['topics'])}")
    scenarios_from = settings.get("scenarios_from", OWN_SCENARIOS)
    if scenarios_from != OWN_SCENARIOS:
        parts.append(f"scenarios from {scenarios_from}")
    llm = settings.get("llm") or {}
    if uses_llm(settings.get("backend", ""), scenarios_from):
        model = (llm.get("default") or {}).get("model", "?")
        overrides = {k: v.get("model") for k, v in (llm.get("stages") or {}).items() if v}
        extra = ", ".join(f"{k}: {m}" for k, m in sorted(overrides.items()) if m)
        parts.append(f"model {model}" + (f" ({extra})" if extra else ""))
    parts.append(f"batch {settings.get('batch_size') or 'default'}")
    parts.append(f"workers {settings.get('workers', '?')}")
    return " · ".join(parts)


def versions(runs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Package → the version(s) the runs covered were made with."""
    seen: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        for package, version in _json(run["versions_json"]).items():
            seen[package].add(str(version))
    return [(p, ", ".join(sorted(v))) for p, v in sorted(seen.items())]


def _json(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
