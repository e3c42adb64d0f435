"""The gates added for trustworthy rewards (DESIGN §3.3): mutants, reorderings, isolated checks."""

from __future__ import annotations

import copy

import pytest

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.certify import certify, certify_scenario, score_checks
from envmill.tasks.certify.evidence import collect_evidence
from envmill.tasks.certify.generated import outcome_view
from envmill.tasks.certify.guard import guard_check
from envmill.tasks.envs.policy import check_check_source, check_module

BOOK_TWO = [
    {
        "tool": "book_appointment",
        "arguments": {
            "patient_id": "P001",
            "doctor_id": "D02",
            "start_time": "2025-03-11T10:00:00",
            "reason": "skin check",
        },
    },
    {
        "tool": "book_appointment",
        "arguments": {
            "patient_id": "P002",
            "doctor_id": "D03",
            "start_time": "2025-03-12T11:00:00",
            "reason": "blood test",
        },
    },
]
BY_CONTENT = """def check(initial_state: dict, final_state: dict) -> bool:
    return any(
        key not in initial_state["appointments"]
        and a["patient_id"] == {patient!r} and a["doctor_id"] == {doctor!r}
        and a["start_time"] == {start!r} and a["reason"] == {reason!r}
        for key, a in final_state["appointments"].items()
    )
"""


def _spec(clinic, raw: dict, **changes) -> ScenarioSpec:
    return ScenarioSpec(env_id=clinic.env_id, **{**copy.deepcopy(raw), **changes})


def _gate(report, name):
    return next(g for g in report.gates if g.gate == name)


def _with_check(raw: dict, code: str) -> dict:
    return {**raw, "checks": [*raw["checks"], {"description": "Has an extra check", "code": code}]}


def test_mutants_of_every_kind_are_caught_on_the_golden_clinic(clinic, clinic_scenarios, sandbox):
    kinds = set()
    for raw in clinic_scenarios["certified"]:
        spec = _spec(clinic, raw)
        evidence = collect_evidence(spec, clinic, sandbox)
        wrong = [t for t in evidence.trials if t.is_wrong_solution]
        assert wrong, "every golden scenario has wrong solutions to catch"
        for trial in wrong:
            reward = score_checks([cell.value for cell in evidence.column(trial.pair)])
            assert not reward.success, trial.plan.label
            kinds.add(trial.plan.kind)
        assert _gate(certify_scenario(spec, clinic, sandbox), "guards_collateral").passed
    assert kinds == {"extra", "drop", "swap", "alter"}


def test_a_harmful_extra_call_is_what_a_missing_guard_lets_through(
    clinic, clinic_scenarios, sandbox
):
    report = certify_scenario(
        _spec(clinic, clinic_scenarios["fail"]["guards_collateral"]), clinic, sandbox
    )
    reason = _gate(report, "guards_collateral").reason
    assert report.rejected_gate == "guards_collateral"
    assert "an extra call" in reason and "keeps full reward" in reason


def test_independent_steps_in_the_other_order_keep_full_reward(clinic, clinic_scenarios, sandbox):
    raw = clinic_scenarios["fail"]["accepts_reorder"]
    checks = [
        {
            "description": "Has booked Alice",
            "code": BY_CONTENT.format(
                patient="P001", doctor="D02", start="2025-03-11T10:00:00", reason="skin check"
            ),
        },
        {
            "description": "Has booked Bram",
            "code": BY_CONTENT.format(
                patient="P002", doctor="D03", start="2025-03-12T11:00:00", reason="blood test"
            ),
        },
        raw["checks"][-1],  # the guard
    ]
    report = certify_scenario(_spec(clinic, raw, checks=checks), clinic, sandbox)
    assert report.status == "certified", report.gates
    assert "1 independent" in _gate(report, "accepts_reorder").reason
    pinned = certify_scenario(_spec(clinic, raw), clinic, sandbox)
    assert pinned.rejected_gate == "accepts_reorder"
    assert "steps 1 and 2 swapped" in _gate(pinned, "accepts_reorder").reason


STATEFUL_CHECKS = {
    "module counter": "calls = [0]\n\ndef check(initial_state, final_state):\n"
    "    calls[0] += 1\n    return calls[0] == 1\n",
    "closure": "def counter():\n    seen = []\n\n    def bump():\n        seen.append(1)\n"
    "        return len(seen)\n\n    return bump\n\n\nbump = counter()\n\n\n"
    "def check(initial_state, final_state):\n    return bump() == 1\n",
    "counter that waits": "calls = {'n': 0}\n\ndef check(initial_state, final_state):\n"
    "    calls['n'] += 1\n    return calls['n'] > 1\n",
}


@pytest.mark.parametrize("name", sorted(STATEFUL_CHECKS))
def test_a_check_that_remembers_is_rejected_every_time(name, clinic, clinic_scenarios, sandbox):
    """The policy sees a check that keeps state (check purity), and a refused check counts as
    False, so the reference fails it."""
    assert [v.rule for v in check_check_source(STATEFUL_CHECKS[name])] == ["global_state"]
    raw = _with_check(clinic_scenarios["certified"][0], STATEFUL_CHECKS[name])
    for _ in range(3):
        report = certify_scenario(_spec(clinic, raw), clinic, sandbox)
        assert report.rejected_gate == "checks_pass", name
        assert "refused by the policy" in _gate(report, "checks_pass").reason


def test_a_counter_in_the_module_is_invisible_to_the_next_evaluation(sandbox):
    source = STATEFUL_CHECKS["module counter"]
    outcome = sandbox.run_checks([source], [({"n": 1}, {"n": 2})] * 5)
    assert [cell.value for cell in outcome.cells[0]] == [True] * 5
    assert outcome.unstable == [True]


@pytest.mark.parametrize(
    "body",
    [
        "return id(object()) % 32 == 0 or True",
        "return hash(object()) != 0",
        "probe = id\n    return probe(initial_state) > 0",
    ],
)
def test_an_address_dependent_check_is_rejected_every_time(body, clinic, clinic_scenarios, sandbox):
    code = f"def check(initial_state, final_state):\n    {body}\n"
    assert any(v.rule == "nondeterministic" for v in check_check_source(code))
    raw = _with_check(clinic_scenarios["certified"][0], code)
    for _ in range(3):
        assert certify_scenario(_spec(clinic, raw), clinic, sandbox).status == "rejected"


def test_checks_may_not_write_attributes():
    code = "import json\n\ndef check(initial_state, final_state):\n    json.calls = 1\n"
    code += "    return True\n"
    assert [v.rule for v in check_check_source(code)] == ["check_purity"]
    assert not check_module(
        "class A:\n    def __init__(self):\n        self.rows = {}\n\n"
        "    def get(self, id: str) -> dict:\n"
        "        return {'success': True, 'data': self.rows.get(id)}\n"
    ), "a parameter named id is ordinary code"


ADDRESS_ENV = '''
class Tokens:
    def __init__(self):
        self.tokens: dict[str, dict] = {}

    def issue(self, owner: str) -> dict:
        """Issue a token.

        Args:
            owner: Who gets it.
        """
        # an object's address differs between processes; only for short names, which
        # admission's probe calls do not use (they would catch it in a fresh host)
        token = str(object())[-10:] if len(owner) == 3 else owner.upper()
        self.tokens[owner] = {"owner": owner, "token": token}
        return {"success": True, "data": token}
'''


def test_a_replay_that_differs_in_another_process_is_caught(sandbox):
    scenario = ScenarioSpec(
        env_id="0" * 16,
        task="Issue a token to Ann.",
        initial_state={"tokens": {}},
        reference_solution=[{"tool": "issue", "arguments": {"owner": "ann"}}],
        checks=[
            {
                "description": "Has issued Ann a token",
                "code": "def check(initial_state, final_state):\n"
                "    return 'ann' in final_state['tokens']\n",
            }
        ],
    )
    report = certify(scenario, ADDRESS_ENV, sandbox)
    assert report.rejected_gate == "deterministic"
    assert "replayed" in _gate(report, "deterministic").reason


def test_the_guard_allows_the_task_and_nothing_else(clinic_scenarios):
    initial = clinic_scenarios["certified"][0]["initial_state"]
    final = copy.deepcopy(initial)
    final["appointments"]["A0002"]["status"] = "completed"
    final["invoices"]["INV0002"] = {"appointment_id": "A0002", "amount": 64.0}
    final["next_invoice_number"] += 1
    namespace: dict = {}
    exec(guard_check(initial, final).code, namespace)  # noqa: S102 - trusted, made here
    guard = namespace["check"]
    assert guard(initial, final)
    other_id = copy.deepcopy(final)
    other_id["invoices"]["INV0003"] = other_id["invoices"].pop("INV0002")
    assert guard(initial, other_id), "a created record may get another id"
    collateral = copy.deepcopy(final)
    collateral["appointments"]["A0001"]["status"] = "cancelled"
    assert not guard(initial, collateral)
    one_more = copy.deepcopy(final)
    one_more["invoices"]["INV0009"] = {"appointment_id": "A0001", "amount": 1.0}
    assert not guard(initial, one_more)
    overwritten = copy.deepcopy(final)
    overwritten["appointments"]["A0002"]["reason"] = "something else"
    assert not guard(initial, overwritten)


def test_outcomes_compare_modulo_generated_ids(clinic_scenarios):
    initial = clinic_scenarios["certified"][0]["initial_state"]
    one, other = copy.deepcopy(initial), copy.deepcopy(initial)
    one["invoices"]["INV0002"] = {"invoice_id": "INV0002", "amount": 1.0}
    one["invoices"]["INV0003"] = {"invoice_id": "INV0003", "amount": 2.0}
    other["invoices"]["INV0002"] = {"invoice_id": "INV0002", "amount": 2.0}
    other["invoices"]["INV0003"] = {"invoice_id": "INV0003", "amount": 1.0}
    other["next_invoice_number"] = 99
    assert outcome_view(initial, one) == outcome_view(initial, other)
    other["invoices"]["INV0003"]["amount"] = 3.0
    assert outcome_view(initial, one) != outcome_view(initial, other)


def test_one_reward_function():
    assert score_checks([True, True]).success and score_checks([True, True]).reward == 1.0
    half = score_checks([True, None])
    assert (half.reward, half.success) == (0.5, False)
    assert not score_checks([]).success


ADDRESS_BITS = [
    "return int(str(object())[-3], 16) % 2 == 0",
    "return repr(object())[-3] in '048c'",
    "return f'{object()}'[-4] in '02468ace'",
]


@pytest.mark.parametrize("body", ADDRESS_BITS)
def test_a_check_that_reads_addresses_without_id_is_caught(body, clinic, clinic_scenarios, sandbox):
    code = f"def check(initial_state, final_state):\n    return {body.removeprefix('return ')}\n"
    assert not check_check_source(code), "the policy cannot see this one; the gate must"
    raw = _with_check(clinic_scenarios["certified"][0], code)
    for _ in range(3):
        assert certify_scenario(_spec(clinic, raw), clinic, sandbox).status == "rejected"


STORE = '''
class Store:
    """Items with a status and a tag."""

    def __init__(self) -> None:
        self.items: dict[str, dict] = {}

    def archive_item(self, item_id: str) -> dict:
        """Archive an item.

        Args:
            item_id: The item id.
        """
        item = self.items.get(item_id)
        if item is None:
            return {"success": False, "error": "no such item"}
        if item["tag"] == "hang":
            while True:
                pass
        item["status"] = "archived"
        if item["tag"] == "soft":
            return {"success": False, "error": "archived, but the audit log is full"}
        return {"success": True, "message": "archived"}
'''


def _store_scenario(trap: str) -> ScenarioSpec:
    items = {f"I{n}": {"item_id": f"I{n}", "status": "active", "tag": trap} for n in range(2, 5)}
    items["I1"] = {"item_id": "I1", "status": "active", "tag": "plain"}
    code = "def check(initial_state, final_state):\n"
    code += "    return final_state['items']['I1']['status'] == 'archived'\n"
    return ScenarioSpec(
        env_id="0" * 16,
        task="Archive I1.",
        initial_state={"items": items},
        reference_solution=[{"tool": "archive_item", "arguments": {"item_id": "I1"}}],
        checks=[{"description": "Has archived I1", "code": code}],
    )


def test_a_harmful_call_that_reports_failure_still_counts(sandbox):
    report = certify(_store_scenario("soft"), STORE, sandbox)
    assert report.rejected_gate == "guards_collateral"
    assert "an extra call archive_item" in _gate(report, "guards_collateral").reason


def test_an_environment_that_hangs_on_a_mutant_is_rejected_quickly(sandbox):
    report = certify(_store_scenario("hang"), STORE, sandbox)
    assert report.rejected_gate == "guards_collateral"
    assert "timeout or crash" in _gate(report, "guards_collateral").reason


MODULE_MARKS = {
    "decimal context": "import decimal\n\ndef check(initial_state, final_state):\n"
    "    context = decimal.getcontext()\n    first = not context.flags[decimal.Inexact]\n"
    "    decimal.Decimal(1) / decimal.Decimal(3)\n"
    "    return first or final_state['appointments']['A0002']['status'] == 'completed'\n",
    "json escape table": "import json\n\ndef check(initial_state, final_state):\n"
    "    table = json.encoder.ESCAPE_DCT\n    first = 'zz' not in table\n    table['zz'] = 'x'\n"
    "    return first or final_state['appointments']['A0002']['status'] == 'completed'\n",
}


@pytest.mark.parametrize("name", sorted(MODULE_MARKS))
def test_a_check_that_marks_the_modules_it_imports_is_rejected(
    name, clinic, clinic_scenarios, sandbox
):
    """The policy names the process-wide object (check purity); a refused check counts as
    False, so the reference fails it."""
    assert [v.rule for v in check_check_source(MODULE_MARKS[name])] == ["process_state"]
    raw = copy.deepcopy(clinic_scenarios["certified"][0])
    raw["checks"][0]["code"] = MODULE_MARKS[name]
    for _ in range(3):
        report = certify_scenario(_spec(clinic, raw), clinic, sandbox)
        assert report.rejected_gate == "checks_pass", name
        assert "refused by the policy" in _gate(report, "checks_pass").reason


def test_a_check_that_hangs_or_exits_is_named_and_the_others_still_run(sandbox):
    checks = [
        "def check(initial_state, final_state):\n    return final_state['n'] == 2\n",
        "def check(initial_state, final_state):\n    while True:\n        pass\n",
        "def check(initial_state, final_state):\n    raise SystemExit(0)\n",
        "def check(initial_state, final_state):\n    return final_state['n'] > 1\n",
    ]
    outcome = sandbox.run_checks(checks, [({"n": 1}, {"n": 2})])
    rows = outcome.cells
    assert [row[0].value for row in rows] == [True, None, None, True]
    assert "no answer within" in rows[1][0].error
    assert "SystemExit" in rows[2][0].error


def test_generated_values_are_known_by_type_not_only_by_name(clinic_scenarios):
    initial = copy.deepcopy(clinic_scenarios["certified"][0]["initial_state"])
    initial["next_of_kin"] = {"K1": {"name": "Ann"}}
    final = copy.deepcopy(initial)
    final["appointments"]["A0002"]["status"] = "completed"
    namespace: dict = {}
    exec(guard_check(initial, final).code, namespace)  # noqa: S102 - trusted, made here
    wrong = copy.deepcopy(final)
    del wrong["next_of_kin"]["K1"]
    assert namespace["check"](initial, final) and not namespace["check"](initial, wrong)
    assert outcome_view(initial, final) != outcome_view(initial, wrong)


def test_the_guard_allows_a_resized_list_only_the_reference_s_change(sandbox):
    """The reference put M4 on a waitlist: a trajectory that also drops M1 from it, adds
    another member or reorders those waiting changes what the task did not ask for."""
    from envmill.tasks.certify.guard import guard_check

    def state(*waiting):
        return {"books": {"B1": {"waitlist": list(waiting), "title": "Dune"}}}

    initial = state("M1", "M2")
    guard = guard_check(initial, state("M1", "M2", "M4")).code
    finals = [
        state("M1", "M2", "M4"),
        state("M1", "M4", "M2"),  # M4 put elsewhere: the others keep their order
        state("M2", "M4"),  # M1 dropped too
        state("M1", "M2", "M4", "M5"),  # one more added
        state("M1", "M3", "M4"),  # M2 swapped for M3
        state("M2", "M1", "M4"),  # the first in line sent back
    ]
    outcome = sandbox.run_checks([guard], [(initial, final) for final in finals])
    assert [cell.value for cell in outcome.cells[0]] == [True, True, False, False, False, False]
    initial = state("M1", "M2", "M1")  # the reference removes the second M1
    guard = guard_check(initial, state("M1", "M2")).code
    finals = [state("M1", "M2"), state("M2", "M1")]  # the first M1 removed instead
    outcome = sandbox.run_checks([guard], [(initial, final) for final in finals])
    assert [cell.value for cell in outcome.cells[0]] == [True, False]


def test_a_check_that_answers_late_anywhere_fails_the_deterministic_gate(clinic, clinic_scenarios):
    """A late cell proves nothing: a wrong solution it 'caught' may not be caught when a reward
    is computed with time to spare."""
    from envmill.tasks.certify.evidence import Evidence
    from envmill.tasks.certify.gates import judge
    from envmill.tasks.certify.mutants import ReferenceRun
    from envmill.tasks.sandbox import CheckCell

    spec = _spec(clinic, clinic_scenarios["certified"][0])
    run = ReferenceRun(solution=[], states=[{}], outcomes=[], changed_at=[])
    fine, late = CheckCell(value=True), CheckCell(value=None, error="no answer", late=True)
    ev = Evidence(run=run, cells=[[fine, CheckCell(value=False), late]], other_cells=[[fine]])
    ev.unstable, ev.replay_hash = [False], "x"
    verdict = judge("deterministic", spec, ev)
    assert not verdict.passed and "gave no answer in time" in verdict.reason


def test_value_arguments_are_altered_either_way_and_to_the_edges():
    from envmill.tasks.certify.mutants import _alterations, _same_field

    assert _alterations(True) == [False]
    assert _alterations(3) == [4, 2, 0] and _alterations(2.5) == [3.5, 1.5, 0]
    assert _alterations(0) == [1, -1]
    assert _alterations("2025-03-11T14:00:00") == ["2025-03-12T14:00:00", "2025-03-10T14:00:00"]
    assert _alterations("+1 555 9999") == ["+1 555 9998", "+1 555 0000", "+2 555 9999"]
    # "phone == '+1 555 0199' or phone == '+1 555 0000'" is caught by the zeroed group
    assert "+1 555 0000" in _alterations("+1 555 0199")
    state = {"people": {"P1": {"phone": "+1 555 0101"}, "P2": {"phone": "+1 555 0199"}}}
    assert _same_field("phone", "+1 555 0199", state) == ["+1 555 0101"]
    assert _same_field("new_phone", "+1 555 0199", state) == ["+1 555 0101"]
    assert _alterations("priority") == ["priority (other)"]
    assert _alterations({"city": "Malmo", "zip": "21100"}) == [
        {"city": "Malmo (other)", "zip": "21100"}
    ]
    assert _alterations([2, 5]) == [[3, 5]] and _alterations(None) == []
