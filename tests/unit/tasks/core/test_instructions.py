"""The participle a finished change is said with: "I've sold", "I've cancelled"."""

import pytest

from envmill.tasks.core.instructions import past_participle, tool_clause


@pytest.mark.parametrize(
    ("clause", "done"),
    [
        ("sell 1 ticket to Ann", "sold 1 ticket to Ann"),
        ("take in a graded lot", "taken in a graded lot"),
        ("open an account", "opened an account"),
        ("issue a card", "issued a card"),
        ("cancel booking BK-1", "cancelled booking BK-1"),
        ("enrol a student", "enrolled a student"),
        ("drop enrolment EN-1", "dropped enrolment EN-1"),
        ("admit a farmer", "admitted a farmer"),
        ("transfer money", "transferred money"),
        ("deposit $3.00", "deposited $3.00"),
        ("credit leave days", "credited leave days"),
        ("apply a discount", "applied a discount"),
        ("pay invoice LI-1", "paid invoice LI-1"),
        ("re-open a case", "re-opened a case"),
        ("schedule a visit", "scheduled a visit"),
        ("install a part", "installed a part"),
        ("Record that Ann left", "recorded that Ann left"),
    ],
)
def test_the_first_word_becomes_its_participle(clause, done):
    assert past_participle(clause) == done


@pytest.mark.parametrize(
    ("tool", "description", "clause"),
    [
        # from a rating: "Only the front desk may check a guest in on or."
        (
            "check_in",
            "Check a guest in on or after the arrival day into a clean, free room.",
            "check a guest in",
        ),
        # from a rating: "Before I mark Grace Holloway (DN-00004), can you confirm …"
        # from a rating: "Only dispatchers may fail a failed inspection."
        (
            "fail_inspection",
            "Record a failed inspection; the request goes back to its crew.",
            "record a failed inspection",
        ),
        (
            "mark_donor_lapsed",
            "Mark an active donor who stopped giving as lapsed.",
            "mark an active donor as lapsed",
        ),
    ],
)
def test_a_clause_cut_short_keeps_what_it_needs_and_nothing_hanging(tool, description, clause):
    assert tool_clause(tool, description) == clause
