"""A reply talks to the person who said who they are, and a conditional's confirmation says
what it read first (round 28: "client Chen Design Studio's retainer balance went up", said to
the client; "I'm ready to add Priya Patel's deposit to their retainer", with no amount)."""

from __future__ import annotations

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.rollout.reference import _because, _spoken_answer, to_the_speaker

ANSWER = (
    "Baker & Sons Bakery's retainer balance is $2,915.79, below the $3,000 target, so I added"
    " the difference: client Baker & Sons Bakery's retainer balance went up by $84.21 and is now"
    " $3,000.00."
)


def test_a_reply_to_a_client_who_said_who_they_are_says_your():
    said = to_the_speaker(ANSWER, "Hi. This is Baker & Sons Bakery; we'd like our retainer …")
    assert said.startswith("Your retainer balance is $2,915.79"), said
    assert "difference: your retainer balance went up by $84.21" in said, said
    assert "Baker" not in said, said


def test_a_reply_to_someone_else_is_left_as_it_is():
    assert to_the_speaker(ANSWER, "I'm ready to help a client of ours.") == ANSWER
    assert to_the_speaker(ANSWER, "This is Elena Novak; …") == ANSWER


def _scenario(kind: str) -> ScenarioSpec:
    return ScenarioSpec(
        env_id="e",
        backend="procedural",
        mode="conversational",
        task="I'd like the retainer of a client to be $3,000: …",
        initial_state={},
        reference_solution=[],
        checks=[],
        kind=kind,
        reference_answer=ANSWER,
    )


def test_a_conditionals_confirmation_first_says_what_it_read():
    scenario = _scenario("conditional")
    because = _because(scenario.kind, _spoken_answer(scenario, "I'd like the retainer …"))
    assert because == (
        "Baker & Sons Bakery's retainer balance is $2,915.79, below the $3,000 target. "
    ), because
    assert _because("answer", ANSWER) == ""  # another kind: nothing
    refused = _scenario("refusal")  # a refusal's speaker is not told "your"
    assert _spoken_answer(refused, "This is Baker & Sons Bakery; …") == ANSWER


def test_a_name_after_a_preposition_keeps_its_preposition():
    said = to_the_speaker("I added $5 on Ann Lee's account.", "This is Ann Lee; …")
    assert said == "I added $5 on your account.", said


def test_only_the_speakers_name_becomes_your_and_no_word_before_it_is_lost():
    """From a review: "Right now Mary Young's loan" became "Right your loan"; a name that ends
    a sentence ("This is Priya Patel. Please …") was read on into the next one."""
    said = to_the_speaker(
        "Right now Mary Young's loan LN-4 shows as returned.", "Hi, I'm Mary Young."
    )
    assert said == "Right now your loan LN-4 shows as returned.", said
    said = to_the_speaker("Priya Patel's balance is $5.", "This is Priya Patel. Please check it.")
    assert said == "Your balance is $5.", said
    company = to_the_speaker(
        "Lakeside Corp Inc.'s balance is $5.", "This is Lakeside Corp Inc. — we"
    )
    assert company == "Your balance is $5.", company
