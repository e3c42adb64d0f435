"""The judge of answers (DESIGN §3.3): a reply holds when it asserts the expected value in any
common form and nothing competing. Each quoted case of issue 31's review is here."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from envmill.schemas.answers import ExpectedAnswer
from envmill.tasks.judge.answers import judge_answer
from envmill.tasks.judge.setting import setting_of

STATE = {
    "current_time": "2025-09-16T09:00:00",
    "sessions": {
        "PS-1": {"plate": "KX-1234", "status": "ended", "start": "2025-09-15T19:00:00"},
        "PS-2": {"plate": "KX-1234", "status": "ended", "start": "2025-09-16T08:00:00"},
    },
    "posts": {"P-9": {"title": "Closing hours", "posted_at": "2025-09-14T19:00:00"}},
    "staff": {"E-2": {"name": "Ana Ruiz", "work_mode": "remote", "graduated": False}},
    "reservations": {"R-7": {"status": "booked", "address": "12 Main Street, Springfield 40211"}},
}
SETTING = setting_of("How many parking sessions does plate KX-1234 have?", STATE)
COUNT = ExpectedAnswer(type="count", value=2, rivals=[1, 3])
POSTED = ExpectedAnswer(type="datetime", value="2025-09-14T19:00:00")
REMOTE = ExpectedAnswer(type="enum", value="remote", rivals=["onsite", "hybrid"])
GRADUATED = ExpectedAnswer(type="boolean", value=False, phrase="graduated")
BOOKED = ExpectedAnswer(type="enum", value="booked", rivals=["checked_in"])


@pytest.mark.parametrize(
    ("expected", "reply"),
    [
        (COUNT, "two parking sessions"),
        (COUNT, "Plate KX-1234 has 2 sessions."),
        (COUNT, "2 sessions, not 3."),
        (COUNT, "There are 2 sessions:\n1. PS-1\n2. PS-2"),
        (COUNT, "Two sessions: the first one ended yesterday."),
        (COUNT, "There are 2 sessions that haven't been paid."),
        (ExpectedAnswer(type="duration", value=3, unit="hours"), "It lasts 180 minutes."),
        (ExpectedAnswer(type="time", value="19:00"), "It starts at 19:00:00."),
        (ExpectedAnswer(type="date", value="2025-09-17"), "It is due 17.09.2025."),
        (COUNT, "One of them ended this morning; there are two in total."),
        (ExpectedAnswer(type="time", value="12:00"), "It opens at noon."),
        (ExpectedAnswer(type="time", value="19:00"), "It starts at 7 pm."),
        (POSTED, "It was posted on 14 September 2025 at 7 pm."),
        (POSTED, "Posted Sept 14, 2025 at 19:00."),
        (REMOTE, "Ana works fully remotely."),
        (REMOTE, "She is no longer onsite; she is remote now."),
        (GRADUATED, "No, she has not graduated."),
        (BOOKED, "It hasn't been checked in yet."),  # the one other value denied
        (ExpectedAnswer(type="money", value=1500.0), "The total is $1,500.00."),
        (ExpectedAnswer(type="money", value=1500.0), "It comes to fifteen hundred dollars."),
        (ExpectedAnswer(type="duration", value=3, unit="days"), "It lasts three days."),
        (COUNT, "There are 2 sessions; the reservation is at 12 Main Street, Springfield 40211."),
        (ExpectedAnswer(type="list", value=["PS-1", "PS-2"]), "Sessions PS-2 and PS-1."),
    ],
)
def test_a_right_answer_in_other_words_holds(expected, reply):
    verdict = judge_answer(expected, reply, SETTING)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize(
    ("expected", "reply", "why"),
    [
        (COUNT, "2 sessions, both ended; an unpaid fee of $12.00", "nothing in the state"),
        (COUNT, "You may have two or three in total, but I am not certain.", "hedges"),
        (COUNT, "About 2, I think.", "hedges"),
        (COUNT, "2 sessions. Correction: 3.", "hedges"),
        (COUNT, "Sessions: 0; 2; 4; 6.", "nothing in the state"),
        (COUNT, "It's not 2.", "does not state"),
        (COUNT, "Is it 2?", "does not state"),
        (COUNT, "I couldn't find 2 sessions.", "does not state"),
        (COUNT, "~2", "hedges"),
        (COUNT, "2 sessions (or 4)", "hedges"),
        (COUNT, "2+", "hedges"),
        (ExpectedAnswer(type="time", value="19:00"), "around 7 pm", "hedges"),
        (ExpectedAnswer(type="duration", value=3, unit="hours"), "It lasts 3 months.", "does not"),
        (GRADUATED, "Nothing in the records tells me.", "does not say"),
        (GRADUATED, "No idea.", "hedges"),
        (
            ExpectedAnswer(type="enum", value="refundable", rivals=["non_refundable"]),
            "It's non-refundable.",
            "competing",
        ),  # fmt: skip
        (ExpectedAnswer(type="id", value="PS-1", rivals=["PS-2"]), "PS-1, PS-2", "competing"),
        (COUNT, "three sessions", "does not state"),
        (COUNT, "", "says nothing"),
        (POSTED, "It was posted 2025-09-14T19:00:00, at 7:00 am.", "07:00"),
        (GRADUATED, "Yes, she has graduated.", "says yes"),
        (
            ExpectedAnswer(type="boolean", value=True, phrase="graduated"),
            "He has not graduated.",
            "says no",
        ),  # fmt: skip
        (REMOTE, "remote or hybrid", "competing"),
        (REMOTE, "She is not remote.", "denies"),
        (COUNT, "PS-1 " * 600, "dump"),
    ],
)
def test_a_wrong_answer_loses(expected, reply, why):
    verdict = judge_answer(expected, reply, SETTING)
    assert not verdict.passed and why in verdict.reason, verdict.reason


def test_the_reference_answer_plus_an_invented_figure_loses():
    assert judge_answer(COUNT, "Plate KX-1234 has 2 sessions.", SETTING).passed
    verdict = judge_answer(COUNT, "Plate KX-1234 has 2 sessions and 17 fines.", SETTING)
    assert not verdict.passed and "17" in verdict.reason


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"type": "weight", "value": 2}, "type"),
        ({"type": "count", "value": "two"}, "value"),
        ({"type": "date", "value": "17/09/2025"}, "value"),
        ({"type": "duration", "value": 3, "unit": "fortnights"}, "value"),
        ({"type": "boolean", "value": True}, "phrase"),
    ],
)
def test_a_malformed_expected_answer_is_refused_naming_the_field(record, field):
    with pytest.raises(ValidationError) as refused:
        ExpectedAnswer.model_validate(record)
    assert field in str(refused.value)


def test_the_procedural_reference_writes_a_value_whole():
    """A reference reply that rounds ("22324" for 22323.97) would be refused by the judge."""
    from envmill.tasks.backends.procedural.scenarios.questions import say

    assert say("lifetime_giving", 22323.97) == "$22,323.97" and say("hours", 3.0) == "3"
    assert say("gross_pay", 4390.54) == "$4,390.54" and say("mileage", 54099) == "54,099"
    assert say("odometer_km", 22323.97) == "22323.97" and say("model_year", 2013) == "2013"
    expected = ExpectedAnswer(type="number", value=22323.97)
    reply = f"The lifetime giving of Dale Lawson is {say('lifetime_giving', 22323.97)}."
    assert judge_answer(expected, reply, SETTING).passed


@pytest.mark.parametrize(
    ("expected", "reply", "passes"),
    [  # a break-it review's cases: "no" is not always zero, hedges in words
        (COUNT, "No worries - plate KX-1234 has two sessions.", True),
        (COUNT, "No, there are 2 sessions.", True),
        (GRADUATED, "No.", True),
        (COUNT, "There are no open sessions.", False),
        (COUNT, "2 sessions, roughly.", False),
        (COUNT, "My guess is 2.", False),
        (COUNT, "2 sessions, I reckon.", False),
        (COUNT, "Two, if not three.", False),
        (COUNT, "2 sessions... or was it 3?", False),
        (ExpectedAnswer(type="time", value="12:00"), "It opens around noon.", False),
        (ExpectedAnswer(type="time", value="19:00"), "It starts no later than 7 pm.", False),
    ],
)
def test_no_as_a_word_and_hedges_in_words(expected, reply, passes):
    verdict = judge_answer(expected, reply, SETTING)
    assert verdict.passed is passes, verdict.reason


def test_a_day_without_its_year_is_the_nearest_and_a_day_first_date_is_read():
    december = setting_of("When is it due?", {**STATE, "current_time": "2025-12-14T09:00:00"})
    due = ExpectedAnswer(type="date", value="2026-01-05")
    for reply in ("It is due January 5.", "Due 5 January.", "It's due Jan 5th.", "05/01/2026"):
        assert judge_answer(due, reply, december).passed is (reply != "05/01/2026"), reply
    assert judge_answer(due, "It is due 25/01/2026.", december).passed is False
    assert judge_answer(
        ExpectedAnswer(type="date", value="2025-04-29"), "29/04/2025", SETTING
    ).passed


@pytest.mark.parametrize(
    "reply",
    [
        "Is it booked? I can't say.",
        "It might not be booked.",
        "I could not determine it; the tool returned status=booked.",
    ],
)
def test_a_non_answer_with_the_value_beside_it_loses(reply):
    verdict = judge_answer(BOOKED, reply, SETTING)
    assert not verdict.passed, verdict.reason


def test_twenty_one_of_them_is_twenty_one():
    expected = ExpectedAnswer(type="count", value=21, rivals=[20])
    assert judge_answer(expected, "There are twenty-one of them.", SETTING).passed


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("You still need to get checked in.", False),
        ("It will be booked tomorrow.", False),
        ("It is booked.", True),
    ],
)
def test_what_is_still_to_come_is_not_the_state(reply, passes):
    booked = ExpectedAnswer(type="enum", value="booked", rivals=["cancelled"])
    assert judge_answer(booked, reply, SETTING).passed is passes


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("Booked 14 September 2025 at 10 am; raw value 2025-09-14T19:00:00.", False),
        ("It was posted on 14 September 2025 at 7 pm.", True),
        ("Posted on 14 September 2025 at 7 pm; you called at 10 am.", True),
    ],
)
def test_a_clock_said_of_the_answer_s_own_day_must_be_its_clock(reply, passes):
    state = {**STATE, "current_time": "2025-09-16T10:00:00"}
    verdict = judge_answer(POSTED, reply, setting_of("When was it posted?", state))
    assert verdict.passed is passes, verdict.reason


ITEMS = ExpectedAnswer(type="list", value=["SK216", "SK102"], rivals=["SK300"])
CARD_STATE = {
    "current_time": "2025-09-16T09:00:00",
    "orders": {"O-1": {"total": 2739.0, "card": "4111 2222 3333 4444"}, "O-2": {"total": 12.5}},
}
CARD_SETTING = setting_of("What do my orders come to?", CARD_STATE)


@pytest.mark.parametrize(
    ("expected", "reply", "passes"),
    [
        (ITEMS, "Items SK216 and SK102 are on your order.", True),
        (ITEMS, "SK216 and SK102 are not on your order.", False),
        (ITEMS, "SK216, SK102 aren't included.", False),
        (ITEMS, "Neither SK216 nor SK102 is on the order.", False),
    ],
)
def test_a_list_the_reply_denies_is_not_stated(expected, reply, passes):
    assert judge_answer(expected, reply, SETTING).passed is passes, reply


@pytest.mark.parametrize(
    "reply",
    [
        "The total is two thousand, seven hundred and thirty-nine dollars.",
        "It comes to $2,739, paid with the card whose last four digits are 4444.",
        "$2739.00 on the card ending in 4444.",
    ],
)
def test_a_long_spelled_number_and_a_card_s_last_digits_are_read_as_said(reply):
    money = ExpectedAnswer(type="money", value=2739.0, rivals=[12.5])
    verdict = judge_answer(money, reply, CARD_SETTING)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize(
    "reply",
    [
        "Items SK216 and SK102, which are both on the order placed on your account right now.",
        "SK216 and SK102, " + "antidisestablishmentarianism" * 3,
    ],
)
def test_a_long_clause_after_a_list_is_read_at_once(reply):
    """The list-denial pattern is bounded: a crafted tail once took minutes (the suite's per-test
    timeout fails this test if it comes back)."""
    assert judge_answer(ITEMS, reply, SETTING).passed


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("Approx. 2", False),
        ("At minimum 2 sessions.", False),
        ("2 sessions at least.", False),
        ("It seems to be 2.", False),
        ("It should be 2.", False),
        ("There are 2 sessions.", True),
    ],
)
def test_more_hedges_near_a_figure(reply, passes):
    assert judge_answer(COUNT, reply, SETTING).passed is passes, reply


@pytest.mark.parametrize(
    "reply",
    ["It was posted on 14 September 2025 at 7 in the evening.", "Posted 2025/09/14 19:00."],
)
def test_a_day_part_in_words_and_a_slashed_iso_date_are_read(reply):
    assert judge_answer(POSTED, reply, SETTING).passed, reply


def test_the_day_after_tomorrow_is_two_days_on_not_one():
    from datetime import date

    from envmill.tasks.judge.reading import read

    today = date(2024, 12, 25)
    assert read("It is the day after tomorrow.", today).dates == ["2024-12-27"]
    assert read("It was the day before yesterday.", today).dates == ["2024-12-23"]
    assert read("It is tomorrow.", today).dates == ["2024-12-26"]


def test_a_name_the_question_says_holds_no_rival():
    """ "What is the department of Parks Crew North?": "parks" in the crew's name is not a
    competing department."""
    from envmill.schemas.answers import ExpectedAnswer
    from envmill.tasks.judge.answers import judge_answer
    from envmill.tasks.judge.setting import setting_of

    state = {"crews": {"C1": {"name": "Parks Crew North", "department": "lighting"}}}
    question = "What is the department of crew Parks Crew North?"
    expected = ExpectedAnswer(type="enum", value="lighting", rivals=["parks", "streets"])
    setting = setting_of(question, state)
    said = "The department of crew Parks Crew North is lighting."
    assert judge_answer(expected, said, setting).passed
    assert not judge_answer(expected, "It is parks.", setting).passed
    assert judge_answer(expected, "Parks Crew North sits in lighting.", setting).passed
    wrong = "The department of crew Parks Crew North is parks, not lighting."
    assert not judge_answer(expected, wrong, setting).passed


def test_a_stale_value_beside_the_answer_is_a_second_candidate():
    """From the red team: the seats before the booking (14, a rival and the change's old
    value) said as they are now, beside the right 12, took full reward."""
    seats = ExpectedAnswer(type="count", value=12, rivals=[14, 9], context=[14])
    setting = setting_of("How many seats are left on SK216?", {"flights": {"F1": {"seats": 12}}})
    both = "Flight SK216 has 12 available seats. Flight SK216 has 14 available seats."
    assert not judge_answer(seats, both, setting).passed
    assert judge_answer(seats, "The seats went from 14 to 12.", setting).passed
    assert judge_answer(seats, "It was 14; now there are 12 seats.", setting).passed
    assert judge_answer(seats, "There are 12 seats left (down from 14).", setting).passed
    # the same words turned around: the old value said as now
    assert not judge_answer(seats, "It was 12; now there are 14 seats.", setting).passed


def test_a_context_value_said_in_the_answers_words_is_a_second_answer():
    """From the red team: the seats before the booking (14, only context: no other flight has
    14) said as they are now, in the same words as the right 12, took full reward."""
    seats = ExpectedAnswer(type="number", value=12, rivals=[33, 16], context=[14, 2, 12])
    setting = setting_of("Book 2 seats on SK734, then tell me its seats.", {"f": {"F1": {"s": 12}}})
    both = "Flight SK734 has 12 available seats. Flight SK734 has 14 available seats."
    verdict = judge_answer(seats, both, setting)
    assert not verdict.passed and "as the answer" in verdict.reason, verdict
    asked = "Flight SK734 has 12 available seats; flight SK734 has 2 available seats."
    assert not judge_answer(seats, asked, setting).passed  # the question's own figure, too
    for right in (
        "Flight SK734 has 12 available seats; I booked 2 seats for Lori White.",
        "Flight SK734 has 12 available seats (it had 14 before the booking).",
        "It was 14; now flight SK734 has 12 available seats.",
        "Booking BKG-9 is confirmed with 2 seats. On flight SK734, the available seats are 12.",
    ):
        assert judge_answer(seats, right, setting).passed, right


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("ACC-6 had $61.18, which is at least your $40, so I moved $40; it now has $21.18.", True),
        ("ACC-6 has $61.18, more than $40, so I moved the $40 to ACC-1.", True),
        ("ACC-6 has $61.18 ($40 or more), so I moved the money.", True),
        ("ACC-6 has about $61.18, so I moved the money.", False),  # a hedge on the answer
        ("ACC-6 has $61.18 or more, so I moved the money.", False),
    ],
)
def test_a_conditional_reply_may_compare_the_value_with_the_users_line(reply, passes):
    """ "…$61.18, more than your $40 …" compares the answer with the user's own line (a context
    value): the branch taken, not a hedge (red team); a hedge on the answer itself still loses."""
    expected = ExpectedAnswer(type="money", value=61.18, context=[40.0, 21.18])
    setting = setting_of("If its balance is $40 or more, move $40 to ACC-1.", {"a": 61.18})
    assert judge_answer(expected, reply, setting).passed is passes, reply


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("The balance was $307.40, so I deposited $92.60 to bring it up to $400.", True),
        ("It had $307.40; I topped it up to $400.00 with $92.60.", True),
        ("It had up to $307.40, so I deposited the difference.", False),  # a hedge, still
        # the same words with a wrong balance read
        ("The balance was $317.40, so I deposited $82.60 to bring it up to $400.", False),
    ],
)
def test_a_reply_may_say_the_mark_it_brought_the_number_to(reply, passes):
    """From a review: "…to bring it up to $400" was read as the hedge "up to"."""
    expected = ExpectedAnswer(type="money", value=307.4, context=[400.0, 92.6])
    setting = setting_of("I'd like the balance to be $400.", {"a": 307.4})
    assert judge_answer(expected, reply, setting).passed is passes, reply


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("Leave request LR-00001 is for 6 days, below the 8-day limit, so I've approved it.", True),
        ("LR-00001 asks for six days, which is under the 8-day cutoff, so it's approved.", True),
        ("That request covers 6 days, less than the 8 you allow, so I approved it.", True),
        (
            "Leave request LR-00001 is for 6 days, above the 8-day limit, so I've declined it.",
            False,
        ),
        ("It is for 6 days, more than the 8-day limit, so it was declined.", False),
        ("It's 6 days, which exceeds the 8-day limit.", False),
        # negated, in other words: true sides hold, a false one loses (review)
        ("It's for 6 days, not above the 8-day limit, so I approved it.", True),
        ("Six is fine: 6 days is no more than the 8-day limit, so it's approved.", True),
        ("6 days is fewer than the 8 days you allow, so I approved it.", True),
        ("It is for 6 days, not below the 8-day limit, so I declined it.", False),
    ],
)
def test_a_branch_said_on_the_wrong_side_of_its_own_line_loses(reply, passes):
    """From a probe: "6 days, above the 8-day limit, so I've declined it" stated the right
    number, so it passed while claiming the other branch; a comparison its own figures
    contradict is false whatever the state."""
    expected = ExpectedAnswer(type="number", value=6, context=[8])
    setting = setting_of("If leave request LR-00001 is for 8 days or more, decline it.", {"d": 6})
    assert judge_answer(expected, reply, setting).passed is passes, reply


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        (
            "The estimate of work order WO-1 is $95.00, below their $300 budget, so I approved it.",
            True,
        ),
        ("It came in at $95.00, well under the owner's $300 budget, so it's approved.", True),
        (
            "The estimate of WO-1 is $95.00, above their $300 budget, so I cancelled it.",
            False,
        ),
        (
            "The estimate is $95.00, more than this quarter's $300 ceiling, so I cancelled it.",
            False,
        ),
    ],
)
def test_a_line_named_by_whose_it_is_is_a_line_too(reply, passes):
    """A domain's own words for its threshold ("their $300 budget", "this quarter's $10,000
    ceiling", round 45) are compared like "the $300 limit": a wrong side that keeps every
    keyword and the right figure loses."""
    expected = ExpectedAnswer(type="money", value=95.0, context=[300.0])
    setting = setting_of("Cancel work order WO-1 if the estimate is $300 or more.", {"e": 95.0})
    assert judge_answer(expected, reply, setting).passed is passes, reply


def test_a_name_with_an_apostrophe_is_stated_and_seen_as_a_rival():
    """A breaker: "Rita O'Connor" was never found in "… is Rita O'Connor.", and a reply
    naming her beside the right adjuster passed."""
    oconnor = ExpectedAnswer(type="text", value="Rita O'Connor", rivals=["John Jimenez"])
    assert judge_answer(oconnor, "The adjuster of claim CLM-1 is Rita O'Connor.", SETTING).passed
    assert judge_answer(oconnor, "It is Rita O\u2019Connor.", SETTING).passed  # a typographic '
    assert not judge_answer(oconnor, "It is Rita O'Brien.", SETTING).passed  # her first name only
    jimenez = ExpectedAnswer(type="text", value="John Jimenez", rivals=["Rita O'Connor"])
    assert not judge_answer(jimenez, "John Jimenez and Rita O'Connor.", SETTING).passed
