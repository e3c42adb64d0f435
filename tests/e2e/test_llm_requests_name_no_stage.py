"""No request envmill sends carries its stage inside the prompt: every stage's requests, through a
proxy that records them as they go over the wire, name the stage in the ``X-Envmill-Stage``
header alone. The stages come from their one list (``tasks/backends/llm/stages.py``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from llm_server import llm_settings, recording_proxy

from envmill.schemas.answers import ExpectedAnswer
from envmill.schemas.scenario import ScenarioContent
from envmill.tasks.backends.llm.stages import ALL_STAGES, CHAT_STAGES, EMBEDDING_STAGES
from envmill.tasks.judge.llm import LlmJudge
from envmill.tasks.llm import STAGE_HEADER, LlmClient
from envmill.tasks.offline_llm import serve_endpoint
from envmill.tasks.rollout.agent import LlmPolicy
from envmill.tasks.rollout.user import LlmUser
from tests.cli import envmill_in

TOOLS = [{"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}]
# Slips that make the fake model answer wrongly once, so the repair stages are asked too.
ASKED = ScenarioContent(  # a question the optional LLM judge ([reward] judge = "llm") is asked of
    env_id="parking",
    task="How many sessions does plate KX-1 have?",
    initial_state={"sessions": {"S-1": {"plate": "KX-1"}, "S-2": {"plate": "KX-1"}}},
    reference_solution=[],
    checks=[],
    expected_answer=ExpectedAnswer(type="count", value=2),
)
SLIPS = [{"kind": "syntax"}, {"kind": "trivial_checks"}]


def _rollout_roles(url: str) -> None:
    """One turn of each rollout role, as an episode asks it, and the LLM judge's verdict."""
    client = LlmClient(llm_settings(url, cache=False))
    scenario = SimpleNamespace(task="Book a check-up for Alice", user_facts={"name": "Alice"})
    LlmUser(client, scenario, item="episode-1").reply([])  # type: ignore[arg-type]
    system = {"role": "system", "content": "You run a clinic."}
    opening = [system, {"role": "user", "content": "Hi"}]
    LlmPolicy(client, item="episode-1").act(opening, TOOLS)
    LlmJudge(client, item="episode-1")(ASKED, ASKED.initial_state, "There are two sessions.")
    client.embed(EMBEDDING_STAGES[0], ["clinic appointment booking", "library lending"])


@pytest.mark.timeout(600)  # a whole LLM run, on a busy machine
def test_every_stage_is_named_in_a_header_and_never_in_a_prompt(tmp_path):
    with serve_endpoint(slips=SLIPS) as model, recording_proxy(model.url) as (url, seen):
        (tmp_path / "envmill.toml").write_text(f'workers = 1\n[llm]\nbase_url = "{url}"\n')
        (tmp_path / "topics.txt").write_text("clinic appointment booking\n")
        data = str(tmp_path / "data")
        run = ["run", "--backend", "llm", "--topics", "topics.txt", "--scenarios-per-env", "2"]
        done = envmill_in(tmp_path, *run, "--out", data)
        assert done.returncode == 0, done.stderr[-2000:]
        checked = envmill_in(tmp_path, "llm", "check")  # the configured endpoint: the proxy
        assert checked.returncode == 0, checked.stderr[-2000:]
        _rollout_roles(url)
    posts = [r for r in seen if r.method == "POST"]
    assert posts and not [r for r in seen if b"envmill-stage" in r.body]
    named = [{k.lower(): v for k, v in r.headers.items()}.get(STAGE_HEADER.lower()) for r in posts]
    assert all(named), [r.path for r, stage in zip(posts, named, strict=True) if not stage]
    assert set(named) == set(ALL_STAGES), set(ALL_STAGES) ^ set(named)
    chats = {stage for r, stage in zip(posts, named, strict=True) if "/chat/" in r.path}
    assert chats == set(CHAT_STAGES)
