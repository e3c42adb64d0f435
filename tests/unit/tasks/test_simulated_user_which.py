"""The offline simulated user answers "which one do you mean?" as the reference's user does."""

from __future__ import annotations

from envmill.tasks.core.facts import Fact, ask_and_answer
from envmill.tasks.offline_llm.simulated_user import UserPrompt, user_reply


def test_it_says_which_namesake_it_means_like_the_reference():
    name = Fact("doctor name", "doctor name", "Megan Ellis")
    meant = Fact("doctor you mean", "doctor you mean", "Megan Ellis (whose fee is $144.45)")
    prompt = UserPrompt("You want the agent to book a visit.", [name, meant])
    for needed in ([("doctor_id", meant)], [("name", name), ("doctor_id", meant)]):
        question, answer = ask_and_answer(needed, 0)  # turn: the user said one message
        reply = user_reply(prompt, ["Please book a visit."], f"Thanks. {question}")
        assert reply == answer, (question, reply)
    assert "I mean Megan Ellis, the one whose fee is $144.45." in answer
