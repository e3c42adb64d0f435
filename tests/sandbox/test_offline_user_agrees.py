"""The offline simulated user answers every question a reference asks with the values the
reference's own user gives (red team, round 42: "What's the name of the course?" got "I'm sorry,
I don't know that."; "What's the flight number?" got the flight's id). A rollout against
``--local-llm`` replays the reference whatever the user says, so only this test sees it."""

from __future__ import annotations

import json

import pytest

from envmill.schemas.rollout import STOP_MARKER
from envmill.tasks.core.facts import flatten_facts, mentions, say_value
from envmill.tasks.llm import render
from envmill.tasks.offline_llm.simulated_user import UNKNOWN, read_prompt, user_reply
from envmill.warehouse.views import query
from tests.corpus import make_corpus

DOMAINS = ("clinic", "hotel", "events", "courses", "gym", "banking", "airline", "payroll")


@pytest.fixture(scope="module")
def conversations(tmp_path_factory, sandbox) -> list[dict]:
    root = make_corpus(
        tmp_path_factory.mktemp("talk") / "data", sandbox, domains=DOMAINS, per_env=10
    )
    sql = (
        "select s.task, s.user_facts_json, t.messages_json from scenarios s join trajectories t"
        " using (scenario_id) where t.policy = 'reference' and s.mode = 'conversational'"
    )
    return query(root, sql).to_pylist()


def test_the_offline_user_gives_what_the_references_user_gives(conversations):
    asked = 0
    for row in conversations:
        facts = [
            (f.key, say_value(f.value)) for f in flatten_facts(json.loads(row["user_facts_json"]))
        ]
        system = render("rollout_user", task=row["task"], facts=facts, stop=STOP_MARKER)
        prompt = read_prompt(system.messages[0]["content"])
        said: list[str] = []
        agent: list[str] = []
        for message in json.loads(row["messages_json"]):
            if message["role"] == "assistant" and message.get("content"):
                agent.append(message["content"])
            if message["role"] != "user":
                continue
            if said and agent and "?" in agent[-1]:
                asked += 1
                reply = user_reply(prompt, said, "\n\n".join(agent))
                assert UNKNOWN not in reply, (agent[-1], message["content"], reply)
                given = [
                    v for _, v in facts if mentions(message["content"].casefold(), v.casefold())
                ]
                missing = [v for v in given if not mentions(reply.casefold(), v.casefold())]
                assert not missing, (agent[-1], message["content"], reply)
            said.append(message["content"])
            agent = []
    assert asked >= 20, asked
