"""``envmill llm check`` as a user runs it: a dry run on the local endpoint, and the errors."""

from __future__ import annotations

import json

from envmill.tasks.backends.llm.stages import STAGES
from envmill.tasks.offline_llm import serve_endpoint
from tests.cli import envmill

NO_ENDPOINT = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}


def test_local_dry_run_reports_every_stage_with_estimated_cost(tmp_path):
    prices = json.dumps({"gpt-4o-mini": {"input": 1000.0, "output": 1000.0}})
    done = envmill(
        "llm",
        "check",
        "--local",
        "--format",
        "json",
        cwd=tmp_path,
        env_extra=NO_ENDPOINT | {"ENVMILL_LLM__PRICES": prices},
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["stage"] for r in rows] == list(STAGES)
    assert all(r["outcome"] == "ok" for r in rows), rows
    row = rows[0]
    assert (row["stage"], row["model"], row["outcome"], row["attempts"]) == (
        "topics",
        "gpt-4o-mini",
        "ok",
        1,
    )
    assert row["endpoint"].startswith("http://127.0.0.1:")
    tokens = row["prompt_tokens"] + row["completion_tokens"]
    assert tokens > 0 and row["cost_usd"] == tokens * 1000.0 / 1_000_000  # the configured price


def test_no_endpoint_configured_is_one_line_and_spends_nothing(tmp_path):
    done = envmill("llm", "check", cwd=tmp_path, env_extra=NO_ENDPOINT | {"OPENAI_API_KEY": "sk-x"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "envmill: error: no LLM endpoint configured: set llm.base_url "
        "(ENVMILL_LLM__BASE_URL) or OPENAI_BASE_URL"
    ]


def test_unreachable_endpoint_fails_fast_with_the_reason(tmp_path):
    env = NO_ENDPOINT | {"ENVMILL_LLM__BASE_URL": "http://127.0.0.1:9/v1"}
    done = envmill("llm", "check", cwd=tmp_path, env_extra=env)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "cannot reach the LLM endpoint http://127.0.0.1:9/v1" in line


def test_configured_endpoint_gets_one_call_per_stage_and_the_key_stays_secret(tmp_path):
    with serve_endpoint() as endpoint:
        env = NO_ENDPOINT | {"OPENAI_BASE_URL": endpoint.url, "OPENAI_API_KEY": "sk-secret-123"}
        done = envmill("llm", "check", "--stage", "topics", cwd=tmp_path, env_extra=env)
        assert done.returncode == 0, done.stderr
        assert endpoint.stats()["stages"] == {"topics": 1}
    assert "sk-secret-123" not in done.stdout + done.stderr


def test_unknown_stage_is_refused(tmp_path):
    done = envmill("llm", "check", "--local", "--stage", "nope", cwd=tmp_path)
    assert done.returncode == 2 and "unknown stage 'nope'" in done.stderr


def test_local_dry_run_ignores_an_exported_proxy(tmp_path):
    dead_proxy = "http://127.0.0.1:9"  # nothing listens there
    proxies = {name: dead_proxy for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY")}
    done = envmill("llm", "check", "--local", cwd=tmp_path, env_extra=NO_ENDPOINT | proxies)
    assert done.returncode == 0, done.stderr
