"""What a multi-turn reference says to a user message with no steps (tasks/rollout/turns.py):
what the next message's steps need that only the next message says, by the parameters' words."""

from __future__ import annotations

from envmill.schemas.scenario import ScenarioSpec, SolutionStep
from envmill.tasks.rollout.turns import missing_needs, missing_reply, parameter_noun

WRITE = {"tool": "write_file", "arguments": {"name": "shopping.txt", "content": "buy milk"}}
WORDS = {"write_file": {"name": "The name of the file to create.", "content": "Text, e.g. hi."}}


def _spec(task: str, turns: list[dict], steps: list[dict] | None = None) -> ScenarioSpec:
    return ScenarioSpec(
        env_id="e1",
        task=task,
        initial_state={"files": {}},
        reference_solution=[WRITE] if steps is None else steps,
        checks=[],
        turns=turns,
    )


def test_what_only_the_next_message_says_is_what_was_missing():
    spec = _spec(
        "Make me a file.", [{"content": "Call it shopping.txt with buy milk.", "first_step": 0}]
    )
    assert missing_needs(spec, 0, [], WORDS) == ["the name of the file to create", "the text"]
    reply = missing_reply(spec, 0, [], WORDS, "seed")
    assert "the name of the file to create and the text" in reply
    assert "shopping.txt" not in reply and "milk" not in reply


def test_a_value_an_earlier_message_said_was_not_missing():
    spec = _spec(
        "Make me a file called shopping.txt.",
        [{"content": "Put buy milk in shopping.txt.", "first_step": 0}],
    )
    assert missing_needs(spec, 0, [], WORDS) == ["the text"]


def test_with_nothing_to_name_the_reply_says_it_cannot_and_replies_vary():
    spec = _spec("Fly me to the moon.", [{"content": "Never mind.", "first_step": 1}])
    assert missing_needs(spec, 1, [], WORDS) == []  # the last message: nothing follows it
    replies = {missing_reply(spec, 1, [], WORDS, seed) for seed in ("a", "b", "c", "d")}
    assert len(replies) > 1 and all("can" in reply for reply in replies)


def test_a_parameter_without_a_description_is_named_by_its_name():
    step = SolutionStep(tool="book", arguments={"room_id": "R1"})
    assert parameter_noun(step, "room_id", {}) == "the room id"
