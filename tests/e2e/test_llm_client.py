"""The LLM layer through the real openai client against the local endpoint (DESIGN §8)."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from llm_server import (
    TEST_MODEL,
    TEST_STAGE,
    completion_json,
    elapsed_since,
    fire_calls,
    free_port,
    llm_settings,
    make_client,
    spawn_endpoint,
    within,
)

from envmill.schemas.llm import LlmSettings, StageModel
from envmill.schemas.topics import TopicVerdict
from envmill.tasks.llm import (
    LlmCallError,
    LlmClient,
    LlmConfigError,
    LlmUnreachableError,
    local_limits,
    render,
    summarize,
)
from envmill.tasks.offline_llm import Fault, serve_endpoint

SLACK = 0.5  # seconds a failing call may take past its deadline (the last attempt's overrun)
TEST_DEADLINE = TEST_STAGE.deadline_seconds
TASKS = [
    "Book a flight from Paris to Rome for Alice on Friday",
    "Cancel my dentist appointment tomorrow morning",
    "Transfer 200 dollars from my checking account to savings",
    "Renew my library loan for the book Dune",
    "What is the weather in Berlin today?",
]


@pytest.fixture
def endpoint():
    """A fresh endpoint on a thread of the test process (no latency)."""
    with serve_endpoint() as served:
        yield served


def topics_prompt(task: str):
    return render("topics", corpus="API-Bank", task=task, tools=[])


def ask_topic(client: LlmClient, task: str = TASKS[0], **kwargs):
    prompt = topics_prompt(task)
    return client.complete(
        "topics", prompt.messages, schema=TopicVerdict, prompt_hash=prompt.prompt_hash, **kwargs
    )


def test_topic_mining_end_to_end(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    reply = ask_topic(client, item="api-bank/1")
    assert isinstance(reply.value, TopicVerdict)
    assert reply.value.stateful and "airline" in reply.value.topic
    record = reply.record
    assert (record.stage, record.item, record.model, record.outcome) == (
        "topics",
        "api-bank/1",
        TEST_MODEL,
        "ok",
    )
    assert record.prompt_hash == topics_prompt(TASKS[0]).prompt_hash
    assert record.attempts == 1 and not record.cache_hit
    assert record.prompt_tokens > 100 and record.completion_tokens > 10
    expected = (record.prompt_tokens * 1.0 + record.completion_tokens * 2.0) / 1e6
    assert record.cost_usd == pytest.approx(expected)
    assert client.collector.drain() == [record]
    body = endpoint.requests("topics")[0]["body"]
    assert body["response_format"]["json_schema"]["name"] == "TopicVerdict"
    assert "envmill-stage" not in json.dumps(body)  # the stage goes in a header, not the prompt
    assert endpoint.requests("topics")[0]["stage"] == "topics"


def test_second_identical_run_makes_no_requests(endpoint, tmp_path):
    tasks = [f"{task} (request {i})" for i in range(4) for task in TASKS]

    def run() -> list:
        client = make_client(endpoint.url, tmp_path)
        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(lambda task: ask_topic(client, task), tasks))

    first = run()
    assert endpoint.stats()["requests"] == len(tasks)
    endpoint.reset()
    second = run()
    assert endpoint.stats()["requests"] == 0
    assert all(reply.record.cache_hit and reply.record.cost_usd == 0 for reply in second)
    assert [r.value for r in second] == [r.value for r in first]
    tokens = {r.record.request_hash: r.record.prompt_tokens for r in first}
    assert all(tokens[r.record.request_hash] == r.record.prompt_tokens for r in second)


def test_the_sample_index_and_the_model_are_part_of_the_key(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    ask_topic(client, sample=0)
    ask_topic(client, sample=1)
    other = make_client(endpoint.url, tmp_path, default=StageModel(model="other-model"))
    ask_topic(other, sample=0)
    assert endpoint.stats()["requests"] == 3


def test_max_completion_tokens_is_sent_instead_of_max_tokens_and_keys_the_cache(endpoint, tmp_path):
    """Reasoning models refuse ``max_tokens``: a stage that sets the other limit sends only it."""
    reasoning = {"topics": StageModel(max_completion_tokens=2000)}
    client = make_client(endpoint.url, tmp_path, stages=reasoning)
    ask_topic(client)
    ask_topic(make_client(endpoint.url, tmp_path))  # the same question without it is not a hit
    first, second = (entry["body"] for entry in endpoint.requests("topics"))
    assert first["max_completion_tokens"] == 2000 and "max_tokens" not in first
    assert second["max_tokens"] == TEST_STAGE.max_tokens and "max_completion_tokens" not in second
    assert ask_topic(client).record.cache_hit and endpoint.stats()["requests"] == 2


def test_a_corrupt_cache_entry_is_ignored_and_rewritten(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    key = ask_topic(client).record.request_hash
    path = client.cache.path(key)
    path.write_text(path.read_text()[:40])
    again = ask_topic(client)
    assert not again.record.cache_hit and endpoint.stats()["requests"] == 2
    assert json.loads(path.read_text())["key"] == key
    assert ask_topic(client).record.cache_hit


RECOVERABLE = {
    "status-500": Fault("status", status=500),
    "status-503": Fault("status", status=503),
    "rate-limit": Fault("status", status=429, retry_after=0.3),
    "hang": Fault("hang", seconds=3.0),
    "drop": Fault("drop"),
    "truncated": Fault("truncated"),
    "prose": Fault("prose"),
    "think": Fault("think"),
    "wrong-schema": Fault("wrong_schema"),
    "empty": Fault("empty"),
}
REQUESTS_NEEDED = {"prose": 1, "think": 1}  # tolerated by the parser: no second request


@pytest.mark.parametrize("name", sorted(RECOVERABLE))
def test_every_fault_recovers_by_retry_or_repair(endpoint, tmp_path, name):
    client = make_client(endpoint.url, tmp_path)
    endpoint.add_faults(RECOVERABLE[name])
    start = time.monotonic()
    reply = ask_topic(client)
    assert reply.value.topic.startswith("airline reservations")
    assert reply.record.attempts == REQUESTS_NEEDED.get(name, 2)
    assert endpoint.stats()["faults"] == {RECOVERABLE[name].kind: 1}
    assert elapsed_since(start) < TEST_DEADLINE + SLACK
    if name == "rate-limit":
        assert elapsed_since(start) >= 0.3  # Retry-After was honoured


PERSISTENT = {  # fault -> error_class of the failure it causes when it never stops
    "status-500": (Fault("status", status=500, count=None), "InternalServerError"),
    "rate-limit": (Fault("status", status=429, retry_after=0.2, count=None), "RateLimitError"),
    "hang": (Fault("hang", seconds=5.0, count=None), "APITimeoutError"),
    "drop": (Fault("drop", count=None), "APIConnectionError"),
    "truncated": (Fault("truncated", count=None), "ReplyError"),
    "wrong-schema": (Fault("wrong_schema", count=None), "ReplyError"),
    "empty": (Fault("empty", count=None), "EmptyReply"),
}


@pytest.mark.parametrize("name", sorted(PERSISTENT))
def test_a_fault_that_persists_is_a_recorded_failure_within_the_deadline(endpoint, tmp_path, name):
    fault, error_class = PERSISTENT[name]
    settings = {
        "max_attempts": 10,
        "default": TEST_STAGE.model_copy(update={"deadline_seconds": 1.5}),
    }
    client = make_client(endpoint.url, tmp_path, **settings)
    endpoint.add_faults(fault)
    start = time.monotonic()
    with pytest.raises(LlmCallError) as failed:
        ask_topic(client, item="t-1")
    assert elapsed_since(start) < 1.5 + SLACK
    record = failed.value.record
    assert (record.outcome, record.error_class) == ("failed", error_class)
    assert record.error and "\n" not in str(failed.value) and record.attempts >= 2
    assert str(failed.value).startswith(f"LLM call failed (topics t-1): {error_class}: ")
    assert client.collector.drain() == [record]
    assert client.cache.get(record.request_hash) is None  # failures are never cached


def test_a_retry_the_deadline_cuts_short_leaves_the_failure_it_retried(endpoint, tmp_path):
    """A 429, then a retry still arriving when the deadline passes: the call failed of the
    rate limit (on a loaded machine a persistent 429's last retry is cut short like this)."""
    client = make_client(endpoint.url, tmp_path, **short_deadline(1.0))
    endpoint.add_faults(Fault("status", status=429, retry_after=0.2))
    endpoint.add_faults(Fault("trickle", seconds=0.05, count=None))
    with pytest.raises(LlmCallError) as failed:
        within(1.0 + SLACK, lambda: ask_topic(client))
    record = failed.value.record
    assert (record.error_class, record.attempts) == ("RateLimitError", 2)
    assert record.error.endswith("(attempt 2, a retry, was cut short by the deadline)")


def test_a_retry_after_longer_than_the_deadline_fails_at_once(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    endpoint.add_faults(Fault("status", status=429, retry_after=60))
    start = time.monotonic()
    with pytest.raises(LlmCallError, match="exceeds the deadline") as failed:
        ask_topic(client)
    assert elapsed_since(start) < 1.0 and failed.value.record.attempts == 1


def test_the_repair_turn_shows_the_model_its_error(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    endpoint.add_faults(Fault("wrong_schema"))
    reply = ask_topic(client)
    first, second = (entry["body"]["messages"] for entry in endpoint.requests("topics"))
    bad_answer = second[-2]
    assert bad_answer["role"] == "assistant" and bad_answer["content"].startswith('{"answer"')
    assert second[: len(first)] == first
    repair = second[-1]["content"]
    assert repair.startswith("Your answer could not be used: the JSON does not match the schema")
    assert (
        "stateful: Field required" in repair and "answer: Extra inputs are not permitted" in repair
    )
    assert reply.record.attempts == 2
    # The repaired reply is cached under the original request's key.
    assert ask_topic(client).record.cache_hit and endpoint.stats()["requests"] == 2


def test_repair_turns_are_bounded(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path, repair_turns=0)
    endpoint.add_faults(Fault("wrong_schema"))
    with pytest.raises(LlmCallError, match=r"ReplyError: unusable reply after 0 repair turns: "):
        ask_topic(client)
    assert endpoint.stats()["requests"] == 1


def test_a_refused_response_format_falls_back_to_text_and_is_remembered(endpoint, tmp_path):
    endpoint.configure(refuse_response_format=True)
    model = StageModel(model="no-json-schema-model", timeout_seconds=0.5, deadline_seconds=3)
    client = make_client(endpoint.url, tmp_path, default=model)
    assert ask_topic(client, TASKS[0]).value.stateful
    assert ask_topic(client, TASKS[1]).value.stateful
    bodies = [entry["body"] for entry in endpoint.requests("topics")]
    assert ["response_format" in body for body in bodies] == [True, False, False]
    assert "JSON Schema of the answer: " in bodies[1]["messages"][0]["content"]


def test_text_mode_puts_the_schema_in_the_prompt(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path, structured_output="text")
    assert ask_topic(client).value.stateful
    (body,) = [entry["body"] for entry in endpoint.requests("topics")]
    assert "response_format" not in body
    schema = body["messages"][0]["content"].split("JSON Schema of the answer: ")[1]
    assert json.loads(schema)["title"] == "TopicVerdict"


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_not_retried(endpoint, tmp_path, status):
    client = make_client(endpoint.url, tmp_path)
    endpoint.add_faults(Fault("status", status=status, count=5))
    with pytest.raises(LlmCallError) as failed:
        client.complete("plain", [{"role": "user", "content": "hello"}])
    assert endpoint.stats()["requests"] == 1 and failed.value.record.attempts == 1
    assert f"HTTP {status}: injected HTTP {status}" in str(failed.value)


def test_an_unreachable_endpoint_is_one_line_and_quick(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = make_client(f"http://127.0.0.1:{port}/v1", tmp_path)
    start = time.monotonic()
    with pytest.raises(LlmUnreachableError) as failed:
        ask_topic(client)
    assert elapsed_since(start) < 1.0
    message = str(failed.value)
    assert "\n" not in message
    assert f"cannot reach the LLM endpoint http://127.0.0.1:{port}/v1: " in message
    assert failed.value.record.attempts == 1


def test_no_base_url_is_a_one_line_config_error(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-exported-key")  # a key alone never starts a run
    with pytest.raises(LlmConfigError, match="no LLM endpoint configured"):
        LlmClient(LlmSettings())


def test_the_environment_supplies_url_and_key(endpoint, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_BASE_URL", endpoint.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    client = LlmClient(LlmSettings(default=TEST_STAGE), cache_dir=tmp_path / "cache")
    assert client.complete("plain", [{"role": "user", "content": "hi"}]).text == "ok: hi"


def test_the_api_key_never_reaches_records_or_errors(endpoint, tmp_path):
    key = "sk-live-TOPSECRET-0123456789"
    client = make_client(endpoint.url, tmp_path, api_key=key)
    message = "Incorrect API key provided: {api_key}. You can find your key at ..."
    endpoint.add_faults(Fault("status", status=401, message=message))
    with pytest.raises(LlmCallError) as failed:
        ask_topic(client)
    assert "Incorrect API key provided: ***" in str(failed.value)  # the server did echo it
    record = failed.value.record
    for text in (str(failed.value), record.model_dump_json(), repr(client), repr(client.settings)):
        assert key not in text
    assert key not in json.dumps(client.__getstate__(), default=str)


def test_tool_calls_come_back_parsed(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    tool = {
        "type": "function",
        "function": {
            "name": "get_patient",
            "description": "Look up a patient.",
            "parameters": {
                "type": "object",
                "properties": {"patient_id": {"type": "string"}},
                "required": ["patient_id"],
            },
        },
    }
    messages = [{"role": "user", "content": "Who is patient P001?"}]
    reply = client.complete("rollout", messages, tools=[tool])
    assert reply.finish_reason == "tool_calls" and reply.text == ""
    (call,) = reply.tool_calls
    assert call.name == "get_patient" and call.arguments_json() == {"patient_id": "example"}
    assert json.loads(call.arguments) == {"patient_id": "example"}
    again = client.complete("rollout", messages, tools=[tool])
    assert again.record.cache_hit and again.tool_calls == reply.tool_calls


def test_embeddings_are_cached_and_similar_texts_are_close(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    texts = ["book a flight to rome", "book a flight to paris", "refund a concert ticket"]
    vectors = client.embed("dedupe", texts)
    assert client.embed("dedupe", texts) == vectors
    assert endpoint.stats()["routes"] == {"/v1/embeddings": 1}

    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    assert [r.cache_hit for r in client.collector.drain()] == [False, True]


def test_the_cap_holds_across_two_worker_processes(tmp_path):
    cap = 3
    with spawn_endpoint("--latency", "0.1") as served:
        context = multiprocessing.get_context("spawn")
        with context.Pool(2) as pool:
            args = [(served.url, str(tmp_path), cap, 20, f"worker-{i}") for i in range(2)]
            done = pool.starmap(fire_calls, args)
        stats = served.stats()
    assert done == [20, 20] and stats["requests"] == 40
    assert 1 < stats["peak_in_flight"] <= cap


def test_a_killed_holder_releases_its_slot(tmp_path):
    holder = (
        "import sys, time; from envmill.tasks.llm import local_limits; "
        "slot = local_limits(sys.argv[1], 1).slot(); slot.__enter__(); "
        "print('held', flush=True); time.sleep(60)"
    )
    gate = tmp_path / "gate"
    process = subprocess.Popen(
        [sys.executable, "-c", holder, str(gate)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "held"
        limits = local_limits(gate, 1)
        with pytest.raises(TimeoutError), limits.slot(timeout=0.2):
            pass
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        with limits.slot(timeout=2.0) as waited:
            assert waited < 2.0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()


def test_requests_per_minute_pace_the_starts(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path, requests_per_minute=600, cache=False)
    client.complete("warm-up", [{"role": "user", "content": "warm-up"}])
    messages = [[{"role": "user", "content": f"paced {i}"}] for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda m: client.complete("paced", m), messages))
    starts = sorted(entry["at"] for entry in endpoint.requests("paced"))
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    # Starts are reserved 60 / 600 = 0.1 s apart; the server sees them with the client's
    # scheduling jitter, which on a loaded machine delays one thread and so shortens one gap
    # (unpaced, all eight would arrive within a few milliseconds): most gaps keep the pace.
    assert len(starts) == 8 and statistics.median(gaps) >= 0.08
    assert starts[-1] - starts[0] >= 0.6


def test_the_collector_sums_a_batch(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path)
    for task in TASKS[:3]:
        ask_topic(client, task)
    ask_topic(client, TASKS[0])
    totals = summarize(client.collector.drain())
    assert totals["calls"] == 4 and totals["cache_hits"] == 1 and totals["failed"] == 0
    assert totals["cost_usd"] > 0 and len(client.collector) == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('```json\n{"a": 1}\n```', None),
        ('Here you go: {"a": 1} -- hope it helps', None),
        ('<think>maybe {"a": 2}?</think>\n{"a": 1}', None),
        ('no opening tag</think>{"a": 1}', None),
        ('{"a": 1', "invalid JSON: Expecting ',' delimiter"),
        ("<think>still thinking", "inside a <think> block"),
        ("   ", "the reply is empty"),
        ("I cannot help with that.", "no JSON object"),
        ('{"a": "one"}', "a: Input should be a valid integer"),
        ('{"a": ' + "9" * 5000 + "}", "invalid JSON: Exceeds the limit (4300 digits)"),
    ],
)
def test_replies_are_read_strictly_but_tolerantly(text, problem):
    from pydantic import BaseModel

    from envmill.tasks.llm.structured import ReplyError, parse_reply

    class Answer(BaseModel):
        a: int

    if problem is None:
        assert parse_reply(text, Answer).a == 1
    else:
        with pytest.raises(ReplyError, match=re.escape(problem)):
            parse_reply(text, Answer)


def test_strict_mode_only_for_closed_schemas():
    from pydantic import BaseModel, ConfigDict

    from envmill.tasks.llm.structured import response_format_for

    class Open(BaseModel):
        a: int = 0

    class Closed(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a: int

    assert response_format_for(Closed)["json_schema"]["strict"] is True
    assert response_format_for(Open)["json_schema"]["strict"] is False
    assert response_format_for(TopicVerdict)["json_schema"]["name"] == "TopicVerdict"


def test_prompts_carry_the_template_hash_and_no_stage_marker():
    import hashlib

    from envmill.tasks.llm import PromptError, list_prompts
    from envmill.tasks.llm.prompts import PROMPTS_DIR

    prompt = render("topics", corpus="ToolACE", task="Return my order", tools=["refund_order"])
    assert prompt.stage == "topics" and "topics" in list_prompts()
    assert not any("envmill-stage" in m["content"] for m in prompt.messages)
    assert [m["role"] for m in prompt.messages] == ["system", "user"]
    assert "- refund_order" in prompt.messages[1]["content"]
    text = (PROMPTS_DIR / "topics.md").read_bytes()
    assert prompt.prompt_hash == hashlib.sha256(text).hexdigest()[:16]
    with pytest.raises(PromptError, match="'task' is undefined"):
        render("topics", corpus="x", tools=[])
    with pytest.raises(PromptError, match="no such template"):
        render("../topics")


def test_cache_entries_are_written_atomically_and_checked(tmp_path):
    from envmill.tasks.llm import ResponseCache, request_key

    cache = ResponseCache(tmp_path)
    key = request_key({"model": "m", "messages": [{"role": "user", "content": "é"}]})
    assert key == request_key({"messages": [{"content": "é", "role": "user"}], "model": "m"})
    assert cache.get(key) is None
    cache.put(key, {"text": "hi"})
    assert cache.get(key) == {"text": "hi"}
    assert cache.path(key).parent.name == key[:2]
    assert [p.name for p in cache.path(key).parent.iterdir()] == [f"{key[2:]}.json"]
    other = request_key({"model": "other"})
    cache.path(other).parent.mkdir(parents=True, exist_ok=True)
    cache.path(other).write_text(cache.path(key).read_text())  # an entry under the wrong name
    assert cache.get(other) is None
    assert ResponseCache(None).get(key) is None


def test_a_client_ships_to_a_worker_without_its_connections(endpoint, tmp_path):
    import pickle

    client = make_client(endpoint.url, tmp_path)
    first = ask_topic(client)
    shipped = pickle.loads(pickle.dumps(client))
    assert shipped.collector is not client.collector and len(shipped.collector) == 0
    again = ask_topic(shipped)
    assert again.record.cache_hit and again.value == first.value
    assert endpoint.stats()["requests"] == 1


# --- Review findings: each test below failed before its fix. ---------------------------------

GOOD_TOPIC = {
    "stateful": True,
    "domain_specific": True,
    "topic": "clinic appointment booking",
    "introduction": "A clinic books visits. Patients book and cancel. No double booking.",
    "usefulness": 4,
    "modelability": 5,
    "reason": "The task changes bookings a clinic keeps.",
}
PLAIN = [{"role": "user", "content": "hi"}]


def short_deadline(seconds: float = 1.0) -> dict:
    return {"default": TEST_STAGE.model_copy(update={"deadline_seconds": seconds})}


@pytest.mark.parametrize("turn", ["first-request", "repair-turn"])
def test_a_trickling_reply_is_cut_off_at_the_deadline(endpoint, tmp_path, turn):
    # A byte every 50 ms never trips the 0.5 s read timeout; only the deadline can end it.
    client = make_client(endpoint.url, tmp_path, **short_deadline(1.0))
    if turn == "repair-turn":
        endpoint.add_faults(Fault("wrong_schema"))
    endpoint.add_faults(Fault("trickle", seconds=0.05, count=None))
    start = time.monotonic()
    with pytest.raises(LlmCallError) as failed:
        within(1.0 + SLACK, lambda: ask_topic(client))
    assert elapsed_since(start) < 1.0 + SLACK
    record = failed.value.record
    assert (record.outcome, record.error_class) == ("failed", "DeadlineExceeded")
    assert "1s deadline passed mid-reply" in record.error
    assert record.attempts == (1 if turn == "first-request" else 2)
    assert client.cache.get(record.request_hash) is None


def test_without_a_data_folder_the_gate_is_private(endpoint, tmp_path):
    import stat
    import tempfile
    from pathlib import Path

    client = LlmClient(llm_settings(endpoint.url))
    shared = Path(tempfile.gettempdir()) / f"envmill-llm-gate-{os.getuid()}"
    info = client.gate_dir.stat()
    assert client.gate_dir != shared and stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == os.getuid()
    assert client.complete("plain", PLAIN).text == "ok: hi"
    beside_the_cache = LlmClient(llm_settings(endpoint.url), cache_dir=tmp_path / "_llm_cache")
    assert beside_the_cache.gate_dir == tmp_path / "_llm_gate"


@pytest.mark.parametrize("problem", ["writable-by-others", "a-file", "slots-writable-by-others"])
def test_an_unsafe_gate_folder_is_a_one_line_config_error(endpoint, tmp_path, problem):
    gate = tmp_path / "gate"
    if problem == "a-file":
        gate.write_text("not a folder")
    else:
        (gate / "slots").mkdir(parents=True)
        (gate if problem == "writable-by-others" else gate / "slots").chmod(0o777)
    client = LlmClient(llm_settings(endpoint.url), gate_dir=gate)
    with pytest.raises(LlmConfigError, match="LLM gate folder") as refused:
        client.complete("plain", PLAIN)
    assert "\n" not in str(refused.value) and endpoint.stats()["requests"] == 0


def test_waiting_for_a_slot_ends_with_a_recorded_failure(endpoint, tmp_path):
    client = make_client(endpoint.url, tmp_path, max_concurrency=1, **short_deadline(1.0))
    holder = local_limits(tmp_path / "_llm_gate", 1).slot()
    holder.__enter__()  # another process of the run holds the only slot, for good
    try:
        start = time.monotonic()
        with pytest.raises(LlmCallError) as failed:
            within(1.0 + SLACK, lambda: client.complete("plain", PLAIN))
    finally:
        holder.__exit__(None, None, None)
    record = failed.value.record
    assert elapsed_since(start) < 1.0 + SLACK and "waiting for an LLM slot" in record.error
    assert (record.error_class, record.attempts) == ("DeadlineExceeded", 0)
    assert record.queue_seconds == pytest.approx(1.0, abs=0.2)
    assert client.collector.drain() == [record] and endpoint.stats()["requests"] == 0


def test_waiting_for_the_rpm_pace_ends_with_a_recorded_failure(endpoint, tmp_path):
    client = make_client(
        endpoint.url, tmp_path, requests_per_minute=1, cache=False, **short_deadline(1.0)
    )
    client.complete("paced", PLAIN)  # the next start is a minute away
    with pytest.raises(LlmCallError, match="past the deadline") as failed:
        within(1.0 + SLACK, lambda: client.complete("paced", [{"role": "user", "content": "2"}]))
    assert failed.value.record.attempts == 0 and endpoint.stats()["requests"] == 1


ODD_USAGE = {  # usage as a server sends it -> (prompt_tokens, completion_tokens) recorded
    "negative": ({"prompt_tokens": -5, "completion_tokens": 3, "total_tokens": -2}, (0, 3)),
    "null": ({"prompt_tokens": None, "completion_tokens": None}, (0, 0)),
    "partial": ({"prompt_tokens": 5}, (5, 0)),
    "not-an-object": ([1], (0, 0)),
    "text": ({"prompt_tokens": "12", "completion_tokens": 2.0}, (0, 2)),
    "absent": (None, (0, 0)),
}


@pytest.mark.parametrize("name", sorted(ODD_USAGE))
def test_odd_token_counts_are_clamped_and_the_reply_is_kept(endpoint, tmp_path, name):
    usage, counted = ODD_USAGE[name]
    message = {"role": "assistant", "content": json.dumps(GOOD_TOPIC)}
    endpoint.add_faults(Fault("raw", status=200, body=completion_json(message, usage)))
    client = make_client(endpoint.url, tmp_path)
    reply = ask_topic(client)
    record = reply.record
    assert reply.value.topic == GOOD_TOPIC["topic"] and record.outcome == "ok"
    assert (record.prompt_tokens, record.completion_tokens) == counted
    again = ask_topic(client)  # the cached entry is usable
    assert again.record.cache_hit and again.value == reply.value
    assert (again.record.prompt_tokens, again.record.completion_tokens) == counted


def test_content_in_text_parts_is_joined(endpoint, tmp_path):
    text = json.dumps(GOOD_TOPIC)
    parts = [{"type": "text", "text": text[:20]}, {"type": "text", "text": text[20:]}]
    message = {"role": "assistant", "content": parts}
    endpoint.add_faults(Fault("raw", status=200, body=completion_json(message)))
    reply = ask_topic(make_client(endpoint.url, tmp_path))
    assert reply.text == text and reply.value.topic == GOOD_TOPIC["topic"]


UNUSABLE_MESSAGES = {
    "image-part": {"role": "assistant", "content": [{"type": "image_url", "image_url": {}}]},
    "number": {"role": "assistant", "content": 5},
    "object": {"role": "assistant", "content": {"text": "hi"}},
    "tool-call-without-function": {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function"}],
    },
}


@pytest.mark.parametrize("name", sorted(UNUSABLE_MESSAGES))
def test_a_reply_of_the_wrong_shape_is_a_recorded_failure(endpoint, tmp_path, name):
    body = completion_json(UNUSABLE_MESSAGES[name], {"prompt_tokens": 7, "completion_tokens": 1})
    endpoint.add_faults(Fault("raw", status=200, body=body, count=None))
    client = make_client(endpoint.url, tmp_path)
    with pytest.raises(LlmCallError) as failed:
        client.complete("plain", PLAIN)
    record = failed.value.record
    assert (record.error_class, record.attempts, record.prompt_tokens) == ("UnusableReply", 1, 7)
    assert client.collector.drain() == [record]
    assert client.cache.get(record.request_hash) is None


def test_embeddings_of_the_wrong_shape_are_a_recorded_failure(endpoint, tmp_path):
    body = {"data": [{"index": 0, "embedding": ["x"]}], "usage": {"prompt_tokens": -1}}
    endpoint.add_faults(Fault("raw", status=200, body=body, count=None))
    client = make_client(endpoint.url, tmp_path)
    with pytest.raises(LlmCallError, match="UnusableReply"):
        client.embed("dedupe", ["one text"])


def test_a_cache_folder_that_cannot_be_written_costs_a_warning_not_the_reply(
    endpoint, tmp_path, caplog
):
    cache = tmp_path / "_llm_cache"
    cache.write_text("a file where the cache folder should be")
    client = LlmClient(llm_settings(endpoint.url), cache_dir=cache, gate_dir=tmp_path / "g")
    reply = ask_topic(client)
    assert reply.value.stateful and reply.record.outcome == "ok"
    assert client.collector.drain() == [reply.record]
    assert "LLM cache: cannot store" in caplog.text
    assert client.embed("dedupe", ["a text"])  # embeddings too


def test_the_api_key_never_reaches_the_log(endpoint, tmp_path, caplog):
    import logging

    from envmill.tasks.llm.transport import Failure

    caplog.set_level(logging.DEBUG, logger="envmill.tasks.llm")
    key = "sk-live-LOGSECRET-0123456789"
    client = make_client(endpoint.url, tmp_path, api_key=key, max_attempts=2)
    echo = "bad key {api_key}; you sent 'Authorization: Bearer {api_key}'"
    endpoint.add_faults(Fault("status", status=500, count=None, message=echo))
    with pytest.raises(LlmCallError) as failed:
        client.complete("plain", PLAIN)
    assert "LLM attempt 1 failed" in caplog.text and "bad key ***" in caplog.text
    assert key not in caplog.text and key not in str(failed.value)
    # Any bearer token is blotted too, and a Failure made anywhere in the layer is clean.
    assert str(Failure("X", f"Bearer sk-other-token {key}")) == "X: Bearer *** ***"


def clear_proxies(monkeypatch) -> None:
    for scheme in ("http", "https", "all", "no"):
        monkeypatch.delenv(f"{scheme}_proxy", raising=False)
        monkeypatch.delenv(f"{scheme.upper()}_PROXY", raising=False)


def test_a_loopback_endpoint_never_goes_through_a_proxy(endpoint, tmp_path, monkeypatch):
    clear_proxies(monkeypatch)
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, dead_proxy)
    client = make_client(endpoint.url.replace("127.0.0.1", "localhost"), tmp_path)
    assert client.complete("plain", PLAIN).text == "ok: hi"


def test_a_proxy_in_the_way_is_named_in_the_error(tmp_path, monkeypatch):
    clear_proxies(monkeypatch)
    port = free_port()
    monkeypatch.setenv("HTTP_PROXY", f"http://user:pa55word@127.0.0.1:{port}")
    client = make_client("http://llm.invalid/v1", tmp_path)  # never resolved: the proxy is
    with pytest.raises(LlmUnreachableError) as failed:
        client.complete("plain", PLAIN)
    message = str(failed.value)
    assert f"http://llm.invalid/v1 through the proxy http://127.0.0.1:{port} " in message
    assert "pa55word" not in message


def test_a_shipped_client_calls_the_same_endpoint_and_says_where_its_key_comes_from(
    endpoint, tmp_path, monkeypatch
):
    import pickle

    monkeypatch.setenv("OPENAI_BASE_URL", endpoint.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-driver-environment")
    client = LlmClient(LlmSettings(default=TEST_STAGE), cache_dir=tmp_path / "cache")
    data = pickle.dumps(client)
    monkeypatch.delenv("OPENAI_BASE_URL")  # a worker whose environment names no endpoint
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-environment")
    shipped = pickle.loads(data)
    assert shipped.base_url == client.base_url and shipped.gate_name == client.gate_name
    assert shipped.complete("plain", PLAIN).text == "ok: hi"
    assert b"sk-driver-environment" not in data  # an environment key is read on the worker
    assert shipped._api_key == "sk-worker-environment"
    with_key = LlmClient(llm_settings(endpoint.url, api_key="sk-in-the-settings"))
    assert pickle.loads(pickle.dumps(with_key))._api_key == "sk-in-the-settings"


BAD_CHAT_ENTRIES = {
    "usage-array": {"text": "ok: hi", "tool_calls": [], "usage": [1]},
    "text-number": {"text": 5, "tool_calls": []},
    "tool-call-number": {"text": "", "tool_calls": [5]},
    "negative-usage": {"text": "ok: hi", "tool_calls": [], "usage": {"prompt_tokens": -3}},
    "empty": {"text": " ", "tool_calls": []},
}


@pytest.mark.parametrize("name", sorted(BAD_CHAT_ENTRIES))
def test_a_cached_reply_of_the_wrong_shape_is_a_miss(endpoint, tmp_path, name):
    client = make_client(endpoint.url, tmp_path)
    key = client.complete("plain", PLAIN).record.request_hash
    entry = {"format": 1, "key": key, "response": BAD_CHAT_ENTRIES[name]}
    client.cache.path(key).write_text(json.dumps(entry))
    again = client.complete("plain", PLAIN)
    assert again.text == "ok: hi" and not again.record.cache_hit
    assert endpoint.stats()["requests"] == 2
    assert client.complete("plain", PLAIN).record.cache_hit  # rewritten


BAD_VECTORS = {
    "strings": [["x"], ["y"]],
    "flat": [0.5, 0.5],
    "ragged": [[0.1], [0.2, 0.3]],
    "empty-vectors": [[], []],
    "not-finite": "[[NaN], [Infinity]]",
}


@pytest.mark.parametrize("name", sorted(BAD_VECTORS))
def test_cached_vectors_of_the_wrong_shape_are_a_miss(endpoint, tmp_path, name):
    client = make_client(endpoint.url, tmp_path)
    texts = ["book a flight", "cancel a booking"]
    vectors = client.embed("dedupe", texts)
    key = client.collector.drain()[0].request_hash
    bad = BAD_VECTORS[name]
    vectors_json = bad if isinstance(bad, str) else json.dumps(bad)
    client.cache.path(key).write_text(
        f'{{"format": 1, "key": "{key}", "response": {{"vectors": {vectors_json}}}}}'
    )
    assert client.embed("dedupe", texts) == vectors
    assert endpoint.stats()["routes"] == {"/v1/embeddings": 2}


@pytest.mark.parametrize(
    "url", ["127.0.0.1:8000/v1", "ftp://example.com/v1", "http://", "localhost", "http://h:x/v1"]
)
def test_a_base_url_must_be_an_http_url(url, monkeypatch):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"must be an http\(s\) URL|not a URL"):
        LlmSettings(base_url=url)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(LlmConfigError, match="^OPENAI_BASE_URL (must be an http|not a URL)"):
        LlmClient(LlmSettings())


def test_a_bad_base_url_setting_is_one_settings_line(monkeypatch, tmp_path):
    from envmill.schemas.settings import SettingsError, load_settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENVMILL_LLM__BASE_URL", "localhost:8000")
    with pytest.raises(SettingsError, match=r"^setting 'llm.base_url': .*http\(s\) URL"):
        load_settings()


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
@pytest.mark.parametrize("name", ["timeout_seconds", "deadline_seconds", "retry_backoff_seconds"])
def test_time_settings_are_finite(name, value):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        if name == "retry_backoff_seconds":
            LlmSettings(retry_backoff_seconds=value)
        else:
            StageModel(**{name: value})


def test_a_400_about_something_else_is_one_request_and_no_text_mode_fallback(endpoint, tmp_path):
    model = StageModel(model="long-context-model", timeout_seconds=0.5, deadline_seconds=3)
    client = make_client(endpoint.url, tmp_path, default=model)
    message = "This model's maximum context length is 8192 tokens."
    endpoint.add_faults(Fault("status", status=400, message=message))
    with pytest.raises(LlmCallError, match="maximum context length") as failed:
        ask_topic(client)
    assert failed.value.record.attempts == 1 and endpoint.stats()["requests"] == 1
    ask_topic(client, TASKS[1])  # the model was not marked as refusing json_schema
    assert "response_format" in endpoint.requests("topics")[-1]["body"]


def test_the_preflight_tells_a_dead_or_keyless_endpoint_from_one_that_answers(tmp_path):
    """A real HTTP server on 127.0.0.1: one that answers 404 (no model list) is fine, one that
    refuses the key or accepts the connection and never answers is one line each."""
    import http.server
    import threading

    class Reply(http.server.BaseHTTPRequestHandler):
        status = 404

        def do_GET(self):  # noqa: N802 - the http.server API
            if self.status == 0:
                time.sleep(3)
                return
            if self.status == -1:
                self.send_response(200)
                self.send_header("Content-Length", "100")
                self.end_headers()
                for _ in range(20):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.4)
                return
            self.send_response(self.status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "no"}}')

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reply)
    server.handle_error = lambda *args: None  # the client hanging up mid-reply is the point
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        client = make_client(url, tmp_path)
        assert client.unreachable(seconds=1.0) is None
        Reply.status = 401
        assert client.unreachable(seconds=1.0) == (
            f"the LLM endpoint {url} refused the API key (HTTP 401)"
        )
        Reply.status = 403
        assert client.unreachable(seconds=1.0).endswith("refused the API key (HTTP 403)")
        Reply.status = 0
        said = client.unreachable(seconds=0.5)
        assert said.startswith(f"cannot reach the LLM endpoint {url}: ") and "Timeout" in said
        Reply.status = -1  # headers, then a byte at a time: the whole preflight has a deadline
        started = time.monotonic()
        said = client.unreachable(seconds=1.0)
        assert said.startswith(f"cannot reach the LLM endpoint {url}: ")
        assert time.monotonic() - started < 5
    finally:
        server.shutdown()
        server.server_close()
