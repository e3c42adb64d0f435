"""A conditional whose branches move the tested number in opposite directions says why one
would ask it (raters, every round: "conditionals read as logic puzzles")."""

from __future__ import annotations

from envmill.tasks.backends.procedural.manifest import ToolManifest
from envmill.tasks.backends.procedural.phrasing.task import _balances
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep, Condition


def _step(tool: str, old: float, new: float) -> ChainStep:
    manifest = ToolManifest(tool=tool, kind="state_change", entity="client")
    change = {
        "op": "change",
        "path": ["clients", "C-1", "retainer_balance"],
        "old": old,
        "new": new,
    }
    return ChainStep(manifest, {"client_id": "C-1"}, [], [change])


def _condition(otherwise: ChainStep) -> Condition:
    record = ArgMention("client_id", "C-1", "entity_id", "client", "Ann Lee", "name", True)
    return Condition(record, "retainer_balance", "<", 700.0, True, otherwise, {})


def test_opposite_moves_balance_and_a_deferral_does_not():
    top_up, refund = _step("add_retainer", 400, 700), _step("refund_retainer", 400, 150)
    assert _balances(top_up, _condition(refund))
    assert not _balances(top_up, _condition(_step("add_retainer", 400, 650)))
    flag = ChainStep(ToolManifest(tool="flag", kind="state_change", entity="client"), {}, [], [])
    assert not _balances(top_up, _condition(flag))  # one branch leaves the number alone
