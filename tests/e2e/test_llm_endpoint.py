"""The local OpenAI-compatible endpoint, driven by the bare openai client (no LLM layer)."""

from __future__ import annotations

import base64
import http.client
import json
import math
import struct
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import openai
import pytest
from llm_server import spawn_endpoint

from envmill.schemas.topics import TopicVerdict
from envmill.tasks.llm import STAGE_HEADER, render
from envmill.tasks.llm.structured import ReplyError, parse_reply, response_format_for
from envmill.tasks.offline_llm import Fault, example_value, register, serve_endpoint
from envmill.tasks.offline_llm.topics import REQUEST_OBJECTS, REQUEST_VERBS

PEOPLE = ["for Alice", "for Bob", "for me", "for my manager"]
PLAIN_MESSAGE = {"role": "user", "content": "hello"}


@pytest.fixture
def endpoint():
    with serve_endpoint() as served:
        yield served


def bare_client(url: str, stage: str = "plain", **options) -> openai.OpenAI:
    """The openai client alone, its requests of ``stage`` (the header envmill's client sets)."""
    return openai.OpenAI(
        base_url=url,
        api_key="sk-local",
        max_retries=0,
        timeout=5.0,
        default_headers={STAGE_HEADER: stage},
        **options,
    )


def topics_request(client: openai.OpenAI, task: str, **kwargs):
    prompt = render("topics", corpus="API-Bank", task=task, tools=[])
    return client.chat.completions.create(
        model="m", messages=prompt.messages, extra_headers={STAGE_HEADER: "topics"}, **kwargs
    )


def test_models_and_stats(endpoint):
    client = bare_client(endpoint.url)
    assert [model.id for model in client.models.list()] == ["envmill-fake"]
    topics_request(client, "Book a flight")
    stats = endpoint.stats()
    assert stats["routes"] == {"/v1/chat/completions": 1} and stats["stages"] == {"topics": 1}
    assert stats["peak_in_flight"] == 1 and stats["in_flight"] == 0


def test_topics_answers_100_distinct_tasks_with_100_distinct_topics(endpoint):
    tasks = [f"{v} {o} {p}" for v in REQUEST_VERBS for o in REQUEST_OBJECTS for p in PEOPLE][:150]
    client = bare_client(endpoint.url)
    with ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(lambda task: topics_request(client, task), tasks))
    verdicts = [parse_reply(reply.choices[0].message.content, TopicVerdict) for reply in replies]
    assert len({verdict.topic for verdict in verdicts}) >= 100
    assert all(verdict.stateful for verdict in verdicts)
    by_task = dict(zip(tasks, verdicts, strict=True))
    assert "airline" in by_task["Book a flight to Rome for Alice"].topic
    assert "library" in by_task["Cancel the library loan for Dune for me"].topic
    weather = topics_request(client, "What is the weather in Berlin today?")
    assert not parse_reply(weather.choices[0].message.content, TopicVerdict).stateful
    usage = replies[0].usage
    assert usage.prompt_tokens > 100 and usage.completion_tokens > 10


def test_response_format_is_honoured_or_refused(endpoint):
    client = bare_client(endpoint.url)
    response_format = response_format_for(TopicVerdict)
    reply = topics_request(client, "Book a flight", response_format=response_format)
    assert parse_reply(reply.choices[0].message.content, TopicVerdict).stateful
    endpoint.configure(refuse_response_format=True)
    with pytest.raises(openai.BadRequestError, match="response_format"):
        topics_request(client, "Book a flight", response_format=response_format)
    assert topics_request(client, "Book a flight").choices[0].message.content


def test_tools_get_tool_calls(endpoint):
    client = bare_client(endpoint.url)
    parameters = {
        "type": "object",
        "properties": {"flight_id": {"type": "string"}, "seats": {"type": "integer", "minimum": 1}},
        "required": ["flight_id", "seats"],
    }
    tools = [{"type": "function", "function": {"name": "book_flight", "parameters": parameters}}]
    messages = [{"role": "user", "content": "book me on FL100"}]
    reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "book_flight" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"flight_id": "example", "seats": 1}
    tool_turn = {"role": "tool", "tool_call_id": call.id, "content": '{"success": true}'}
    assistant = choice.message.model_dump(exclude_none=True)
    final = client.chat.completions.create(
        model="m", messages=[*messages, assistant, tool_turn], tools=tools
    )
    assert final.choices[0].finish_reason == "stop"


def test_generic_answers_fit_the_schema():
    # the JSON Schema only: TopicVerdict's three-sentence rule is a validator no schema states
    schema = TopicVerdict.model_json_schema()
    jsonschema.validate(example_value(schema), schema)


def test_faults_hit_the_first_requests_of_their_stage_only(endpoint):
    client = bare_client(endpoint.url)
    endpoint.add_faults(Fault("status", stage="topics", status=503, count=2))
    plain = [{"role": "user", "content": "hello"}]
    assert client.chat.completions.create(model="m", messages=plain).choices[0].message.content
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            topics_request(client, "Book a flight")
    assert topics_request(client, "Book a flight").choices[0].message.content
    assert endpoint.stats()["faults"] == {"status": 2}


def test_a_probability_fault_is_reproducible(endpoint):
    def pattern() -> list[bool]:
        endpoint.reset()
        endpoint.add_faults(Fault("status", status=500, probability=0.5, seed=7, count=None))
        client = bare_client(endpoint.url)
        outcomes = []
        for i in range(30):
            try:
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"n{i}"}]
                )
                outcomes.append(True)
            except openai.InternalServerError:
                outcomes.append(False)
        return outcomes

    first = pattern()
    assert 5 < sum(first) < 25 and pattern() == first


def test_rate_limit_sends_retry_after(endpoint):
    endpoint.add_faults(Fault("status", status=429, retry_after=1.5))
    with pytest.raises(openai.RateLimitError) as limited:
        topics_request(bare_client(endpoint.url), "Book a flight")
    assert limited.value.response.headers["retry-after"] == "1.5"


@pytest.mark.parametrize("kind", ["truncated", "prose", "think", "wrong_schema", "empty"])
def test_content_faults_spoil_the_answer(endpoint, kind):
    endpoint.add_faults(Fault(kind))
    content = topics_request(bare_client(endpoint.url), "Book a flight").choices[0].message.content
    if kind in ("prose", "think"):
        assert not content.startswith("{") and parse_reply(content, TopicVerdict)
        assert content.startswith("<think>") == (kind == "think")
    else:
        with pytest.raises(ReplyError):
            parse_reply(content, TopicVerdict)
    assert (content == "") == (kind == "empty")


def test_hang_and_drop_look_like_a_dead_server_to_the_client(endpoint):
    client = bare_client(endpoint.url)
    endpoint.add_faults(Fault("hang", seconds=30), Fault("drop"))
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        topics_request(client, "Book a flight", timeout=0.3)
    assert time.monotonic() - start < 1.0
    with pytest.raises(openai.APIConnectionError):
        topics_request(client, "Book a flight")
    assert topics_request(client, "Book a flight").choices[0].message.content


def test_a_hanging_request_does_not_hold_up_closing():
    with serve_endpoint() as served:
        served.add_faults(Fault("hang", seconds=60))
        with pytest.raises(openai.APITimeoutError):
            topics_request(bare_client(served.url), "Book a flight", timeout=0.2)
        start = time.monotonic()
    assert time.monotonic() - start < 1.0


def test_latency_and_peak_concurrency():
    with serve_endpoint(latency=(0.15, 0.25), seed=3) as served:
        client = bare_client(served.url)
        topics_request(client, "warm-up")  # the client's first request pays for lazy imports
        served.reset()
        start = time.monotonic()
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda i: topics_request(client, f"task {i}"), range(6)))
        elapsed = time.monotonic() - start
        stats = served.stats()
    assert 0.15 <= elapsed < 0.6 and stats["peak_in_flight"] == 6


def test_embeddings_are_normalised_deterministic_and_similar_for_similar_texts(endpoint):
    client = bare_client(endpoint.url)
    texts = ["cancel a flight booking", "cancel the flight booking", "pay a library fine"]
    vectors = [item.embedding for item in client.embeddings.create(model="e", input=texts).data]
    assert all(math.isclose(sum(v * v for v in vector), 1.0) for vector in vectors)
    again = client.embeddings.create(model="e", input=texts[0], dimensions=64).data[0].embedding
    assert again == vectors[0]

    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(vectors[0], vectors[1]) > 0.7 > cosine(vectors[0], vectors[2])
    raw = client.embeddings.with_raw_response.create(
        model="e", input="x y", encoding_format="base64", dimensions=16
    )
    packed = base64.b64decode(json.loads(raw.text)["data"][0]["embedding"])
    assert len(struct.unpack("<16f", packed)) == 16


def test_the_endpoint_serves_from_its_own_process_and_is_steerable():
    with spawn_endpoint("--latency", "0.01") as served:
        client = bare_client(served.url)
        served.add_faults(Fault("status", status=500))
        with pytest.raises(openai.InternalServerError):
            topics_request(client, "Book a flight")
        assert topics_request(client, "Book a flight").choices[0].message.content
        assert served.stats()["faults"] == {"status": 1}
        assert len(served.requests("topics")) == 2
        served.reset()
        assert served.stats()["requests"] == 0


def test_admin_routes_reject_bad_input(endpoint):
    with pytest.raises(urllib.error.HTTPError, match="400"):
        endpoint._call("/_faults", [{"kind": "explode"}])
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("explode")  # type: ignore[arg-type]
    with pytest.raises(urllib.error.HTTPError, match="400"):
        endpoint.configure(no_such_setting=1)
    assert endpoint.stats()["requests"] == 0


def post_raw(endpoint, path: str, data: bytes, length: str | None = None) -> tuple[int, dict]:
    """POST ``data`` with http.client (no openai in between); the status and JSON answer."""
    host, port = endpoint.url.removeprefix("http://").removesuffix("/v1").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=3)
    try:
        connection.putrequest("POST", path)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(data)) if length is None else length)
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


CHAT, EMBEDDINGS = "/v1/chat/completions", "/v1/embeddings"
BAD_BODIES = {
    "chat-array": (CHAT, [1, 2]),
    "chat-string": (CHAT, "hi"),
    "messages-string": (CHAT, {"model": "m", "messages": "x"}),
    "messages-of-numbers": (CHAT, {"model": "m", "messages": [1]}),
    "message-without-role": (CHAT, {"messages": [{"content": "hi"}]}),
    "content-number": (CHAT, {"messages": [{"role": "user", "content": 5}]}),
    "tools-string": (CHAT, {"messages": [{"role": "user", "content": "x"}], "tools": "t"}),
    "format-string": (CHAT, {"messages": [{"role": "user"}], "response_format": "json"}),
    "embeddings-number": (EMBEDDINGS, {"model": "e", "input": 5}),
    "embeddings-list-of-numbers": (EMBEDDINGS, {"model": "e", "input": [1, 2]}),
    "embeddings-dimensions": (EMBEDDINGS, {"model": "e", "input": "x", "dimensions": "abc"}),
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_a_body_of_the_wrong_structure_gets_a_400(endpoint, name):
    path, body = BAD_BODIES[name]
    status, answer = post_raw(endpoint, path, json.dumps(body).encode())
    assert status == 400 and answer["error"]["type"] == "invalid_request_error"
    assert answer["error"]["message"]
    assert topics_request(bare_client(endpoint.url), "Book a flight").choices[0].message.content


@pytest.mark.parametrize("length", ["-1", "abc", str(10**12)])
def test_a_bad_content_length_gets_a_400_at_once(endpoint, length):
    start = time.monotonic()
    status, answer = post_raw(endpoint, CHAT, b"{}", length=length)
    assert status == 400 and "Content-Length" in answer["error"]["message"]
    assert time.monotonic() - start < 1.0


BAD_ADMIN_INPUT = {
    "count-text": ("/_faults", [{"kind": "status", "count": "x"}]),
    "seconds-text": ("/_faults", [{"kind": "hang", "seconds": "abc"}]),
    "status-out-of-range": ("/_faults", [{"kind": "status", "status": 99}]),
    "probability-above-1": ("/_faults", [{"kind": "drop", "probability": 2}]),
    "fault-not-an-object": ("/_faults", [5]),
    "faults-not-an-array": ("/_faults", {"kind": "drop"}),
    "latency-text": ("/_config", {"latency": "abc"}),
    "latency-reversed": ("/_config", {"latency": [0.3, 0.1]}),
    "dimensions-zero": ("/_config", {"embedding_dimensions": 0}),
    "refuse-text": ("/_config", {"refuse_response_format": "yes"}),
    "config-not-an-object": ("/_config", [1]),
}


@pytest.mark.parametrize("name", sorted(BAD_ADMIN_INPUT))
def test_bad_admin_input_is_refused_and_breaks_nothing(endpoint, name):
    route, payload = BAD_ADMIN_INPUT[name]
    with pytest.raises(urllib.error.HTTPError) as refused:
        endpoint._call(route, payload)
    assert refused.value.code == 400
    client = bare_client(endpoint.url)
    assert topics_request(client, "Book a flight").choices[0].message.content
    assert client.embeddings.create(model="e", input="x").data[0].embedding
    assert endpoint.stats()["faults"] == {}


def test_a_bug_in_the_endpoint_is_a_500_not_a_dropped_connection(endpoint):
    from envmill.tasks.offline_llm import responders

    def broken(request):
        raise ZeroDivisionError("a responder bug")

    register("test-broken", broken)
    try:
        messages = [{"role": "system", "content": "anything"}]
        client = bare_client(endpoint.url, stage="test-broken")
        with pytest.raises(openai.InternalServerError, match="ZeroDivisionError: a responder bug"):
            client.chat.completions.create(model="m", messages=messages)
    finally:
        responders._RESPONDERS.pop("test-broken")


def test_raw_and_trickle_faults(endpoint):
    client = bare_client(endpoint.url)
    endpoint.add_faults(Fault("raw", status=200, body={"anything": ["at", "all"]}))
    raw = client.chat.completions.with_raw_response.create(model="m", messages=[PLAIN_MESSAGE])
    assert json.loads(raw.text) == {"anything": ["at", "all"]}
    endpoint.add_faults(Fault("trickle", seconds=0.001))
    start = time.monotonic()
    reply = topics_request(client, "Book a flight")
    assert parse_reply(reply.choices[0].message.content, TopicVerdict).stateful
    assert time.monotonic() - start > 0.3  # hundreds of bytes, one at a time
