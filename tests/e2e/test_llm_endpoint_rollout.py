"""The test endpoint as a rollout's policy and simulated user: scripts, the rule-based user, and
oracle scripts that replay reference trajectories, over real HTTP with the real openai client."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from llm_server import make_client, spawn_endpoint

from envmill.schemas.rollout import POLICY_STAGE, STOP_MARKER, USER_STAGE
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.core.facts import LEADS, flatten_facts, said_as
from envmill.tasks.core.opening import opening_message
from envmill.tasks.llm import STAGE_HEADER, render
from envmill.tasks.offline_llm import (
    OPENING_CUE,
    ChatReply,
    oracle_script,
    script_key,
    serve_endpoint,
    user_script_key,
)
from envmill.tasks.offline_llm import control as endpoint_control
from envmill.tasks.offline_llm.simulated_user import UNKNOWN, UserPrompt, read_prompt, user_reply
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from tests.conftest import TEST_LIMITS

DONE = "All set. Appointment AP-2: status is now cancelled."  # a closing report, no question
SYSTEM = "You are the front desk of a clinic.\n\nCurrent date and time: 2025-03-10 09:00 (Monday)."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {
                "type": "object",
                "properties": {"patient_id": {"type": "string"}},
                "required": ["patient_id"],
            },
        },
    }
    for name in ("find_patient", "book_visit")
]
TASK = "You are Alice Moreno. You want to move your appointment to a later date."
FACTS = [
    ("patient_id", "P003"),
    ("date", "2025-03-11"),
    ("appointment id", "AP-1"),
    ("appointment id 2", "AP-2"),
]


@pytest.fixture
def endpoint():
    with serve_endpoint() as served:
        yield served


def bare_client(url: str) -> openai.OpenAI:
    """The openai client alone; its requests are the policy's unless they say otherwise."""
    headers = {STAGE_HEADER: POLICY_STAGE}
    return openai.OpenAI(
        base_url=url, api_key="sk-local", max_retries=0, timeout=5.0, default_headers=headers
    )


def call(name: str, **arguments) -> dict:
    return {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}


def policy_turn(client: openai.OpenAI, messages: list[dict]):
    """The policy's next message for ``messages`` (after the system message)."""
    conversation = [{"role": "system", "content": SYSTEM}, *messages]
    return client.chat.completions.create(model="policy", messages=conversation, tools=TOOLS)


def as_sent(message) -> dict:
    """An assistant message as the next request carries it."""
    return message.model_dump(exclude_none=True)


def tool_results(message, content: str = '{"success": true}') -> list[dict]:
    return [{"role": "tool", "tool_call_id": c.id, "content": content} for c in message.tool_calls]


def user_prompt(task: str = TASK, facts=FACTS) -> list[dict]:
    return render("rollout_user", task=task, facts=facts, stop=STOP_MARKER).messages


def user_says(client: openai.OpenAI, dialogue: list[dict], prompt: list[dict] | None = None):
    """The simulated user's next message, the dialogue from its side (its own as assistant)."""
    messages = [
        *(prompt or user_prompt()),
        *(dialogue or [{"role": "user", "content": OPENING_CUE}]),
    ]
    headers = {STAGE_HEADER: USER_STAGE}
    reply = client.chat.completions.create(model="user", messages=messages, extra_headers=headers)
    return reply.choices[0].message


def post_raw(endpoint, path: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        endpoint.url.removesuffix("/v1") + path,
        data=body,
        headers={"Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# --- scripts of the policy -------------------------------------------------------------------


def test_policy_answers_from_its_script_by_turn_then_done(endpoint):
    opening = "Please book a visit for P003."
    held = endpoint.script(
        script_key(f"  {opening}\n"),  # the key is of the stripped text
        [call("find_patient", patient_id="P003"), {"content": "Which day suits you?"}],
    )
    assert held == 1
    client = bare_client(endpoint.url)
    messages = [{"role": "user", "content": opening}]
    first = policy_turn(client, messages).choices[0]
    assert first.finish_reason == "tool_calls" and first.message.content is None
    (called,) = first.message.tool_calls
    assert called.function.name == "find_patient"
    assert json.loads(called.function.arguments) == {"patient_id": "P003"}
    again = policy_turn(client, messages).choices[0].message  # a retry: the same answer
    assert again.tool_calls[0].function.arguments == called.function.arguments
    messages += [as_sent(first.message), *tool_results(first.message)]
    second = policy_turn(client, messages).choices[0]
    assert second.message.content == "Which day suits you?" and not second.message.tool_calls
    messages += [as_sent(second.message), {"role": "user", "content": "Tuesday."}]
    assert policy_turn(client, messages).choices[0].message.content == "Done."
    # without a script: the generic answer (the first tool); the stage is the policy's
    other = policy_turn(client, [{"role": "user", "content": "Something else."}]).choices[0]
    assert other.message.tool_calls[0].function.name == "find_patient"
    assert endpoint.stats()["stages"] == {"policy": 5}


def test_concurrent_episodes_each_get_their_own_script(endpoint):
    openings = ["Episode one, please.", "Episode two, please."]
    turns = 6
    endpoint.scripts(
        {
            script_key(opening): [{"content": f"{opening} turn {n}"} for n in range(turns)]
            for opening in openings
        }
    )
    endpoint.configure(latency=[0.0, 0.01])
    client = bare_client(endpoint.url)
    together = threading.Barrier(len(openings))

    def episode(opening: str) -> list[str]:
        messages, said = [{"role": "user", "content": opening}], []
        for _ in range(turns):
            together.wait(timeout=10)  # both episodes ask for turn n at the same moment
            text = policy_turn(client, messages).choices[0].message.content
            said.append(text)
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "ok"}]
        return said

    with ThreadPoolExecutor(len(openings)) as pool:
        replies = list(pool.map(episode, openings))
    for opening, said in zip(openings, replies, strict=True):
        assert said == [f"{opening} turn {n}" for n in range(turns)]


def test_malformed_arguments_and_empty_messages_pass_through(endpoint, tmp_path):
    opening = "Break things, please."
    broken = '{"patient_id": "P003"'
    endpoint.script(
        script_key(opening),
        [
            {"tool_calls": [{"name": "find_patient", "arguments": broken}]},
            {"empty": True},
            {"content": None},
            ChatReply(content="checked", tool_calls=[{"name": "no_such_tool", "arguments": {}}]),
        ],
    )
    client = bare_client(endpoint.url)
    messages = [{"role": "user", "content": opening}]
    first = policy_turn(client, messages).choices[0].message
    assert first.tool_calls[0].function.arguments == broken
    llm = make_client(endpoint.url, tmp_path, cache=False)  # envmill's own client sees it too
    conversation = [{"role": "system", "content": SYSTEM}, *messages]
    (seen,) = llm.complete("policy", conversation, tools=TOOLS).tool_calls
    assert seen.arguments == broken
    with pytest.raises(ValueError):
        seen.arguments_json()
    messages += [as_sent(first), *tool_results(first, '{"error": "bad arguments"}')]
    empty = policy_turn(client, messages).choices[0]
    assert empty.message.content == "" and not empty.message.tool_calls
    assert empty.finish_reason == "stop"
    messages.append({"role": "assistant", "content": ""})
    null = policy_turn(client, messages).choices[0].message
    assert null.content is None and not null.tool_calls
    messages.append({"role": "assistant", "content": None})
    last = policy_turn(client, messages).choices[0].message
    assert last.content == "checked" and last.tool_calls[0].function.name == "no_such_tool"


def test_bad_script_bodies_are_refused_with_the_problem(endpoint):
    bad = {
        b"[1, 2]": "must be a JSON object",
        b'{"k": {"content": "x"}}': "script 'k' must be an array",
        b'{"k": [{"text": "x"}]}': "unknown field 'text'",
        b'{"k": [{"content": 3}]}': "script 'k' reply 0: content must be a string or null",
        b'{"k": [{"tool_calls": [{"arguments": {}}]}]}': "tool_calls[0]: name must be a",
        b'{"k": [{"tool_calls": [{"name": "f", "arguments": [1]}]}]}': "an object or a string",
        b'{"k": [{"empty": true, "content": "x"}]}': '{"empty": true} alone',
        b'{" ": []}': "must not be empty",
        b"{not json": "not JSON",
    }
    for body, problem in bad.items():
        status, answer = post_raw(endpoint, "/_scripts", body)
        assert status == 400 and problem in answer["error"]["message"], (body, answer)
    with pytest.raises(ValueError, match="unknown field"):
        endpoint.script("k", [{"txt": "x"}])
    assert endpoint.script("k", []) == 1  # nothing bad reached the endpoint


def test_many_scripts_upload_fast_merge_remove_and_reset(endpoint, monkeypatch):
    scripts = {
        script_key(f"scenario {i}"): [call("find_patient", patient_id=f"P{i}"), {"content": "ok"}]
        for i in range(3000)
    }
    start = time.monotonic()
    assert endpoint.scripts(scripts) == 3000
    assert time.monotonic() - start < 5.0
    monkeypatch.setattr(endpoint_control, "UPLOAD_BYTES", 2000)  # many small bodies
    assert (
        endpoint.scripts({script_key(f"more {i}"): [{"content": "x"}] for i in range(50)}) == 3050
    )
    assert endpoint.script(script_key("scenario 7"), None) == 3049
    client = bare_client(endpoint.url)
    arguments = policy_turn(client, [{"role": "user", "content": "scenario 1234"}])
    assert json.loads(arguments.choices[0].message.tool_calls[0].function.arguments) == {
        "patient_id": "P1234"
    }
    gone = policy_turn(client, [{"role": "user", "content": "scenario 7"}]).choices[0].message
    assert json.loads(gone.tool_calls[0].function.arguments) == {"patient_id": "example"}
    endpoint.reset()
    assert endpoint.script("k", []) == 1


def test_an_endpoint_in_another_process_takes_scripts(tmp_path):
    at_start = tmp_path / "scripts.json"
    at_start.write_text(json.dumps({script_key("from a file"): [{"content": "file script"}]}))
    with spawn_endpoint("--scripts", str(at_start)) as endpoint:
        assert endpoint.script(script_key("uploaded"), [call("book_visit", patient_id="P9")]) == 2
        client = bare_client(endpoint.url)
        scripted = policy_turn(client, [{"role": "user", "content": "from a file"}])
        assert scripted.choices[0].message.content == "file script"
        uploaded = policy_turn(client, [{"role": "user", "content": "uploaded"}]).choices[0]
        assert uploaded.message.tool_calls[0].function.name == "book_visit"
        user_key = user_script_key(TASK)
        endpoint.script(user_key, [{"content": "Scripted hello."}])
        assert user_says(client, []).content == "Scripted hello."
        endpoint.reset()
        after = policy_turn(client, [{"role": "user", "content": "from a file"}]).choices[0]
        assert after.message.tool_calls[0].function.name == "find_patient"  # generic again


# --- the simulated user ----------------------------------------------------------------------


def test_rule_based_user_opens_answers_and_stops(endpoint):
    client = bare_client(endpoint.url)
    opening = user_says(client, []).content
    assert opening == "I want to move my appointment to a later date."
    dialogue = [{"role": "assistant", "content": opening}]

    def exchange(agent: str) -> str:
        dialogue.append({"role": "user", "content": agent})
        answer = user_says(client, dialogue).content
        dialogue.append({"role": "assistant", "content": answer})
        return answer

    assert exchange("Could you tell me the patient id?") == "Sure, it's P003."
    given = exchange("Could you give me the date and appointment id, please?")
    assert given.startswith(LEADS) and given.endswith(
        "the date is 11 March 2025 and the appointment id is AP-1."  # as the reference user says it
    ), given
    assert exchange("Before I go ahead, what's the appointment id?") == "That would be AP-2."
    assert exchange("What is your email address?") == "I'm sorry, I don't know that."
    assert (
        exchange("Could you tell me your patient_id and email address?")
        == "It's P003. I'm sorry, I don't know the email address."
    )
    assert exchange("Shall I go ahead and move it?") == "Yes, please go ahead."
    assert exchange(DONE) == STOP_MARKER
    for ending in (
        "I'm afraid that cannot be done: the doctor is on leave.",
        "Your visit is moved. Is there anything else I can help you with?",
    ):
        assert user_says(client, [*dialogue, {"role": "user", "content": ending}]).content == (
            STOP_MARKER
        )
    assert endpoint.stats()["stages"] == {"rollout_user": 10}


def test_the_user_reads_its_prompt_with_no_facts_or_long_ones():
    (system,) = [m["content"] for m in user_prompt("Cancel my visit.", []) if m["role"] == "system"]
    assert read_prompt(system) == UserPrompt("Cancel my visit.", [])
    said = ["I want to cancel my visit."]
    assert user_reply(read_prompt(system), said, "What's your patient id?") == UNKNOWN
    asked = "Could you tell me the id? Also, is that all?"  # a question first, then "is that all"
    assert user_reply(read_prompt(system), said, asked) == UNKNOWN
    long = user_prompt(
        "Move it.", [("full request", "Move AP-1\nto Friday: 10:00"), ("flag", True)]
    )
    facts = read_prompt(long[0]["content"]).facts
    assert [(f.noun, f.value) for f in facts] == [
        ("full request", "Move AP-1\nto Friday: 10:00"),
        ("flag", "yes"),
    ]


def test_user_script_by_turn_then_the_rules(endpoint):
    prompt = user_prompt("Book me a visit.", [("patient id", "P7")])
    endpoint.script(
        user_script_key(" Book me a visit.\n"),
        [{"content": "Hi, I'd like a visit."}, {"content": "It's P7, thanks."}],
    )
    client = bare_client(endpoint.url)
    dialogue = []
    for agent, expected in (
        (None, "Hi, I'd like a visit."),
        ("Could you tell me the patient id?", "It's P7, thanks."),
        ("Could you give me the patient id, please?", "It's P7."),  # past the script
        (DONE, STOP_MARKER),
    ):
        if agent:
            dialogue.append({"role": "user", "content": agent})
        said = user_says(client, dialogue, prompt).content
        assert said == expected
        dialogue.append({"role": "assistant", "content": said})
    assert user_script_key("Book me a visit.") != script_key("Book me a visit.")


# --- oracle scripts replay reference trajectories ----------------------------------------------


@pytest.fixture(scope="module")
def procedural(sandbox):
    """Reference trajectories of the procedural pipeline, of both modes."""
    settings = EnvmillSettings(
        envs=1,
        scenarios_per_env=10,
        batch_size=100,
        seed=15,  # both modes; a conversational question for two facts (12 and 13 lost it)
        sandbox=TEST_LIMITS,
        domains=["clinic"],
    )
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    (environment,) = output.environments
    scenarios = {s.scenario_id: s for s in output.scenarios}
    pairs = [(scenarios[t.scenario_id], t) for t in output.trajectories]
    assert {s.mode for s, _ in pairs} == {"conversational", "non_conversational"}
    return environment, pairs


def replay(client: openai.OpenAI, tools: list[dict], scenario, reference) -> list[dict]:
    """A rollout in small: the policy and (in conversational mode) the simulated user both
    played by the endpoint, the tools answered with the reference's results."""
    results = iter([m["content"] for m in reference.messages if m["role"] == "tool"])
    conversational = scenario.mode == "conversational"
    facts = [(f.key, said_as(f.key, f.value)) for f in flatten_facts(scenario.user_facts)]
    prompt = user_prompt(scenario.task, facts)
    user_side: list[dict] = []

    def user_turn() -> str:
        text = user_says(client, user_side, prompt).content
        user_side.append({"role": "assistant", "content": text})
        return text

    opening = user_turn() if conversational else scenario.task
    messages = [reference.messages[0], {"role": "user", "content": opening}]
    for _ in range(60):
        reply = client.chat.completions.create(model="policy", messages=messages, tools=tools)
        message = reply.choices[0].message
        messages.append(as_sent(message))
        if message.tool_calls:
            messages += [
                {"role": "tool", "tool_call_id": c.id, "content": next(results)}
                for c in message.tool_calls
            ]
            continue
        if not conversational:
            break
        user_side.append({"role": "user", "content": message.content})
        answer = user_turn()
        if answer == STOP_MARKER:
            break
        messages.append({"role": "user", "content": answer})
    return messages


def shape(messages: list[dict]) -> list[tuple]:
    """Role, text (a user's answer without its opening words) and calls of each message."""
    shaped = []
    for message in messages[1:]:
        calls = [
            (c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ]
        text = message.get("content")
        if message["role"] == "user":
            text = re.sub(r"^(Sure, it's|It's|That would be) ", "", text)
        shaped.append((message["role"], text, calls))
    return shaped


def test_oracle_scripts_replay_reference_trajectories(endpoint, procedural):
    environment, pairs = procedural
    tools = [tool.model_dump() for tool in environment.tools]
    endpoint.scripts(
        {script_key(t.messages[1]["content"]): oracle_script(t.messages) for _, t in pairs}
    )
    client = bare_client(endpoint.url)
    for scenario, reference in pairs:
        assert reference.messages[1]["content"] == opening_message(scenario)
        replayed = replay(client, tools, scenario, reference)
        assert shape(replayed) == shape(reference.messages), scenario.mode
        said = reference.messages[-1]["content"]  # the answer, or what the solution changed
        assert replayed[-1] == {"role": "assistant", "content": said}
    conversational = [r for s, r in pairs if s.mode == "conversational"]
    assert any(
        m["role"] == "assistant" and not m.get("tool_calls") and " and " in m["content"]
        for r in conversational
        for m in r.messages
    )  # a question for two facts was among them
    stages = endpoint.stats()["stages"]
    assert stages["rollout_user"] >= 2 * len(conversational)


def test_oracle_script_keeps_arguments_verbatim():
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": 1}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": {"b": 2}}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        {"role": "assistant", "content": "Could you tell me the id?"},
        {"role": "user", "content": "It's 3."},
        {"role": "assistant", "content": DONE},
    ]
    assert oracle_script(messages) == [
        {
            "content": None,
            "tool_calls": [
                {"name": "f", "arguments": '{"a": 1}'},
                {"name": "g", "arguments": '{"b": 2}'},
            ],
        },
        {"content": "Could you tell me the id?"},
        {"content": DONE},
    ]
