"""LLM stage names: listed once (``tasks/backends/llm/stages.py``), carried beside the prompt in a
header (never in it), and kept apart in the cache. The endpoint here is a thread of this process."""

from __future__ import annotations

import openai
import pytest
from llm_server import make_client

from envmill.tasks.backends.llm import stages
from envmill.tasks.backends.llm.skelbuilder.examples import STAGE_EXAMPLES
from envmill.tasks.llm import STAGE_HEADER, list_prompts
from envmill.tasks.offline_llm import RESPONDERS, serve_endpoint

PLAIN = [{"role": "user", "content": "hello"}]


@pytest.fixture
def endpoint():
    with serve_endpoint() as served:
        yield served


def test_every_list_of_stages_is_made_from_the_one_list():
    assert sorted(list_prompts()) == sorted(stages.PROMPTED_STAGES)  # a prompt file per stage
    assert set(STAGE_EXAMPLES) == set(stages.SKELETON_STAGES)
    assert set(RESPONDERS) == set(stages.CHAT_STAGES)
    assert set(stages.STAGES) <= set(stages.CHAT_STAGES)
    assert len(set(stages.ALL_STAGES)) == len(stages.ALL_STAGES)


def test_the_stage_travels_in_a_header_and_keys_the_cache(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    first = client.complete("stage-a", PLAIN)
    second = client.complete("stage-b", PLAIN)  # the same text for another stage: not a hit
    assert not second.record.cache_hit
    assert first.record.request_hash != second.record.request_hash
    assert client.complete("stage-a", PLAIN).record.cache_hit
    logged = endpoint.requests()
    assert [entry["stage"] for entry in logged] == ["stage-a", "stage-b"]
    assert all(entry["body"]["messages"] == PLAIN for entry in logged)


def test_the_offline_model_refuses_a_request_that_names_no_stage(endpoint):
    bare = openai.OpenAI(base_url=endpoint.url, api_key="sk-local", max_retries=0, timeout=5.0)
    with pytest.raises(openai.BadRequestError, match=STAGE_HEADER):
        bare.chat.completions.create(model="m", messages=PLAIN)
    headers = {STAGE_HEADER: "plain"}
    reply = bare.chat.completions.create(model="m", messages=PLAIN, extra_headers=headers)
    assert reply.choices[0].message.content == "ok: hello"
    assert endpoint.stats()["requests"] == 1  # the refused one was never answered
