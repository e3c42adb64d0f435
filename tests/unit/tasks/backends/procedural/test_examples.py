"""``examples``: field values that belong together stay together, in the filled state and in
the arguments a create draws (a Headlight Bulb is never filed under brakes)."""

from __future__ import annotations

import copy
import random
from types import SimpleNamespace

import pytest
import yaml
from faker import Faker

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain, parse_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ArgumentDrawer
from envmill.tasks.backends.procedural.scenarios.namesakes import _twin
from envmill.tasks.backends.procedural.spec.domain import SpecError
from envmill.tasks.backends.procedural.state.fill import build_initial_state


def _pairs(entity) -> set[tuple]:
    return {tuple(sorted(example.items())) for example in entity.examples}


def _agrees(record: dict, entity) -> bool:
    """The record's example fields are one whole example, or none of the label's examples."""
    label_examples = [e for e in entity.examples if e.get(entity.label) == record[entity.label]]
    return not label_examples or any(
        all(record.get(name) == value for name, value in e.items()) for e in label_examples
    )


@pytest.mark.parametrize(
    "domain",
    [d for d in list_domains() if any(e.examples for e in load_domain(d).entities.values())],
)
def test_filled_records_keep_their_examples_whole(domain: str) -> None:
    spec = load_domain(domain)
    for seed in range(3):
        compiled = compile_environment(spec, seed)
        state = build_initial_state(compiled, seed)
        for name, entity in compiled.spec.entities.items():
            if not entity.examples or name not in compiled.entity_attrs:
                continue
            records = state[compiled.entity_attrs[name]].values()
            bad = [r for r in records if entity.label and not _agrees(r, entity)]
            assert not bad, (domain, name, bad[:2])


def test_a_part_is_filed_under_its_own_category() -> None:
    compiled = compile_environment(load_domain("auto_repair"), 0)
    part = compiled.spec.entities["part"]
    seen = set()
    for seed in range(6):
        for record in build_initial_state(compiled, seed)["parts"].values():
            seen.add((record["name"], record["category"]))
    assert seen and seen <= {(e["name"], e["category"]) for e in part.examples}


def test_a_create_draws_its_arguments_from_one_example() -> None:
    spec = copy.deepcopy(load_domain("auto_repair"))
    spec.entities["work_order"].examples = [
        {"service": "brakes", "mechanic": "Dana Kim"},
        {"service": "aircon", "mechanic": "Tom Becker"},
    ]
    compiled = compile_environment(spec, 0)
    tool = next(t for t in compiled.tools if t.examples)
    drawer = ArgumentDrawer(compiled, random.Random(3), Faker())
    state = build_initial_state(compiled, 0)
    for _ in range(20):
        arguments = drawer.draw_arguments(tool, state)
        assert arguments is not None
        together = {k: v for k, v in arguments.items() if k in tool.examples[0]}
        assert together in tool.examples


def test_an_example_naming_an_unknown_field_or_choice_is_refused() -> None:
    text = (
        "name: mini\ntitle: Mini\ntopic: t\nintroduction: i\nclass_names: [Mini]\n"
        "entities:\n  part:\n    id_format: 'P-{n}'\n    label: name\n"
        "    fields:\n      name: str\n      category: {type: 'enum(a, b)'}\n"
        "    examples:\n      - {name: Bolt, category: EXAMPLE}\n"
    )
    with pytest.raises(SpecError, match="not a 'category' choice"):
        parse_domain(yaml.safe_load(text.replace("EXAMPLE", "c")))
    with pytest.raises(SpecError, match="not a plain field"):
        parse_domain(yaml.safe_load(text.replace("category: EXAMPLE", "colour: red")))


def test_a_namesake_is_not_a_copy_of_the_target_example():
    """Two Pamela Austins with the same income and FICO (85000/734) read as a copy: a record
    holding the target's untied example values is never made its namesake."""
    compiled = compile_environment(load_domain("loans"), 0)
    people = {
        "BR-1": ("Pamela Austin", 85000.0, 734),
        "BR-2": ("Jo Diaz", 85000.0, 734),
        "BR-3": ("Li Wong", 52000.0, 671),
    }
    borrowers = {
        key: {"borrower_id": key, "name": name, "email": f"{key}@example.com",
              "phone": "555-0100", "annual_income": income, "fico_score": fico}
        for key, (name, income, fico) in people.items()
    }  # fmt: skip
    state = {"borrowers": borrowers}
    chain = SimpleNamespace(initial_state=state, final_state=state, solution=[])
    mention = ArgMention("borrower_id", "BR-1", "entity_id", "borrower", "Pamela Austin", "name",
                         by_label=True)  # fmt: skip
    twins = {(_twin(chain, compiled, mention, random.Random(s)) or (None,))[0] for s in range(12)}
    assert twins == {"BR-3"}
