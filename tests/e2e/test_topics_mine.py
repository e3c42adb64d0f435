"""Topic mining through the real LLM client against the local endpoint (DESIGN §8)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from llm_server import make_client

from envmill.schemas.topics import (
    TOPIC_STATUSES,
    TopicMiningConfig,
    TopicRecord,
    TopicVerdict,
    count_sentences,
)
from envmill.tasks.backends.llm.topics.mine import mine_topics, mining_key
from envmill.tasks.backends.llm.topics.select import (
    EMBEDDING_STAGE,
    LEXICAL,
    name_key,
    topic_vectors,
)
from envmill.tasks.backends.llm.topics.sources import CorpusError
from envmill.tasks.llm import summarize
from envmill.tasks.offline_llm import ChatReply, Fault, register, respond_topics, serve_endpoint
from envmill.warehouse.rows import write_topics
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import corpus_stats, query
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpora" / "api_bank_mining.json"
SCREENED = {"non_english", "multimodal", "url_bound"}
JUDGED = 6  # the fixture's distinct requests that pass the screen
OPTIONS = TopicMiningConfig()


@pytest.fixture
def endpoint():
    with serve_endpoint() as served:
        yield served


@pytest.fixture
def canned():
    """The ``topics`` responder answers from a table {task: (topic, usefulness, modelability)}."""
    table: dict[str, tuple[str, int, int]] = {}

    def respond(request):
        task = request.texts("user")[0].split("\n")[1]
        topic, usefulness, modelability = table[task]
        verdict = {
            "stateful": True,
            "domain_specific": True,
            "reason": "It keeps records.",
            "topic": topic,
            "introduction": f"The {topic} system keeps records. Agents change them. Rules apply.",
            "usefulness": usefulness,
            "modelability": modelability,
        }
        return ChatReply(content=json.dumps(verdict))

    register("topics", respond)
    try:
        yield table
    finally:
        register("topics", respond_topics)


def topic_list(tmp_path: Path, table: dict, rows: dict[str, tuple[str, int, int]]) -> Path:
    table.update(rows)
    path = tmp_path / "topics.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


def mine(endpoint, folder: Path, paths, options=OPTIONS, **settings) -> list[TopicRecord]:
    client = make_client(endpoint.url, folder, **settings)
    return mine_topics(paths, client, options)


def by_status(records: list[TopicRecord]) -> Counter[str]:
    return Counter(r.status for r in records)


def test_every_candidate_ends_with_one_status_and_the_screen_spends_nothing(endpoint, tmp_path):
    records = mine(endpoint, tmp_path, [CORPUS])
    assert len(records) == len({r.candidate_id for r in records}) == JUDGED + len(SCREENED)
    assert all(r.status in TOPIC_STATUSES for r in records)
    screened = {r.reason_code for r in records if r.status == "screened_out"}
    assert screened == SCREENED
    assert endpoint.stats()["stages"] == {"topics": JUDGED, "embeddings": 1}
    asked = {json.dumps(r["body"]["messages"]) for r in endpoint.requests("topics")}
    assert not any("attached photo" in body or "https://" in body for body in asked)
    rejected = {r.text: r.reason_code for r in records if r.status == "rejected"}
    assert rejected == {
        "What is the weather in Berlin today?": "not_stateful",
        "Translate 'good morning' into Spanish for me.": "not_stateful",
    }
    selected = [r for r in records if r.status == "selected"]
    assert len(selected) == 4 and sorted(r.selection_rank for r in selected) == [0, 1, 2, 3]
    for record in selected:
        assert count_sentences(record.introduction) == 3 and record.prompt_hash
        assert record.reason_code is None and record.usefulness and record.modelability
    assert next(r for r in records if "flight" in r.text).tools == ("BookFlight",)


def test_a_rerun_makes_no_requests_and_gives_the_same_verdicts(endpoint, tmp_path):
    first = mine(endpoint, tmp_path, [CORPUS])
    endpoint.reset()
    client = make_client(endpoint.url, tmp_path)
    again = mine_topics([CORPUS], client, OPTIONS)
    assert endpoint.stats()["requests"] == 0
    assert [(r.status, r.topic) for r in again] == [(r.status, r.topic) for r in first]
    calls = client.collector.drain()
    assert len(calls) == JUDGED + 1 and all(c.cache_hit and c.cost_usd == 0 for c in calls)


def test_server_errors_are_retried(endpoint, tmp_path):
    endpoint.add_faults(Fault("status", stage="topics", status=503, count=3))
    records = mine(endpoint, tmp_path, [CORPUS])
    assert "failed" not in by_status(records)
    assert endpoint.stats()["stages"]["topics"] == JUDGED + 3


def test_failed_calls_are_failed_records_and_a_rerun_finishes_only_them(endpoint, tmp_path):
    endpoint.add_faults(Fault("status", stage="topics", status=500, count=None))
    records = mine(endpoint, tmp_path, [CORPUS], max_attempts=2)
    failed = [r for r in records if r.status == "failed"]
    assert len(failed) == JUDGED and by_status(records)["screened_out"] == len(SCREENED)
    assert {r.reason_code for r in failed} == {"llm_error"}
    assert all("HTTP 500" in r.message and r.topic is None for r in failed)
    endpoint.reset()
    records = mine(endpoint, tmp_path, [CORPUS])
    assert "failed" not in by_status(records)
    assert endpoint.stats()["stages"]["topics"] == JUDGED


def test_a_wrong_schema_is_repaired_once_and_fails_when_it_persists(endpoint, tmp_path):
    endpoint.add_faults(Fault("wrong_schema", stage="topics", count=1))
    assert "failed" not in by_status(mine(endpoint, tmp_path / "a", [CORPUS]))
    endpoint.add_faults(Fault("wrong_schema", stage="topics", count=None))
    records = mine(endpoint, tmp_path / "b", [CORPUS])
    failed = [r for r in records if r.status == "failed"]
    assert len(failed) == JUDGED and {r.reason_code for r in failed} == {"unusable_reply"}
    assert "does not match the schema" in failed[0].message


def test_an_introduction_of_two_sentences_gets_a_repair_turn(endpoint, tmp_path, canned):
    """(``canned`` only restores the responder afterwards.)"""
    short = {
        "stateful": True,
        "domain_specific": True,
        "reason": "It keeps records.",
        "topic": "clinic booking",
        "introduction": "A clinic. It books visits.",
        "usefulness": 4,
        "modelability": 4,
    }
    register("topics", lambda request: _once(request, short))
    path = tmp_path / "one.txt"
    path.write_text("clinic booking\n")
    (record,) = mine(endpoint, tmp_path, [path])
    assert record.status == "selected" and count_sentences(record.introduction) == 3
    assert endpoint.stats()["stages"]["topics"] == 2


def _once(request, short: dict) -> ChatReply:
    """Two sentences first; the repair turn (a second user message) gets three."""
    if len(request.texts("user")) == 1:
        return ChatReply(content=json.dumps(short))
    return ChatReply(content=json.dumps(short | {"introduction": "A clinic. It books. It bills."}))


def test_thresholds_reject_with_the_first_reason(endpoint, tmp_path, canned):
    path = topic_list(
        tmp_path,
        canned,
        {"hotel rooms": ("hotel rooms", 2, 5), "tax filing": ("tax filing", 4, 2)},
    )
    options = TopicMiningConfig(min_usefulness=3, min_modelability=3)
    records = {r.text: r for r in mine(endpoint, tmp_path, [path], options)}
    assert records["hotel rooms"].reason_code == "low_usefulness"
    assert records["tax filing"].reason_code == "low_modelability"
    assert records["tax filing"].message == "modelability 2 < 3"


DUPLICATES = {
    "Book a clinic visit": ("clinic appointment booking", 5, 5),
    "Schedule a doctor visit": ("Clinic Appointment Bookings!", 4, 4),
    "Move my clinic visit": ("clinic appointment booking desk", 4, 5),
    "Transfer stock between warehouses": ("warehouse stock transfers", 4, 4),
}


@pytest.mark.parametrize("embeddings", ["endpoint", "lexical"])
def test_duplicates_by_name_then_by_similarity(endpoint, tmp_path, canned, embeddings):
    path = topic_list(tmp_path, canned, DUPLICATES)
    if embeddings == "lexical":  # an endpoint without embeddings
        endpoint.add_faults(Fault("status", stage="embeddings", status=404, count=None))
    options = OPTIONS  # the default thresholds: 0.9 over embeddings, 0.8 over 3-grams
    client = make_client(endpoint.url, tmp_path)
    records = {r.text: r for r in mine_topics([path], client, options)}
    best = records["Book a clinic visit"]
    assert best.status == "selected"
    same = records["Schedule a doctor visit"]
    assert (same.status, same.reason_code, same.duplicate_of) == (
        "duplicate",
        "same_name",
        best.candidate_id,
    )
    similar = records["Move my clinic visit"]
    assert (similar.status, similar.reason_code, similar.duplicate_of) == (
        "duplicate",
        f"similar_{embeddings}",
        best.candidate_id,
    )
    assert records["Transfer stock between warehouses"].status == "selected"
    (embed,) = [c for c in client.collector.drain() if c.stage == EMBEDDING_STAGE]
    assert embed.outcome == "ok"
    assert embed.error_class == ("" if embeddings == "endpoint" else "fallback")


def test_an_endpoint_without_embeddings_is_a_fallback_not_a_failed_call(endpoint, tmp_path):
    """A 404 on /embeddings is what many local servers answer: the names are compared by
    3-grams instead, and the call's row says so without counting as a failed call. A route
    that is there but fails stays a failed call (and falls back all the same)."""
    names = ["clinic appointment booking", "public library lending"]
    client = make_client(endpoint.url, tmp_path)
    endpoint.add_faults(Fault("status", stage="embeddings", status=404, count=1))
    assert topic_vectors(client, names)[1] == "lexical"
    endpoint.add_faults(Fault("status", stage="embeddings", status=500, count=None))
    assert topic_vectors(client, names)[1] == "lexical"
    missing, broken = client.collector.drain()
    assert (missing.stage, missing.outcome, missing.error_class) == (
        EMBEDDING_STAGE,
        "ok",
        "fallback",
    )
    assert missing.error.startswith("HTTP 404") and missing.error.endswith(
        f"fell back to {LEXICAL}"
    )
    assert (broken.outcome, broken.error_class) == ("failed", "InternalServerError")
    assert summarize([missing, broken])["failed"] == 1


DIVERSE = {
    "hotel room booking": ("hotel room booking", 5, 5),
    "hotel room booking desk": ("hotel room booking desk", 5, 4),
    "hotel room booking office": ("hotel room booking office", 4, 5),
    "bank account transfers": ("bank account transfers", 4, 4),
    "bank account transfer desk": ("bank account transfer desk", 4, 4),
    "library book loans": ("library book loans", 3, 4),
}


def test_select_picks_a_diverse_subset_of_the_requested_size(endpoint, tmp_path, canned):
    path = topic_list(tmp_path, canned, DIVERSE)
    options = TopicMiningConfig(select=3, embedding_similarity=1.0)
    records = mine(endpoint, tmp_path, [path], options)
    selected = sorted(
        (r for r in records if r.status == "selected"), key=lambda r: r.selection_rank
    )
    assert [r.topic.split()[0] for r in selected] == ["hotel", "library", "bank"]
    assert by_status(records) == {"selected": 3, "accepted": 3}
    assert all(r.selection_rank >= 3 for r in records if r.status == "accepted")


def test_candidates_repeated_across_files_are_judged_once(endpoint, tmp_path):
    copy = tmp_path / "copy.json"
    copy.write_text(CORPUS.read_text())
    records = mine(endpoint, tmp_path, [CORPUS, copy])
    assert len(records) == JUDGED + len(SCREENED) and {r.source for r in records} == {CORPUS.name}
    assert endpoint.stats()["stages"]["topics"] == JUDGED


def test_a_bad_file_is_one_line_naming_it_and_nothing_is_asked(endpoint, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("[1, 2")
    with pytest.raises(CorpusError, match=r"^broken\.json: invalid JSON"):
        mine(endpoint, tmp_path, [CORPUS, bad])
    with pytest.raises(CorpusError, match=r"^missing\.json: cannot read"):
        mining_key([tmp_path / "missing.json"], OPTIONS)
    assert endpoint.stats()["requests"] == 0


def test_the_mining_key_follows_inputs_and_options_not_workers(tmp_path):
    key = mining_key([CORPUS], OPTIONS)
    assert key == mining_key([CORPUS], TopicMiningConfig(workers=2))
    assert key != mining_key([CORPUS], TopicMiningConfig(select=2))


def test_records_become_a_table_that_a_rerun_replaces(endpoint, tmp_path):
    records = mine(endpoint, tmp_path, [CORPUS])
    warehouse = Warehouse(tmp_path / "data")
    key = mining_key([CORPUS], OPTIONS)
    for run_id in ("topics-a", "topics-b"):
        write_topics(warehouse, records, [], key=key, run_id=run_id)
    assert len(list((warehouse.root / "topics").glob("*.parquet"))) == 1
    rows = query(warehouse.root, "SELECT * FROM topics").to_pylist()
    assert len(rows) == len(records)
    stats = {
        (r["status"], r["reason"]): r["candidates"]
        for r in corpus_stats(warehouse.root)["topics"].to_pylist()
    }
    assert stats[("screened_out", "url_bound")] == 1 and stats[("rejected", "not_stateful")] == 2


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("The clinic books visits. Staff confirm them. Rules apply.", 3),
        ("It keeps e.g. Dr. Lee's patients. Fees are 3.5 dollars! Is it open?", 3),
        ("One. Two", 2),
        ("no full stop at all", 1),
    ],
)
def test_sentences_are_counted_past_abbreviations_and_decimals(text, sentences):
    assert count_sentences(text) == sentences


def test_a_verdict_needs_a_three_sentence_introduction():
    verdict = {
        "stateful": True,
        "domain_specific": True,
        "reason": "r",
        "topic": "t",
        "introduction": "Only one sentence.",
        "usefulness": 3,
        "modelability": 3,
    }
    with pytest.raises(ValueError, match="exactly 3 sentences, got 1"):
        TopicVerdict.model_validate(verdict)


def test_names_compare_without_case_punctuation_or_plural():
    assert name_key("Clinic  Appointments!") == name_key("clinic appointment")
    assert name_key("glass") == "glass" and name_key("bus") == "bus"


def test_the_planner_gets_what_mining_knew_of_a_selected_topic(endpoint, tmp_path, sandbox):
    """A run over the folder's selected topics shows the planner each topic's mined
    introduction and the request it came from, not the topic name alone."""
    from envmill.flows.preflight import selected_topics, with_topic_sources
    from envmill.schemas.settings import EnvmillSettings
    from envmill.tasks.backends import make_backend
    from envmill.tasks.backends.llm.backend import LlmBackend

    records = mine(endpoint, tmp_path, [CORPUS])
    warehouse = Warehouse(tmp_path / "data")
    write_topics(warehouse, records, [], key=mining_key([CORPUS], OPTIONS), run_id="topics-a")
    root = warehouse.root
    chosen = selected_topics(root)
    llm = {"base_url": endpoint.url, "api_key": "test", "cache": False}
    settings = with_topic_sources(EnvmillSettings(backend="llm", topics=chosen, llm=llm), root)
    record = next(r for r in records if r.status == "selected" and r.topic == chosen[0])
    source = settings.topic_sources[chosen[0]]
    assert (source.introduction, source.request) == (record.introduction, record.text)
    assert set(settings.topic_sources) == set(chosen)
    assert make_backend(settings).sources == settings.topic_sources  # what the registry hands on
    backend = LlmBackend(
        make_client(endpoint.url, tmp_path), chosen, sources=settings.topic_sources
    )
    item = backend.plan_items(settings)[0]
    endpoint.reset()
    try:
        backend.make_environment(item, sandbox)
    except Exception:  # only the planner's prompt matters here
        pass
    (plan,) = endpoint.requests("skeleton_plan")
    shown = plan["body"]["messages"][-1]["content"]
    assert record.introduction in shown and record.text in shown
    unmined = EnvmillSettings(backend="llm", topics=["unmined"])
    assert with_topic_sources(unmined, warehouse.root).topic_sources == {}
