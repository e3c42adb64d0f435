"""Topic mining's readers and screen, on small corpora in each supported format."""

from __future__ import annotations

import json

import pytest

from envmill.schemas.topics import TopicCandidate
from envmill.tasks.backends.llm.topics.screen import screen
from envmill.tasks.backends.llm.topics.sources import CorpusError, read_candidates, read_corpus
from tests.conftest import FIXTURES

CORPORA = FIXTURES / "corpora"


def test_api_bank_requests_are_deduped_with_their_tools():
    found = read_candidates(CORPORA / "api_bank.json")
    texts = [c.text for c in found]
    assert texts == [
        "Schedule a blood donation appointment for tomorrow.",
        "Find a clinical trial for a patient with stage 2 breast cancer.",  # no TIME: on its line
        "帮我预订明天的酒店房间。",
    ]
    assert found[0].tools == ("BloodDonationScheduler",)  # from its repeat; not ToolSearcher
    assert {c.format for c in found} == {"api-bank"} and found[0].source == "api_bank.json"


def test_api_bank_tools_come_from_the_dialogue(tmp_path):
    record = json.loads((CORPORA / "api_bank.json").read_text())[1]
    path = tmp_path / "one.json"
    path.write_text(json.dumps([record]))
    (candidate,) = read_candidates(path)
    assert candidate.tools == ("BloodDonationScheduler",)


def test_toolace_takes_the_first_user_turn_and_the_system_tools():
    found = read_candidates(CORPORA / "toolace.jsonl")
    assert [c.text[:28] for c in found] == [
        "Please place an order for tw",
        "Look at the attached photo o",
    ]
    assert found[0].tools == ("CreateOrder", "GetOrder") and found[0].format == "toolace"


def test_topic_lists_skip_comments_and_blank_lines_and_dedupe_by_normalized_text():
    found = read_candidates(CORPORA / "topics.txt")
    assert [c.text for c in found] == ["clinic appointment booking", "warehouse stock transfers"]


def test_topic_jsonl(tmp_path):
    path = tmp_path / "topics.jsonl"
    path.write_text('{"topic": "library loans"}\n{"text": "hotel housekeeping"}\n')
    assert [c.text for c in read_candidates(path)] == ["library loans", "hotel housekeeping"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[1, 2", "invalid JSON"),
        ('[{"neither": 1}]', "not API-Bank"),
        ('{"a": 1}\n{"b": ', "invalid JSON Lines"),
    ],
)
def test_unreadable_corpora_are_one_line_errors(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CorpusError, match=problem) as caught:
        read_candidates(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("bad.json:")


@pytest.mark.parametrize(
    ("lines", "topics", "skipped"),
    [
        (  # one odd line does not turn a JSON Lines file into a plain list of its raw lines
            ['{"topic": "library loans"}', '["a", "list"]', '{"topic": 42}', '{"topic": " "}'],
            ["library loans"],
            {"no 'topic' text": 3},
        ),
        (
            ['{"conversations": 5}', '{"conversations": {"from": "user"}}', '{"x": 1}'],
            [],
            {"no 'conversations' list of turns": 3},
        ),
        (
            ['{"input": "User: book a room TIME: now"}', '{"input": 7}', '{"input": "hi"}'],
            ["book a room"],
            {"no 'input' text": 1, "no 'User: ' request": 1},
        ),
    ],
)
def test_records_of_the_wrong_shape_are_skipped_and_counted(tmp_path, lines, topics, skipped):
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    corpus = read_corpus(path)
    assert [c.text for c in corpus.candidates] == topics
    assert dict(corpus.skipped) == skipped


def test_missing_or_binary_file_is_a_corpus_error(tmp_path):
    with pytest.raises(CorpusError, match="cannot read"):
        read_candidates(tmp_path / "nope.json")
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CorpusError, match="cannot read"):
        read_candidates(binary)


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("Book a table for two at an Italian restaurant tonight.", None),
        ("Reserve a room at the Hôtel Château for Friday.", None),  # accents are still Latin
        ("帮我预订明天的酒店房间。", "non_english"),
        ("Забронируй столик на вечер", "non_english"),
        ("Look at this photo of my receipt and file a claim.", "multimodal"),
        ("Transcribe the attached recording into my notes.", "multimodal"),
        ("Schedule a video consultation with Dr. Lee for Monday.", None),  # an appointment
        ("Upload the video of the conference to my drive.", "multimodal"),
        ("Summarize https://example.org/report for me.", "url_bound"),
        ("Check the price of shoes on shoes.com today.", "url_bound"),
        ("12345", "non_english"),
    ],
)
def test_screen_drops_what_a_text_only_environment_cannot_serve(text, verdict):
    assert screen(TopicCandidate(source="t", format="topics", text=text)) == verdict


def test_the_reference_sample_format_reads(tmp_path):
    # a record shaped exactly like API-Bank level-3 data, with API descriptions before the request
    record = {
        "instruction": "\nGenerate an API request ...\n",
        "input": '{"apiCode": "ToolSearcher", "description": "Searches."}\n'
        "User: Find a cardiologist in Los Angeles for a check-up appointment."
        "TIME: 2034-04-15 10:00:00\nGenerate API Request: ",
        "output": "API-Request: [ToolSearcher(keywords='cardiologist')]",
    }
    path = tmp_path / "lv3.json"
    path.write_text(json.dumps([record, record], indent=1))
    (candidate,) = read_candidates(path)
    assert candidate.text == "Find a cardiologist in Los Angeles for a check-up appointment."
