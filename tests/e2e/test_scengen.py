"""ScenGenerator through the real client against the local endpoint: scenarios of a SkelBuilder
environment are made in three calls each and certified; a refused one is repaired from its gate;
steps that cannot run go back to the model; ``$N.path`` arguments take earlier results."""

from __future__ import annotations

import pytest
from llm_server import TEST_STAGE, make_client, within

from envmill.schemas.scengen import PlannedStep, ScenGenSettings
from envmill.schemas.skeleton import SkeletonSettings
from envmill.tasks.backends.llm.scengen.build import EnvironmentBrief, make_llm_scenarios
from envmill.tasks.backends.llm.scengen.solution import resolve
from envmill.tasks.backends.llm.skelbuilder import build_environment
from envmill.tasks.backends.llm.skelbuilder.asking import Asker
from envmill.tasks.offline_llm import serve_endpoint

LIBRARY = "public library lending: renew loan with waitlists, online, for a startup"
CHANGES = {"change": 1.0}  # scenarios of one kind, whose answers a test can name
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
    from envmill.tasks.offline_llm.scenarios import scenario_for

    env, brief = library
    seen = scenario_for(LIBRARY, 0).initial_state  # what the model answers for scenario 0
    again = (env, EnvironmentBrief(brief.topic, brief.introduction, brief.business_rules, seen))
    made, _ = scenarios(endpoint, sandbox, tmp_path, again, 2, answer_rounds=1, kinds=CHANGES)
    (skip,) = made.skipped
    assert skip.index == 0 and skip.code == "unusable_answer"
    assert "repeats most records of one already used" in skip.message
    assert len(made.scenarios) == 1


def test_a_reference_to_a_missing_record_is_named():
    from envmill.tasks.backends.llm.scengen.references import dangling_reference

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
    from envmill.tasks.backends.llm.scengen import build

    certify = build.certify_scenario
    broken = {"first": True}

    def flaky(spec, env, box, **options):
        if broken.pop("first", False):
            raise RuntimeError("the checks host died")
        return certify(spec, env, box, **options)

    endpoint.configure(slips=[])
    monkeypatch.setattr(build, "certify_scenario", flaky)
    made, _ = scenarios(endpoint, sandbox, tmp_path, library, count=2, scenario_threads=1)
    (skip,) = made.skipped
    assert skip.code == "scenario_error" and "the checks host died" in skip.message
    assert [made.reports[s.scenario_id].status for s in made.scenarios] == ["certified"]


def test_states_keep_the_invariants_their_example_keeps():
    from envmill.tasks.backends.llm.scengen.invariants import broken_invariant

    example = {
        "books": {"BK-1": {"book_id": "BK-1", "copies_available": 1, "copies_total": 2}},
        "loans": {"LN-1": {"loan_id": "LN-1", "fee": 0.5, "offset": -2}},
        "next_loan_number": 2,
    }
    state = {
        "books": {"BK-7": {"book_id": "BK-7", "copies_available": 2, "copies_total": 2}},
        "loans": {"LN-4": {"loan_id": "LN-4", "fee": 0.0, "offset": -9}},
        "next_loan_number": 5,
    }
    assert broken_invariant(state, example) is None  # a negative offset is the example's way
    assert broken_invariant(state | {"next_loan_number": 4}, example) == (
        "next_loan_number is 4, but loans already holds number 4; the counter must be above "
        "every existing id (5 or more) or a new record would overwrite one"
    )
    wrong = [
        ({"BK-7": {"book_id": "BK-8", "copies_available": 2, "copies_total": 2}}, "not its key"),
        ({"BK-7": {"book_id": "BK-7", "copies_available": 3, "copies_total": 2}}, "at most"),
        ({"BK-7": {"book_id": "BK-7", "copies_available": -1, "copies_total": 2}}, "negative"),
    ]
    for books, said in wrong:
        assert said in broken_invariant(state | {"books": books}, example)
    lax = example | {"next_loan_number": 1}  # an example whose counter lags sets no such rule
    assert broken_invariant(state | {"next_loan_number": 1}, lax) is None
    for odd in (None, 1.5, "x", [], {}, {"LN-9": {}}, {"a": 1}, [[1]], -1):  # never an error
        for attr in state:
            broken_invariant(state | {attr: odd}, example)
            broken_invariant(state, example | {attr: odd})


def test_a_state_that_breaks_an_invariant_goes_back_with_the_rule(
    endpoint, sandbox, tmp_path, library
):
    env, brief = library
    declared = EnvironmentBrief(
        brief.topic,
        brief.introduction,
        brief.business_rules,
        brief.example_state,
        invariants=lambda state: ["loan LN-1: due before it was borrowed"] if state else [],
    )
    endpoint.configure(slips=[{"kind": "counter_behind"}])
    endpoint.reset()
    made, asker = scenarios(endpoint, sandbox, tmp_path, library, count=1)
    (spec,) = made.scenarios
    assert made.reports[spec.scenario_id].status == "certified"
    assert asker.calls == 4  # the state was asked for twice
    assert made.repairs[spec.scenario_id] == 1  # not "certified at once"
    refused = [r for r in asker.records if r.outcome == "refused"]
    assert [(r.stage, r.error_class) for r in refused] == [("scenario_state", "RefusedAnswer")]
    assert "the counter must be above every existing id" in refused[0].error
    assert asker.refused == 1 and sum(r.outcome == "ok" for r in asker.records) == 3
    (_, retried) = [r["body"]["messages"] for r in endpoint.requests("scenario_state")]
    assert "the counter must be above every existing id" in retried[-1]["content"]
    endpoint.configure(slips=[])
    made, _ = scenarios(endpoint, sandbox, tmp_path / "b", (env, declared), 1, answer_rounds=1)
    (skip,) = made.skipped
    assert "a rule of the domain does not hold: loan LN-1: due before" in skip.message


def test_checks_a_partial_solution_passes_are_repaired_and_counted(
    endpoint, sandbox, tmp_path, library
):
    endpoint.configure(slips=[{"kind": "forgetful_checks"}])
    made, _ = scenarios(endpoint, sandbox, tmp_path, library, count=4)
    reports = [made.reports[s.scenario_id] for s in made.scenarios]
    assert [r.status for r in reports] == ["certified"] * 4
    repaired = [s for s in made.scenarios if made.repairs[s.scenario_id]]
    assert repaired, "no scenario had a partial solution keep full reward"
    assert all(len(s.checks) > 2 for s in repaired)  # the repair restored the forgotten checks
    endpoint.configure(slips=[{"kind": "forgetful_checks", "persistent": True}])
    made, _ = scenarios(endpoint, sandbox, tmp_path / "b", library, count=4, repair_rounds=1)
    refused = [s for s in made.scenarios if made.reports[s.scenario_id].status == "rejected"]
    gates = {made.reports[s.scenario_id].rejected_gate for s in refused}
    assert gates and gates <= {"partial_fails", "guards_collateral"}
    assert {made.repairs[s.scenario_id] for s in refused} == {1}
    endpoint.configure(slips=[])


def test_a_task_that_names_an_id_the_system_will_give_is_refused():
    from envmill.tasks.backends.llm.scengen.solution import generated_value_named

    initial = {"loans": {"LN-1": {}}, "next_loan_number": 2}
    final = {"loans": {"LN-1": {}, "LN-2": {}}, "next_loan_number": 3}
    said = generated_value_named('["Renew LN-1 and open loan LN-2 for Ann", {}]', initial, final)
    assert said.startswith("the task names 'LN-2', the id the system gives the new loans record")
    assert generated_value_named('["Renew LN-1, then lend to Ann", {}]', initial, final) is None
    assert generated_value_named('["Renew LN-20", {}]', initial, final) is None  # another id


def test_of_two_alike_states_the_later_scenario_is_refused_whichever_answers_first(
    endpoint, sandbox, tmp_path, library
):
    """Scenarios 0 and 1 get the same state, scenario 0's a second later: scenario 1 still
    waits for it and is the one refused, so the same answers make the same scenarios."""
    import time

    from envmill.tasks.offline_llm import answering
    from envmill.tasks.offline_llm.scenarios import scenario_for
    from envmill.tasks.offline_llm.skeleton import answer, topic_of

    def alike(request):
        if "Scenario: 0" in request.texts("user")[0]:
            time.sleep(1.0)
        return answer({"state": scenario_for(topic_of(request), 0).initial_state})

    endpoint.configure(slips=[])
    with answering("scenario_state", alike):
        made, _ = scenarios(endpoint, sandbox, tmp_path, library, 2, answer_rounds=1, kinds=CHANGES)
    (skip,) = made.skipped
    assert skip.index == 1 and "repeats most records" in skip.message
    assert len(made.scenarios) == 1


def test_a_state_prompt_shows_the_earlier_scenarios_and_the_rules_it_is_checked_by(
    endpoint, sandbox, tmp_path, library
):
    endpoint.configure(slips=[])
    endpoint.reset()
    made, _ = scenarios(endpoint, sandbox, tmp_path, library, count=3)
    assert len(made.scenarios) == 3
    prompts = {}
    for request in endpoint.requests("scenario_state"):
        text = request["body"]["messages"][-1]["content"]
        prompts[int(text.split("Scenario: ", 1)[1].split("\n", 1)[0])] = request["body"]
    assert "Earlier scenarios" not in prompts[0]["messages"][-1]["content"]
    shown = prompts[2]["messages"][-1]["content"].split("Earlier scenarios", 1)[1]
    for spec in made.scenarios[:2]:  # scenario 0's and 1's task and some of their records
        assert f'task "{spec.task}"' in shown
        some_key = next(iter(next(v for v in spec.initial_state.values() if isinstance(v, dict))))
        assert some_key in shown
    system = prompts[0]["messages"][0]["content"]
    assert "The state is checked against these rules, which the example keeps" in system
    assert "is above the number in every id of `" in system and "never more than 12" in system


def test_a_state_with_more_records_than_the_prompt_allows_is_refused(library, sandbox):
    from envmill.tasks.backends.llm.skelbuilder.initial_state import MAX_RECORDS, state_problem

    env, brief = library
    state = dict(brief.example_state)
    attr, records = next((k, v) for k, v in state.items() if isinstance(v, dict) and v)
    template = next(iter(records.values()))
    state[attr] = {f"X-{n}": dict(template) for n in range(MAX_RECORDS + 1)}
    said = state_problem(state, env, sandbox)
    assert (
        said == f"{attr} holds {MAX_RECORDS + 1} records; give at most {MAX_RECORDS} per collection"
    )
    assert state_problem(brief.example_state, env, sandbox) is None


def test_the_invariants_a_state_is_checked_by_are_said_in_words():
    from envmill.tasks.backends.llm.scengen.invariants import broken_invariant, invariant_rules

    example = {
        "books": {"B-1": {"book_id": "B-1", "copies_available": 1, "copies_total": 3}},
        "loans": {"LN-3": {"loan_id": "LN-3", "fine": 0.0, "offset": -2}},
        "next_loan_number": 4,
    }
    rules = invariant_rules(example)
    assert rules == [
        "`books`: `book_id` equals the record's key",
        "`books`: `copies_available`, `copies_total` never negative",
        "`books`: `copies_available` is at most `copies_total`",
        "`loans`: `loan_id` equals the record's key",
        "`loans`: `fine` never negative",
        "`next_loan_number` is above the number in every id of `loans`",
    ]
    # each rule said is one the check holds a state to
    broken = {
        0: {
            **example,
            "books": {"B-1": {"book_id": "B-2", "copies_available": 1, "copies_total": 3}},
        },
        2: {
            **example,
            "books": {"B-1": {"book_id": "B-1", "copies_available": 4, "copies_total": 3}},
        },
        4: {**example, "loans": {"LN-3": {"loan_id": "LN-3", "fine": -1.0, "offset": -2}}},
        5: {**example, "next_loan_number": 3},
    }
    for number, state in broken.items():
        assert broken_invariant(state, example), rules[number]
    assert broken_invariant(example, example) is None


@pytest.mark.parametrize("kind", ["conditional", "refusal", "answer", "created_chain"])
def test_each_kind_asked_for_is_written_checked_and_certified(
    endpoint, sandbox, tmp_path, library, kind
):
    endpoint.configure(slips=[])
    made, asker = scenarios(endpoint, sandbox, tmp_path, library, count=2, kinds={kind: 1.0})
    assert made.scenarios, [s.message for s in made.skipped]
    for spec in made.scenarios:
        assert spec.kind == kind and made.reports[spec.scenario_id].status == "certified"
        assert (spec.refusal is not None) == (kind == "refusal")
        assert (spec.expected_answer is not None) == (kind in ("conditional", "answer"))
    tasks = [r["body"]["messages"][-1]["content"] for r in endpoint.requests("scenario_task")]
    assert all(f"Kind: {kind}\n" in text for text in tasks[-len(made.scenarios) :])


def test_a_reply_the_judge_would_refuse_goes_back_with_the_task_not_the_checks(
    endpoint, sandbox, tmp_path, library
):
    """A reference reply that hedges is refused where the model can still reword it (the task
    stage), not at certification, whose repairs only rewrite checks."""
    import json

    from envmill.tasks.offline_llm import ChatReply, answering
    from envmill.tasks.offline_llm.scenarios import respond_scenario_task

    def hedging(request):
        said = json.loads(respond_scenario_task(request).content)
        if "expected_answer" in said and not request.texts("assistant"):
            said["reply"] = "It could be one thing or another; I am not sure."
        return ChatReply(content=json.dumps(said))

    endpoint.configure(slips=[])
    with answering("scenario_task", hedging):
        made, asker = scenarios(endpoint, sandbox, tmp_path, library, 2, kinds={"answer": 1.0})
    assert [made.reports[s.scenario_id].status for s in made.scenarios] == ["certified"] * 2
    refused = [r for r in asker.records if r.outcome == "refused"]
    assert len(refused) == 2 and {r.stage for r in refused} == {"scenario_task"}
    assert all(
        "envmill's judge does not read it as the expected answer" in r.error for r in refused
    )
    assert not [r for r in asker.records if r.stage == "scenario_repair"]
