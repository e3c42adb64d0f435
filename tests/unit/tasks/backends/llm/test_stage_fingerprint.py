"""A stage's model settings that change its replies are part of the LLM backend's version, so a
run with other settings redoes its batches instead of resuming them."""

from __future__ import annotations

from envmill.schemas.llm import LlmSettings, StageModel
from envmill.tasks.backends.llm.backend import stages_fingerprint
from envmill.tasks.llm import LlmClient

URL = "http://127.0.0.1:9/v1"  # never called: building a client opens no connection


def fingerprint(**stage: object) -> str:
    settings = LlmSettings(base_url=URL, stages={"skeleton_plan": StageModel(**stage)})
    return stages_fingerprint(LlmClient(settings), ["skeleton_plan"])


def test_max_completion_tokens_changes_the_version_like_max_tokens():
    plain = fingerprint()
    assert fingerprint(max_tokens=1000) != plain
    assert fingerprint(max_completion_tokens=1000) != plain
    assert fingerprint(max_completion_tokens=1000) != fingerprint(max_completion_tokens=2000)
