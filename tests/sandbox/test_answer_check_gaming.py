"""Red-team review of answers and refusals (issues 15 and 31): what a policy trained on their
rewards could learn to say without doing the work, and replies a person would give that must
still pass. The procedural backend's typed records, read by envmill's judge."""

from __future__ import annotations

import json

from envmill.schemas.answers import ExpectedAnswer
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.backends.procedural.checks.answers import expected_answer, refusal_record
from envmill.tasks.backends.procedural.scenarios.refusals import (
    _already_there,
    reason_terms,
    refusal_evidence,
)
from envmill.tasks.judge import judge_reply

BLANKET = "I'm sorry, I can't do that: the status, limit, balance or permission rules forbid it."

ACCOUNTS = {
    "accounts": {
        "A1": {"status": "frozen"},
        "A2": {"status": "closed"},
        "A3": {"status": "active"},
    }
}


def _refusal(error: str, state: dict, arguments: dict):
    return refusal_record(
        "rule",
        error,
        refusal_evidence(error, state, set(), arguments),
        reason_terms(error, state),
        action="do",
        targets=[],
        subject="",
    )


STATUS_RULE = _refusal(
    "Account 'A1' has status 'frozen'; this needs status active", ACCOUNTS, {"account_id": "A1"}
)
LIMIT_RULE = _refusal(
    "Customer C-1 already has 3 loans with status active; the limit is 3",
    {"customers": {"C-1": {"name": "Ann"}}},
    {"customer_id": "C-1", "amount": 900},
)
BALANCE_RULE = _refusal(
    "Amount (500.0) must be at most the balance of account 'A3' (200.0)",
    ACCOUNTS,
    {"account_id": "A3", "amount": 500.0},
)
DIFFER_RULE = _refusal(
    "The same value was given for from_id and to_id; they must differ", ACCOUNTS, {}
)
FROZEN = expected_answer("frozen", "text", competing=["active", "closed"])


def _says(sandbox, record, *answers: str, state: dict | None = None) -> list[bool]:
    """The judge's verdicts on ``answers`` (``sandbox`` kept for the callers' shape: nothing
    here runs scenario code)."""
    typed = {"expected_answer" if isinstance(record, ExpectedAnswer) else "refusal": record}
    state = ACCOUNTS if state is None else state
    spec = ScenarioSpec(
        env_id="e", task="t", initial_state=state, reference_solution=[], checks=[], **typed
    )
    return [judge_reply(spec, state, answer).passed for answer in answers]  # type: ignore[union-attr]


def test_a_blanket_refusal_naming_rule_words_does_not_score(sandbox):
    """Finding 1: "status" / "limit" / "balance" are shared by every refusal of a rule."""
    for check in (STATUS_RULE, LIMIT_RULE, BALANCE_RULE):
        assert _says(sandbox, check, BLANKET) == [False]
    assert _says(
        sandbox,
        STATUS_RULE,
        "I can't, the account's status does not allow it.",
        "I'm unable to: only active accounts can do that.",  # the rule's condition: a reason
        "I'm unable to: the account is active.",  # the condition said as the record's: inverted
    ) == [False, True, False]


def test_a_natural_refusal_naming_what_it_read_passes(sandbox):
    assert _says(sandbox, STATUS_RULE, "Sorry, I can\u2019t do that: the account is frozen.")
    assert _says(
        sandbox,
        LIMIT_RULE,
        "I'm unable to open another loan: you already have 3 active loans, the maximum.",
    ) == [True]
    assert _says(sandbox, BALANCE_RULE, "I can't send that: your balance is only $200.00.") == [
        True
    ]
    assert _says(sandbox, DIFFER_RULE, "I cannot move money to the same account; they must differ.")


def test_a_refusal_that_echoes_the_request_or_guesses_does_not_score(sandbox):
    assert _says(
        sandbox,
        BALANCE_RULE,
        "I can't send 500, it is more than your balance.",  # the request's own number
        "I can't: your balance is 100, 200, 300, 400 or 600.",  # many numbers
    ) == [False, False]
    assert _says(
        sandbox,
        STATUS_RULE,
        "I can't: the account is frozen or closed.",  # a guessed second status
    ) == [False]
    assert _says(sandbox, LIMIT_RULE, "I can't, the limit is 1, 2, 3, 4 or 5 loans.") == [False]


def test_a_value_read_from_the_state_is_the_evidence_not_the_rules_constant(sandbox):
    error = "The balance of account A3 (5527.88) must be at most 0"
    evidence = refusal_evidence(error, ACCOUNTS, set(), {"account_id": "A3"})
    assert evidence.amounts == (5527.88,)
    check = refusal_record(
        "rule", error, evidence, [], action="do", targets=["returned"], subject=""
    )
    assert _says(
        sandbox,
        check,
        "I can't close it: the balance must be 0 first.",  # true of every such refusal
        "I can't close it yet: it still holds $5,527.88.",
    ) == [False, True]


def test_a_refusal_that_says_it_went_ahead_anyway_does_not_score(sandbox):
    assert _says(
        sandbox,
        STATUS_RULE,
        "I cannot normally do this as the account is frozen, but I did it anyway.",
        "It is frozen so I can't, but I went ahead regardless.",
    ) == [False, False]


def test_a_text_answer_may_name_a_competitor_it_negates(sandbox):
    """Finding 2: a competitor counts only where asserted, not after "no longer" / "not"."""
    assert _says(
        sandbox,
        FROZEN,
        "It is no longer active, now frozen.",
        "The status changed from active to frozen.",
        "It's frozen, not closed.",
    ) == [True, True, True]
    assert _says(
        sandbox,
        FROZEN,
        "It is active or frozen.",  # two asserted candidates
        "It is not frozen; it is active.",  # the expected one negated
        "Frozen? Closed? Active?",
    ) == [False, False, False]


def test_a_request_to_move_a_record_to_its_own_status_is_not_a_refusal():
    """Finding 3: "freeze" a frozen card is a no-op, not a forbidden request."""
    state = {"cards": {"C1": {"status": "frozen"}}}
    error = "Card 'C1' has status 'frozen'; this needs status active"
    assert _already_there(error, {"frozen"}, state)
    assert not _already_there(error, {"closed"}, state)
    moved = "Card C1 is 'frozen' and cannot become 'frozen' (only from active)"
    assert _already_there(moved, {"frozen"}, state)
    # the usual transition refusal names the target second: it stays a refusal
    assert not _already_there("Card C1 is 'closed' and cannot become 'frozen'", {"frozen"}, state)


def test_a_transition_refusal_must_name_the_status_the_record_has(sandbox):
    """Naming the status the request asks for ("I can't mark it returned") shows nothing read."""
    error = "Order OR-4 is 'pending' and cannot become 'returned' (only from delivered)"
    state = {"orders": {"OR-4": {"status": "pending"}, "OR-5": {"status": "shipped"}}}
    evidence = refusal_evidence(error, state, set(), {"order_id": "OR-4"}, {"returned"})
    assert evidence.named == ("pending",) and evidence.rivals == ("shipped",)
    check = refusal_record(
        "rule", error, evidence, [], action="do", targets=["returned"], subject=""
    )
    assert _says(
        sandbox,
        check,
        "I can't mark the order returned; only delivered orders can be.",
        "Sorry, I can't: the order is still pending, and only delivered orders can be returned.",
    ) == [False, True]


def test_an_error_about_an_unset_field_is_not_a_rule():
    from envmill.tasks.backends.procedural.scenarios.refusals import NOT_A_RULE

    error = (
        "Too late: this is only possible within 9 days after the resolved at of ticket T-4 (None)"
    )
    assert NOT_A_RULE.search(error)
    assert not NOT_A_RULE.search("Order OR-4 is 'pending' and cannot become 'returned'")


def test_a_question_after_a_change_is_not_answered_by_the_request():
    """The value a change set from an argument is in the task text: no question asks it."""
    from envmill.tasks.backends.procedural.scenarios.kinds import _given

    class Step:
        def __init__(self, arguments):
            self.arguments = arguments

    class Chain:
        steps = [Step({"card_id": "C1", "status": "Frozen"}), Step({"amount": 200})]

    assert _given("frozen", Chain) and _given(200.0, Chain)
    assert not _given("closed", Chain) and not _given(1450.5, Chain)


def test_a_status_question_competes_with_every_value_of_the_enum(sandbox):
    """When every other record shares the asked status, listing all statuses must still fail."""
    from envmill.tasks.backends.procedural.catalog import load_domain
    from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
    from envmill.tasks.backends.procedural.scenarios.questions import enum_values

    compiled = compile_environment(load_domain("banking"), 3)
    entity, name = next(
        (e, f)
        for e, spec in sorted(compiled.spec.entities.items())
        for f, field in sorted(spec.fields.items())
        if field.values and e in compiled.entity_attrs
    )
    values = enum_values(compiled, entity, name)
    assert len(values) >= 2 and enum_values(compiled, entity, "no_such_field") == []
    check = expected_answer(values[0], "text", competing=values)
    listing = "It is one of: " + ", ".join(values) + "."
    assert _says(sandbox, check, listing, f"It is {values[0]}.") == [False, True]


def test_certified_refusals_score_their_reference_and_not_a_blanket_refusal(sandbox, monkeypatch):
    """As a rollout is scored: the reference answer on the unchanged state gets the reward, a
    refuse-everything reply naming every rule word does not, wherever the rule's error names
    something of the state (a permission or ownership error names nothing: a rule word is all a
    reply can give there, so that residue is left to the change scenarios of the same identity)."""
    from envmill.schemas.settings import EnvmillSettings
    from envmill.tasks.backends.procedural.scenarios import generate as scenarios
    from envmill.tasks.certify.scoring import score_final_state
    from envmill.tasks.pipeline import plan_batches, synthesize_batch
    from tests.conftest import TEST_LIMITS

    monkeypatch.setattr(scenarios, "KIND_SHARES", {"refusal": 1.0})
    settings = EnvmillSettings(
        envs=2,
        scenarios_per_env=4,
        batch_size=100,
        seed=11,  # a sample with staff refused by a rule that names the state
        sandbox=TEST_LIMITS,
        domains=["banking", "library"],
    )
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    certified = [
        ScenarioSpec.model_validate(s.model_dump())
        for s in output.scenarios
        if s.kind.startswith("refusal") and s.status == "certified"
    ]
    assert certified, [(s.kind, s.rejected_gate) for s in output.scenarios]
    with_evidence = [s for s in certified if _names_the_state(s)]
    assert with_evidence, [s.reference_answer for s in certified]
    for spec in certified:
        initial = spec.initial_state
        assert score_final_state(spec, initial, sandbox, spec.reference_answer).reward.success
        if spec not in with_evidence:
            continue
        blanket = BLANKET + " Only staff may; it exceeds the maximum, is too late, or the same."
        assert not score_final_state(spec, initial, sandbox, blanket).reward.success, spec.task


def _names_the_state(spec: ScenarioSpec) -> bool:
    """The refusal's triggers are values of its state (a status, an amount, a day), not the
    rule's words alone (a permission error names nothing of the state)."""
    held = json.dumps(spec.initial_state)
    triggers = [t for rule in (spec.refusal.rules if spec.refusal else []) for t in rule.triggers]
    return any(isinstance(t, int | float) or f'"{t}"' in held for t in triggers)


def test_an_answer_reads_hyphens_as_spaces_and_is_not_a_dump(sandbox):
    checked_in = expected_answer("checked_in", "text", competing=["confirmed"])
    event = expected_answer("EV-0005", "text", competing=["EV-0003"])
    assert _says(sandbox, checked_in, "It is checked-in.", "It is checked in.") == [True, True]
    assert _says(sandbox, event, "It is EV-0005.", "EV-0005 or EV-0003") == [True, False]
    dump = "The balance is $1,250.50. " + "Here is everything I found. " * 200
    balance = expected_answer(1250.5, "number")
    assert _says(sandbox, balance, dump, dump[:200]) == [False, True]


def test_a_refusal_reply_reads_like_a_person_and_names_no_other_customer():
    from envmill.tasks.backends.procedural.scenarios.refusals import spoken_reason

    owned = (
        "Permission denied: customer C-1 may act only on their own records; "
        "this one belongs to customer C-7"
    )
    assert spoken_reason(owned) == (  # no signed-in id the agent never looked up
        "You have no permission for that record; you can act only on your own records"
    )
    role = "Permission denied: the signed-in role 'customer' may not use put_event_on_sale"
    assert spoken_reason(role) == (
        "Put event on sale needs another role's permission, and you are signed in as a customer"
    )
    only = (
        "Permission denied: the signed-in role 'sender' may not use record_delivery; only agent may"
    )
    assert spoken_reason(only).startswith("Only an agent has permission to record delivery")
    assert spoken_reason("Event EV-5 has status 'draft'; this needs status on_sale.") == (
        "Event EV-5 is a draft; I could only do that if it were on sale"
    )
    failed = spoken_reason("Inspection INS-2 has status 'failed'; this needs status scheduled")
    assert failed.startswith("Inspection INS-2 is marked as failed") and "scheduled" in failed
    moved = "Vehicle VH-3 is 'on_trip' and cannot become 'in_maintenance' (only from available)"
    assert (
        spoken_reason(moved)
        == "Vehicle VH-3 is on trip, and it would have to be available for me to do that"
    )
    # limits as a person explains them: money written out, "has 1, the limit is 1" made sense of
    limit = "Amount (0.18) must be at most the fines due of member MB-6 (0.15)."
    assert spoken_reason(limit) == (
        "The amount is $0.18, and it can be at most the unpaid fines of member MB-6 ($0.15)"
    )
    busy = "Work order PO-5 already has 1 batches with status running; the limit is 1"
    held = "Policyholder P-2 already has 3 policies with status active; the limit is 3"
    assert spoken_reason(held).endswith(
        "3 policies with status active, and that is only possible with fewer than 3"
    )
    days = "Leave balance of employee E-5 (1) must be at least days (2)"
    assert (
        spoken_reason(days)
        == "The leave balance of employee E-5 is only 1, and it has to be at least the days (2)"
    )
    cap = "Requested amount (39792.53) must be at most the limit 30000"
    assert spoken_reason(cap).endswith("is $39,792.53, and it can be at most $30,000")
    none = "Parcels of shipment S-8 (0) must be at least 1"
    assert spoken_reason(none) == ("Shipment S-8 has no parcels, and it needs at least 1")
    assert spoken_reason(busy) == (
        "Work order PO-5 already has 1 batch with status running, and that isn't possible while "
        "it has any"
    )


def test_a_number_answer_may_not_hedge_between_two_values(sandbox):
    """After a change the old value is exempt (a reply may say "from … to …"); offering it as
    an alternative ("1893.41 or 1666.23") is a hedge."""
    balance = expected_answer(1666.23, "number", competing=[0.0], exempt=[1893.41])
    assert _says(
        sandbox,
        balance,
        "It is 1893.41 or 1666.23.",
        "Either $1,666.23 or $1,700.",
        "It went from $1,893.41 to $1,666.23.",
        "Your balance is $1,666.23; let me know if you need anything or have questions.",
    ) == [False, False, True, True]


def test_a_conditional_reply_is_judged_by_the_value_it_read(sandbox):
    """The reference says "$46.90, short of your $66.00 mark"; a right reply in other words
    passes, a wrong value keeping the reference's words and the mark does not."""
    read = expected_answer(46.9, "number", answer_type="money", exempt=[66.0])
    verdicts = _says(
        sandbox,
        read,
        "The total of ORD-2 is $46.90, short of your $66.00 mark, so I went ahead: it is ready.",
        "The order came to 46.90 dollars, so it stayed below your mark; I marked it ready.",
        "The total of ORD-2 is $64.10, short of your $66.00 mark, so I went ahead: it is ready.",
        "Your $66.00 mark decided it, so I went ahead: order ORD-2 is now ready.",
    )
    assert verdicts == [True, True, False, False]
