"""ScenGenerator through the real client against the local endpoint: scenarios of a SkelBuilder
environment are made in three calls each and certified; a refused one is repaired from its gate;
steps that cannot run go back to the model; ``$N.path`` arguments take earlier results."""

from __future__ import annotations

import pytest
from llm_server import TEST_STAGE, make_client, within

from envmill.schemas.scengen import PlannedStep, ScenGenSettings
from envmill.schemas.skeleton import SkeletonSettings
from envmill.tasks.llm.endpoint import serve_endpoint
from envmill.tasks.scengen.build import EnvironmentBrief, make_llm_scenarios
from envmill.tasks.scengen.solution import resolve
from envmill.tasks.skelbuilder import build_environment
from envmill.tasks.skelbuilder.asking import Asker

LIBRARY = "public library lending: renew loan with waitlists, online, for a startup"
PATIENT = TEST_STAGE.model_copy(update={"timeout_seconds": 10.0, "deadline_seconds": 30.0})


@pytest.fixture(scope="module")
def endpoint():
    with serve_endpoint() as served:
        yield served


@pytest.fixture(scope="module")
def library(endpoint, sandbox, tmp_path_factory):
    """A checked environment SkelBuilder made for the library topic, and its brief."""
    client = make_client(endpoint.url, tmp_path_factory.mktemp("env"), default=PATIENT)
    draft = build_environment(LIBRARY, client, sandbox, SkeletonSettings()).draft
    brief = EnvironmentBrief(
        draft.topic, draft.introduction, draft.business_rules, draft.initial_state
    )
    return draft.admitted, brief


def scenarios(endpoint, sandbox, tmp_path, library, count=4, **settings):
    env, brief = library
    asker = Asker(make_client(endpoint.url, tmp_path, default=PATIENT), item="library#1")
    made = within(
        120,
        lambda: make_llm_scenarios(
            env,
            brief,
            count,
            asker=asker,
            sandbox=sandbox,
            settings=ScenGenSettings(**settings),
            seed=0,
        ),
    )
    return made, asker


def test_scenarios_certify_in_three_calls_each(endpoint, sandbox, tmp_path, library):
    endpoint.configure(slips=[])
    made, asker = scenarios(endpoint, sandbox, tmp_path, library)
    assert not made.skipped and len(made.scenarios) == 4
    reports = [made.reports[s.scenario_id] for s in made.scenarios]
    assert [r.status for r in reports] == ["certified"] * 4, [r.rejected_gate for r in reports]
    assert asker.calls == 12 and set(made.repairs.values()) == {0}
    for spec in made.scenarios:
        assert spec.backend == "llm" and spec.task and spec.reference_solution
        assert spec.checks[-1].description.startswith("Has changed nothing")  # the guard
    assert len({s.scenario_id for s in made.scenarios}) == 4


def test_checks_refused_at_a_gate_are_repaired_from_its_reason(
    endpoint, sandbox, tmp_path, library
):
    endpoint.configure(slips=[{"kind": "trivial_checks"}])
    endpoint.reset()
    made, asker = scenarios(endpoint, sandbox, tmp_path, library, count=2)
    assert [made.reports[s.scenario_id].status for s in made.scenarios] == ["certified"] * 2
    assert set(made.repairs.values()) == {1} and asker.calls == 8
    shown = [r["body"]["messages"][-1]["content"] for r in endpoint.requests("scenario_repair")]
    assert len(shown) == 2
    for text in shown:  # the refused checks, the gate that refused them and its reason
        assert "The request was handled" in text and "Refused at gate `" in text
        gate = text.split("Refused at gate `", 1)[1].split("`", 1)[0]
        assert gate in {"not_trivial", "partial_fails", "guards_collateral"}, text[-300:]


def test_a_step_that_cannot_run_goes_back_and_a_persistent_one_is_a_skip(
    endpoint, sandbox, tmp_path, library
):
    endpoint.configure(slips=[{"kind": "wrong_step"}])
    made, _ = scenarios(endpoint, sandbox, tmp_path, library, count=1)
    assert made.reports[made.scenarios[0].scenario_id].status == "certified"
    endpoint.configure(slips=[{"kind": "wrong_step", "persistent": True}])
    made, _ = scenarios(endpoint, sandbox, tmp_path / "again", library, count=1, answer_rounds=1)
    (skip,) = made.skipped
    assert skip.code == "unusable_answer" and "there is no tool" in skip.message
    endpoint.configure(slips=[])


def test_step_references_take_earlier_results():
    results = [{"success": True, "data": {"loan_id": "LN-9", "items": ["a", "b"]}}]
    arguments = {"loan": "$1.data.loan_id", "second": "$1.data.items.1", "plain": "$x"}
    assert resolve(arguments, results) == {"loan": "LN-9", "second": "b", "plain": "$x"}
    with pytest.raises(LookupError, match="has not run yet"):
        resolve({"a": "$2.data"}, results)
    with pytest.raises(LookupError, match="nothing at 'missing'"):
        resolve({"a": "$1.data.missing"}, results)
    assert PlannedStep(tool="t").arguments == {}


def test_conversational_scenarios_carry_the_facts_a_user_reveals(
    endpoint, sandbox, tmp_path, library
):
    endpoint.configure(slips=[])
    made, _ = scenarios(endpoint, sandbox, tmp_path, library, count=3, conversational_share=1.0)
    assert {s.mode for s in made.scenarios} == {"conversational"}
    assert any(s.user_facts for s in made.scenarios)
    assert {made.reports[s.scenario_id].status for s in made.scenarios} == {"certified"}


def test_a_state_that_repeats_an_earlier_one_is_refused(endpoint, sandbox, tmp_path, library):
    from envmill.tasks.llm.endpoint.scenarios import scenario_for

    env, brief = library
    seen = scenario_for(LIBRARY, 0).initial_state  # what the model answers for scenario 0
    again = (env, EnvironmentBrief(brief.topic, brief.introduction, brief.business_rules, seen))
    made, _ = scenarios(endpoint, sandbox, tmp_path, again, count=2, answer_rounds=1)
    (skip,) = made.skipped
    assert skip.index == 0 and skip.code == "unusable_answer"
    assert "repeats most records of one already used" in skip.message
    assert len(made.scenarios) == 1


def test_a_reference_to_a_missing_record_is_named():
    from envmill.tasks.scengen.references import dangling_reference

    state = {
        "members": {"MB-001": {"member_id": "MB-001", "name": "Ann"}},
        "loans": {"LN-001": {"loan_id": "LN-001", "member_id": "MB-001", "note": "A-1"}},
        "next_loan_number": 2,
    }
    assert dangling_reference(state) is None  # "A-1" has the shape of an id, of no collection
    state["loans"]["LN-001"]["member_id"] = "MB-009"
    assert dangling_reference(state) == (
        "loans.LN-001.member_id is 'MB-009', but members has no record 'MB-009'; "
        "point references at records that exist"
    )


def test_a_scenario_whose_certification_breaks_is_a_skip_of_its_own(
    endpoint, sandbox, tmp_path, library, monkeypatch
):
    from envmill.tasks.scengen import build

    certify = build.certify_scenario
    broken = {"first": True}

    def flaky(spec, env, box):
        if broken.pop("first", False):
            raise RuntimeError("the checks host died")
        return certify(spec, env, box)

    endpoint.configure(slips=[])
    monkeypatch.setattr(build, "certify_scenario", flaky)
    made, _ = scenarios(endpoint, sandbox, tmp_path, library, count=2, scenario_threads=1)
    (skip,) = made.skipped
    assert skip.code == "scenario_error" and "the checks host died" in skip.message
    assert [made.reports[s.scenario_id].status for s in made.scenarios] == ["certified"]
