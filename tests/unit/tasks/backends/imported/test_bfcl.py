"""The BFCL adapter without a process: the generator, the codec, call strings, package errors,
schemas and the static policy on every class set of multi_turn_base."""

from __future__ import annotations

import importlib.util
import json
import random

import pytest

from envmill.tasks.backends.imported.bfcl import package
from envmill.tasks.backends.imported.bfcl.adapt import build_environment
from envmill.tasks.backends.imported.bfcl.calls import CallError, parse_call, render_call
from envmill.tasks.backends.imported.bfcl.codec import decode_value, encode_fields
from envmill.tasks.backends.imported.bfcl.mtrandom import _SeededRandom
from envmill.tasks.backends.imported.bfcl.package import BfclDataError, read_func_docs, read_tasks
from envmill.tasks.backends.imported.bfcl.replay import tool_parameters
from envmill.tasks.backends.imported.bfcl.schemas import convert_func_doc
from envmill.tasks.envs.policy import check_module
from envmill.tasks.envs.reading import derive_tool_schemas, find_environment_class, parse_module

CLASS_SETS = sorted({tuple(t.involved_classes) for t in read_tasks("multi_turn_base")})


@pytest.mark.parametrize("seed", [0, 1, 141053, 200191, 1053520, 2**40 + 7, -3])
def test_generator_draws_as_cpython(seed):
    theirs, ours = random.Random(seed), _SeededRandom(seed)
    for _ in range(700):  # past one 624-word block
        assert ours.randint(10000, 99999) == theirs.randint(10000, 99999)
        assert ours.uniform(-10.0, 40.0) == theirs.uniform(-10.0, 40.0)
        assert ours.randint(100000000000, 999999999999) == theirs.randint(
            100000000000, 999999999999
        )
        assert ours.random() == theirs.random()
        assert ours.getrandbits(70) == theirs.getrandbits(70)
        assert ours.choice("abcdefg") == theirs.choice("abcdefg")
        assert ours.randrange(3, 50, 4) == theirs.randrange(3, 50, 4)
    items_a, items_b = list(range(20)), list(range(20))
    ours.shuffle(items_a)
    theirs.shuffle(items_b)
    assert items_a == items_b
    restored = _SeededRandom(0)
    restored.restore(seed, ours.drawn)  # seed and count rebuild the generator
    assert [restored.random() for _ in range(5)] == [theirs.random() for _ in range(5)]


class Node:
    def __init__(self, name, parent=None):
        self.name, self.parent, self.children = name, parent, {}


KINDS = (
    (
        "Node",
        Node,
        lambda n: {"name": n.name, "parent": n.parent, "children": n.children},
        lambda: Node(None),
        lambda n, f: n.__dict__.update(f),
    ),
)


def test_codec_round_trips_objects_cycles_and_python_values():
    import datetime
    import decimal

    root = Node("/")
    child = Node("a", root)
    root.children["a"] = child
    fields = {
        "root": root,
        "here": child,
        "ids": {3, 1, 2},
        "tweets": {0: {"id": 0}, "$x": (1, 2)},
        "when": datetime.datetime(2024, 9, 1, 10, 30),
        "amount": decimal.Decimal("1.50"),
    }
    encoded = json.loads(json.dumps(encode_fields(fields, KINDS), sort_keys=True))
    decoded = decode_value(encoded, KINDS)  # references resolve in any key order
    assert decoded["here"].parent is decoded["root"]
    assert decoded["root"].children["a"] is decoded["here"]
    assert decoded["ids"] == {1, 2, 3} and decoded["tweets"] == {0: {"id": 0}, "$x": (1, 2)}
    assert decoded["when"] == fields["when"] and decoded["amount"] == fields["amount"]


def test_every_ground_truth_call_parses_and_renders_back():
    count = 0
    for category in package.CATEGORIES:
        for task in read_tasks(category):
            parameters = {
                doc["name"]: list(doc["parameters"].get("properties", {}))
                for name in task.involved_classes
                for doc in read_func_docs(name)
            }
            for call in (c for turn in task.ground_truth for c in turn):
                step = parse_call(call, parameters)
                assert parse_call(render_call(step), parameters) == step
                count += 1
    assert count > 3000


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('x')",
        "ls(a=open('/etc/passwd'))",
        "os.system('ls')",
        "ls(**{'a': True})",
        "ls(a=True); rm(file_name='x')",
        "cd(folder='a', folder='b')",
        "unknown_tool()",
        "ls(a=(lambda: 1)())",
        "cd('a', 'b')",
        "cd(x.y)",
    ],
)
def test_hostile_or_odd_calls_are_refused_in_one_line(text):
    with pytest.raises(CallError) as refused:
        parse_call(text, {"ls": ["a"], "cd": ["folder"], "rm": ["file_name"]})
    assert "\n" not in str(refused.value)


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BfclDataError, match="pip install --no-deps bfcl-eval==2026.3.23"):
        package.package_root()


def test_broken_question_line_names_file_and_line(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "possible_answer").mkdir(parents=True)
    good = {"id": "multi_turn_base_0", "ground_truth": [["ls()"]]}
    (data / "possible_answer" / "BFCL_v4_multi_turn_base.json").write_text(json.dumps(good))
    (data / "BFCL_v4_multi_turn_base.json").write_text('{"id": "multi_turn_base_0"}\n')
    monkeypatch.setattr(package, "package_root", lambda: tmp_path)
    with pytest.raises(BfclDataError, match=r"BFCL_v4_multi_turn_base.json:1: a task needs"):
        read_tasks("multi_turn_base")
    (data / "BFCL_v4_multi_turn_base.json").write_text('{"id": "multi_turn_base_0"}\n{"id": \n')
    with pytest.raises(BfclDataError, match=r"BFCL_v4_multi_turn_base.json:2: not a JSON line"):
        read_tasks("multi_turn_base")


def test_tasks_are_typed_records():
    tasks = read_tasks("multi_turn_base")
    assert len(tasks) == 200 and len(CLASS_SETS) == 20
    first = tasks[0]
    assert first.involved_classes == ["TwitterAPI", "GorillaFileSystem"]
    assert first.turns[0].startswith("Move 'final_report.pdf'")
    assert first.ground_truth[2] == ["sort('final_report.pdf')"]
    miss = read_tasks("multi_turn_miss_func")
    assert any(None in t.turns and t.missed_function for t in miss)


def test_bfcl_types_become_json_schema():
    doc = {
        "name": "f",
        "description": "d",
        "parameters": {
            "type": "dict",
            "properties": {
                "a": {"type": "float"},
                "b": {"type": "tuple", "items": {"type": "dict", "properties": {}}},
                "c": {"type": "any"},
            },
            "required": ["a"],
        },
    }
    params = convert_func_doc(doc)["function"]["parameters"]
    assert params["type"] == "object" and params["required"] == ["a"]
    assert params["properties"] == {
        "a": {"type": "number"},
        "b": {"type": "array", "items": {"type": "object", "properties": {}}},
        "c": {},
    }


@pytest.mark.parametrize("classes", CLASS_SETS, ids="+".join)
def test_class_set_adapts_and_passes_the_policy(classes):
    env = build_environment(list(classes))
    assert check_module(env.source) == []
    assert find_environment_class(parse_module(env.source)).name == env.class_name
    derived = {t.function.name: t.function.parameters for t in derive_tool_schemas(env.source)}
    for schema in env.tool_schemas:  # the docstrings say what BFCL's docs say
        bfcl = schema["function"]["parameters"]
        ours = derived[schema["function"]["name"]]
        assert list(ours["properties"]) == list(bfcl["properties"])
        assert set(ours["required"]) == set(bfcl["required"])
        for name, prop in bfcl["properties"].items():
            types = ours["properties"][name].get("type")
            if "type" in prop:
                assert prop["type"] == types or prop["type"] in (types or [])
    assert set(tool_parameters(env)) == set(derived)
    if "MathAPI" in classes:
        assert "mpmath" in env.refused["logarithm"]
