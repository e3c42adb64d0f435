"""What the prompts tell the model, where envmill enforces it on the answer (issue 30)."""

from __future__ import annotations

from envmill.tasks.backends.llm.scengen.solution import resolve
from envmill.tasks.llm import render


def task_prompt(conversational: bool) -> str:
    messages = render(
        "scenario_task",
        topic="t",
        index=0,
        kind="change",
        conversational=conversational,
        tools="[]",
        state="{}",
    ).messages
    return "\n".join(m["content"] for m in messages)


def test_user_facts_are_asked_for_only_in_conversational_mode():
    assert "user_facts" not in task_prompt(False)
    spoken = task_prompt(True)
    assert '"user_facts": {...}' in spoken and "put each fact the agent needs" in spoken


def test_the_task_prompt_says_every_value_must_be_seen_and_how_list_items_are_named():
    text = task_prompt(False)
    assert "Every argument value a step uses must be one the agent has seen by then" in text
    assert '`"$1.data.0.order_id"` is the first result\'s `order_id`' in text
    results = [{"success": True, "data": [{"order_id": "O-7"}, {"order_id": "O-8"}]}]
    assert resolve({"order": "$1.data.0.order_id"}, results) == {"order": "O-7"}  # as documented


def test_the_plan_offers_list_types():
    text = render("skeleton_plan", topic="clinic", introduction="", request="").messages[0]
    assert "`list[<type>]`" in text["content"]


def test_the_state_prompt_allows_the_constants_the_policy_admits():
    """Tuples and frozensets of constants pass the policy (tests/sandbox/
    test_environment_contract.py), so the prompt must not forbid them: a list of blood types
    written out in six methods was the cost."""
    plan = {"class_name": "Bank", "introduction": "", "entities": [], "business_rules": []}
    text = render("skeleton_state", topic="t", plan=plan).messages[0]["content"]
    assert "tuples and\n  frozensets of them" in text and 'BLOOD_TYPES = ("A+"' in text
    assert "never a list, dict or set" in text
