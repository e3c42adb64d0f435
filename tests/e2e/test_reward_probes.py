"""Rewards by meaning, probed as a user would (issue 31): ``envmill rollout`` against a scripted
policy that replays each certified reference and ends with a chosen reply, on a fresh corpus.

Right replies in the test's own words (``bench.reward_probes``, which measures the same on a
default run) (not certification's probes) keep full reward on at least
95 % of the answer, refusal and conditional scenarios; wrong ones lose it on at least 95 %; the
scenarios judged by their state alone keep the reference's reward exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.reward_probes import certified_specs, right_reply, roll_out, wrong_reply
from envmill.tasks.backends.procedural.scenarios import generate as scenarios
from tests.cli import clean_env
from tests.corpus import make_corpus

DOMAINS = ("clinic", "banking", "library", "parking", "hotel", "payroll")


@pytest.fixture(scope="module")
def probe_corpus(tmp_path_factory, sandbox) -> Path:
    shares = {"answer": 0.4, "refusal": 0.3, "change": 0.3}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scenarios, "KIND_SHARES", shares)
        root = tmp_path_factory.mktemp("probes") / "data"
        return make_corpus(root, sandbox, domains=DOMAINS, per_env=6)


def _roll_out(tmp_path: Path, corpus: Path, replies: dict, name: str) -> dict[str, bool]:
    (tmp_path / name).mkdir()
    return roll_out(corpus, replies, tmp_path / name, clean_env(tmp_path / name))


@pytest.mark.timeout(600)
def test_replies_are_rewarded_by_meaning_through_envmill_rollout(tmp_path, probe_corpus):
    specs = certified_specs(probe_corpus)
    judged = {i: s for i, s in specs.items() if s.expected_answer or s.refusal}
    by_state = {i for i in specs if i not in judged}
    kinds = {s.kind.split("+")[0] for s in judged.values() if s.kind}
    assert len(judged) >= 12 and {"answer", "refusal"} <= kinds, kinds
    right = _roll_out(tmp_path, probe_corpus, {i: right_reply(s) for i, s in judged.items()}, "r")
    wrong = _roll_out(tmp_path, probe_corpus, {i: wrong_reply(s) for i, s in judged.items()}, "w")
    judged = {i: s for i, s in judged.items() if i in right}  # a probe the endpoint can
    by_state &= right.keys()  # script apart from every other (``roll_out``)
    kept = [i for i in judged if right.get(i)]
    lost = [i for i in judged if wrong.get(i) is False]
    misses = {i: right_reply(judged[i]) for i in judged if i not in kept}
    assert len(kept) >= 0.95 * len(judged), json.dumps(misses, indent=1)[:3000]
    wins = {i: wrong_reply(judged[i]) for i in judged if i not in lost}
    assert len(lost) >= 0.95 * len(judged), json.dumps(wins, indent=1)[:3000]
    failing = [i for i in by_state if not (right[i] and wrong[i])]
    assert by_state and not failing, failing  # the state alone judged
