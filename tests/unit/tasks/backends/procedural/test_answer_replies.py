"""An answer after a change (scenarios/kinds.py): the report of the work, then the value asked
for, but never the same value twice ("… capacity is now 65 … The capacity … is 65")."""

from __future__ import annotations

from types import SimpleNamespace

from envmill.schemas.answers import ExpectedAnswer
from envmill.tasks.backends.procedural.scenarios.chains import Chain
from envmill.tasks.backends.procedural.scenarios.kinds import _with_the_change
from envmill.tasks.backends.procedural.scenarios.questions import Question

BEFORE = {"courses": {"C1": {"title": "World History", "capacity": 60}}}
AFTER = {"courses": {"C1": {"title": "World History", "capacity": 65}}}


def _question(field: str, said: str) -> Question:
    expected = ExpectedAnswer(type="number", value=65)
    answer = f"The {field} of course World History is {said}."
    return Question("…", [], answer, expected, said=said, field=field)


def test_an_answer_the_report_already_states_is_not_repeated():
    step = SimpleNamespace(arguments={"course_id": "C1"}, result={"data": AFTER["courses"]["C1"]})
    chain = Chain(BEFORE, AFTER, steps=[step])
    reply = _with_the_change(chain, _question("capacity", "65"))
    assert reply.count("65") == 1 and "capacity" in reply and "World History" in reply, reply
    other = _with_the_change(chain, _question("credits", "4"))  # another field: both are said
    assert "65" in other and other.endswith("The credits of course World History is 4."), other
