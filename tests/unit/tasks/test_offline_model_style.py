"""The offline model's model style without a server: a topic picks one of its designs, the style
is a setting (procedural by default), answers are the same for the same request, each design's
operations are its methods, its names are none of the procedural catalog's, its states keep the
rules the state prompts state, and its checks hold on what the steps did and not before."""

from __future__ import annotations

import json

import pytest

from envmill.schemas.ids import canonical_json
from envmill.tasks.backends.llm.scengen.invariants import broken_invariant
from envmill.tasks.backends.llm.scengen.references import dangling_reference
from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.offline_llm import EndpointConfig
from envmill.tasks.offline_llm.model_style import DESIGNS, design_for
from envmill.tasks.offline_llm.model_style.checklist import checklist
from envmill.tasks.offline_llm.responders import ChatRequest, respond

KINDS = ("change", "filtered_lookup", "created_chain", "conditional", "disambiguation")


def test_a_topic_picks_a_design_by_its_words_else_by_its_hash():
    assert design_for("Community blood bank: donors and plasma").key == "blood_bank"
    assert design_for("a tool-lending library for a neighbourhood").key == "tool_library"
    assert design_for("Dental clinic front desk").key == "dental_clinic"
    others = [f"harbour ferry tickets, route {n}" for n in range(30)]
    assert {design_for(topic).key for topic in others} == {d.key for d in DESIGNS}
    assert [design_for(t).key for t in others] == [design_for(t).key for t in others]


def test_the_style_is_a_setting_that_stays_procedural_unless_asked():
    assert EndpointConfig().style == "procedural"
    assert EndpointConfig().updated({"style": "model"}).style == "model"
    with pytest.raises(ValueError, match="style: one of procedural, model"):
        EndpointConfig(style="poetic")


def _asked(stage: str, prompt: str, style: str = "model") -> str | None:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    return respond(ChatRequest(body, stage, style=style)).content


def test_the_same_request_gets_the_same_answer_and_another_scenario_another():
    prompt = "Environment topic: dental clinic front desk\nScenario: {n}\nKind: answer\n"
    first = _asked("scenario_state", prompt.format(n=3))
    assert first == _asked("scenario_state", prompt.format(n=3))
    assert first != _asked("scenario_state", prompt.format(n=4))
    plan = json.loads(_asked("skeleton_plan", "Environment topic: dental clinic front desk") or "")
    procedural = _asked("skeleton_plan", "Environment topic: dental clinic front desk", "x")
    assert plan["class_name"] == "DentalClinicFrontDesk"
    assert json.loads(procedural or "")["class_name"] != plan["class_name"]


def _catalog_names() -> set[str]:
    names = set()
    for domain in list_domains():
        for entity in load_domain(domain).entities.values():
            for operation in entity.operations:
                names |= {operation.name, *operation.aliases}
    return names


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: d.key)
def test_operations_are_the_methods_and_no_name_is_the_catalogs(design):
    operations = design.operations
    assert [op["name"] for op in operations] == list(
        name for tools in design.entities.values() for name in tools
    )
    assert {op["name"] for op in operations} == set(design.methods)
    planned = {entity["name"] for entity in design.plan["entities"]}
    for op in operations:
        assert op["entity"] in planned and op["summary"] and op["constraints"], op
        for parameter in op["parameters"]:
            assert f"{parameter['name']} (" in design.methods[op["name"]], parameter
    kinds = [op["kind"] for op in operations]
    assert kinds.count("query") >= 7 and kinds.count("state_change") >= 7
    assert not set(design.methods) & _catalog_names()


def _records(state: dict) -> set[str]:
    return {
        canonical_json([attr, key, record])
        for attr, value in state.items()
        if isinstance(value, dict)
        for key, record in value.items()
    }


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: d.key)
def test_scenario_states_keep_the_rules_their_prompt_states(design):
    example = design.build_state(7, -1, "change")
    seen = [_records(example)]
    for index, kind in enumerate(KINDS * 2):
        state = design.build_state(7, index, kind)
        assert set(state) == set(example)
        assert all(len(v) <= 12 for v in state.values() if isinstance(v, dict))
        assert dangling_reference(state) is None
        assert broken_invariant(state, example) is None
        records = _records(state)
        assert all(len(records & other) < 0.8 * len(records | other) for other in seen)
        seen.append(records)


def _run(code: str, initial: dict, final: dict) -> bool:
    namespace: dict = {}
    exec(code, namespace)  # a check the model wrote: a pure function of the two states
    return namespace["check"](initial, final)


def test_checks_hold_on_what_the_steps_did_and_find_new_records_by_content():
    initial = {
        "loans": {"LN-1": {"loan_id": "LN-1", "status": "active", "due_on": "2025-05-01"}},
        "members": {"MB-1": {"member_id": "MB-1", "full_name": "Ada Obi", "fees": 0.0}},
        "next_member_number": 2,
    }
    final = json.loads(json.dumps(initial))
    final["loans"]["LN-1"] |= {"status": "returned", "due_on": "2025-05-08"}
    final["members"]["MB-2"] = {"member_id": "MB-2", "full_name": "Li Wu", "fees": 0.0}
    final["next_member_number"] = 3
    checks = checklist(diff_states(initial, final))
    assert len(checks) == 3 and all(item["fact"] for item in checks)
    assert all(_run(item["code"], initial, final) for item in checks)
    assert not any(_run(item["code"], initial, initial) for item in checks)
    renamed = json.loads(json.dumps(final))
    renamed["members"]["MB-9"] = renamed["members"].pop("MB-2") | {"member_id": "MB-9"}
    assert all(_run(item["code"], initial, renamed) for item in checks)  # found by content
