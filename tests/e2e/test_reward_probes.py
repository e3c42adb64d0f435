"""Rewards by meaning, probed as a user would (issue 31): ``envmill rollout`` against a scripted
policy that replays each certified reference and ends with a chosen reply, on a fresh corpus.

Right replies in the test's own words (not certification's probes) keep full reward on at least
95 % of the answer, refusal and conditional scenarios; wrong ones lose it on at least 95 %; the
scenarios judged by their state alone keep the reference's reward exactly.
"""

from __future__ import annotations

import json
import shutil
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
from llm_server import spawn_endpoint

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.backends.procedural.scenarios import generate as scenarios
from envmill.tasks.offline_llm import oracle_script, script_key
from envmill.tasks.rollout.plan import scenario_of
from envmill.warehouse.episodes import reference_conversations
from envmill.warehouse.views import query
from tests.cli import envmill_in as envmill
from tests.corpus import make_corpus

DOMAINS = ("clinic", "banking", "library", "parking", "hotel", "payroll")
SMALL = "zero one two three four five six seven eight nine ten eleven twelve".split()
ROLLED = """SELECT t.scenario_id, t.success, t.reward FROM trajectories t
            WHERE t.policy <> 'reference'"""


@pytest.fixture(scope="module")
def probe_corpus(tmp_path_factory, sandbox) -> Path:
    shares = {"answer": 0.4, "refusal": 0.3, "change": 0.3}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scenarios, "KIND_SHARES", shares)
        root = tmp_path_factory.mktemp("probes") / "data"
        return make_corpus(root, sandbox, domains=DOMAINS, per_env=6)


def _specs(root: Path) -> dict[str, ScenarioSpec]:
    rows = query(root, "SELECT * FROM scenarios WHERE status = 'certified'").to_pylist()
    return {row["scenario_id"]: scenario_of(row) for row in rows}


def right_reply(spec: ScenarioSpec) -> str | None:
    """The reply a careful person writes, in words the reference did not use."""
    if spec.refusal is not None:
        trigger = spec.refusal.rules[0].triggers[0]
        return f"I'm not able to help with that one, I'm afraid - it's {_said(trigger)}."
    expected = spec.expected_answer
    if expected is None:
        return None
    value = expected.value
    if expected.type in ("count", "number") and float(value).is_integer() and 0 <= value < 13:
        shown = SMALL[int(value)]
    elif expected.type == "money":
        shown = f"{float(value):,.2f} dollars"
    elif expected.type == "list":
        shown = " and ".join(reversed([str(v).replace("_", " ") for v in value]))
    else:
        shown = _said(value)
    return f"I checked that for you: it comes to {shown}, going by the system."


def wrong_reply(spec: ScenarioSpec) -> str | None:
    """A reply that must not earn the reward: a rival or neighbouring value, an invented rule."""
    if spec.refusal is not None:
        return "Sorry, I can't do that: only a supervisor may approve such requests."
    expected = spec.expected_answer
    if expected is None:
        return None
    rivals = [r for r in expected.rivals if str(r) != str(expected.value)]
    if rivals:
        return f"It is {_said(rivals[0])}."
    if expected.type in ("count", "number", "money"):
        return f"It is {float(expected.value) + 7:,.2f}."
    if expected.type in ("date", "datetime"):
        day = date.fromisoformat(str(expected.value)[:10]).replace(year=1999)
        return f"It is {day:%d %B %Y}."
    return "I could not find that."


def _said(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:,.2f}" if not float(value).is_integer() else f"{int(value):,}"
    text = str(value)
    if len(text) >= 16 and text[4] == "-" and text[10] in "T ":
        moment = datetime.fromisoformat(text[:16])
        return f"{moment:%B} {moment.day}, {moment.year} at {moment:%H:%M}"
    if len(text) >= 10 and text[4] == "-" and text[7] == "-":
        day = date.fromisoformat(text[:10])
        return f"{day:%B} {day.day}, {day.year}"
    return text.replace("_", " ")


def _roll_out(tmp_path: Path, corpus: Path, replies: dict[str, str], name: str) -> dict[str, bool]:
    """A copy of ``corpus`` rolled out by a policy replaying each reference, the last message
    replaced by ``replies[scenario_id]``: each scenario's success."""
    root = Path(shutil.copytree(corpus, tmp_path / name, symlinks=True))
    ids = sorted(_specs(root))
    scripts = {}
    conversations = list(reference_conversations(root, ids))  # in scenario_id order
    assert len(conversations) == len(ids)
    for scenario_id, messages in zip(ids, conversations, strict=True):
        opening = next(m["content"] for m in messages if m["role"] == "user")
        script = oracle_script(messages)
        if replies.get(scenario_id):
            script[-1] = {"content": replies[scenario_id]}
        scripts[script_key(opening)] = script
    with spawn_endpoint() as endpoint:
        endpoint.scripts(scripts)
        env = {"ENVMILL_LLM__BASE_URL": endpoint.url}
        done = envmill(tmp_path, "rollout", "--out", str(root), "--workers", "1", extra_env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return {row["scenario_id"]: row["success"] for row in query(root, ROLLED).to_pylist()}


@pytest.mark.timeout(600)
def test_replies_are_rewarded_by_meaning_through_envmill_rollout(tmp_path, probe_corpus):
    specs = _specs(probe_corpus)
    judged = {i: s for i, s in specs.items() if s.expected_answer or s.refusal}
    by_state = {i for i in specs if i not in judged}
    kinds = {s.kind.split("+")[0] for s in judged.values() if s.kind}
    assert len(judged) >= 12 and {"answer", "refusal"} <= kinds, kinds
    right = _roll_out(tmp_path, probe_corpus, {i: right_reply(s) for i, s in judged.items()}, "r")
    wrong = _roll_out(tmp_path, probe_corpus, {i: wrong_reply(s) for i, s in judged.items()}, "w")
    kept = [i for i in judged if right.get(i)]
    lost = [i for i in judged if wrong.get(i) is False]
    misses = {i: right_reply(judged[i]) for i in judged if i not in kept}
    assert len(kept) >= 0.95 * len(judged), json.dumps(misses, indent=1)[:3000]
    wins = {i: wrong_reply(judged[i]) for i in judged if i not in lost}
    assert len(lost) >= 0.95 * len(judged), json.dumps(wins, indent=1)[:3000]
    assert by_state and all(right[i] and wrong[i] for i in by_state)  # the state alone judged
