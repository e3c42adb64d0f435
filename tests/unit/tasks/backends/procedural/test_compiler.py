"""The procedural compiler and state fill, checked statically (no generated code runs here; the
sandbox integration tests execute it)."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import string
import sys

import pytest

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.state.fill import build_initial_state

DOMAINS = list_domains()
SEEDS = (0, 1)
ALLOWED_IMPORTS = {"typing", "datetime", "copy", "re", "math"}


def env_id(source: str) -> str:
    try:
        from envmill.tasks.envs.reading import compute_env_id
    except ImportError:  # pragma: no cover - the helper module may not exist yet
        return hashlib.sha256(ast.unparse(ast.parse(source)).encode()).hexdigest()[:16]
    return compute_env_id(source)


@pytest.fixture(scope="module")
def compiled() -> dict[tuple[str, int], CompiledEnvironment]:
    return {(d, s): compile_environment(load_domain(d), s) for d in DOMAINS for s in SEEDS}


@pytest.fixture(scope="module")
def trees(compiled) -> dict[tuple[str, int], ast.Module]:
    return {key: ast.parse(env.source) for key, env in compiled.items()}


def env_class(tree: ast.Module) -> ast.ClassDef:
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    envs = [c for c in classes if not any(ast.unparse(b) == "TypedDict" for b in c.bases)]
    assert len(envs) == 1
    return envs[0]


def methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in cls.body if isinstance(node, ast.FunctionDef)}


def test_module_parses_and_declares_exactly_the_manifest_tools(compiled, trees):
    for key, env in compiled.items():
        cls = env_class(trees[key])
        assert cls.name == env.class_name
        public = [name for name in methods(cls) if not name.startswith("_")]
        assert public == [tool.tool for tool in env.tools]


def test_imports_only_allowed_modules(trees):
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert {alias.name for alias in node.names} <= ALLOWED_IMPORTS
            if isinstance(node, ast.ImportFrom):
                assert node.module in ALLOWED_IMPORTS


def state_attributes(env: CompiledEnvironment) -> set[str]:
    entities = env.entity_attrs
    acting = {env.acting_role_attr, env.acting_id_attr} - {None}
    return {*entities.values(), *(f"next_{e}_number" for e in entities), "current_time", *acting}


def test_init_takes_no_arguments_and_creates_every_state_attribute(compiled, trees):
    for key, env in compiled.items():
        init = methods(env_class(trees[key]))["__init__"]
        assert [arg.arg for arg in init.args.args] == ["self"]
        assigned = {
            node.target.attr
            for node in ast.walk(init)
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute)
        }
        assert assigned == state_attributes(env)


def test_tools_have_type_hints_and_google_docstrings(compiled, trees):
    for key, env in compiled.items():
        tools = methods(env_class(trees[key]))
        for tool in env.tools:
            fn = tools[tool.tool]
            params = fn.args.args[1:]
            assert fn.returns is not None and all(p.annotation is not None for p in params)
            doc = ast.get_docstring(fn)
            assert doc and doc.splitlines()[0].strip()
            if params:
                assert "\nArgs:\n" in doc
                for param in params:
                    assert re.search(rf"^    {param.arg}( \([^)]*\))?: \S", doc, re.M), param.arg


def test_generated_code_avoids_forbidden_constructs(compiled, trees):
    for key, env in compiled.items():
        tree = trees[key]
        for node in tree.body:
            is_docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            assert is_docstring or isinstance(node, ast.Import | ast.ImportFrom | ast.ClassDef)
        for node in ast.walk(tree):
            assert not isinstance(node, ast.Global | ast.Nonlocal | ast.Raise | ast.Lambda)
            if isinstance(node, ast.Attribute):
                assert not node.attr.startswith("__")
            if isinstance(node, ast.Name):
                assert node.id not in {"getattr", "setattr", "open", "eval", "exec", "random"}
        assert "datetime.now" not in env.source and "today()" not in env.source


def test_policy_accepts_every_compiled_module(compiled):
    policy = pytest.importorskip("envmill.tasks.envs.policy")
    for (domain, seed), env in compiled.items():
        assert policy.check_module(env.source) == [], (domain, seed)


def test_average_tool_count_and_both_kinds(compiled):
    counts = []
    for env in compiled.values():
        kinds = {tool.kind for tool in env.tools}
        assert kinds == {"query", "state_change"}
        counts.append(len(env.tools))
    assert sum(counts) / len(counts) >= 15


def test_same_seed_gives_same_source_and_env_id(compiled):
    for domain in DOMAINS[::3]:
        again = compile_environment(load_domain(domain), 1)
        assert again.source == compiled[(domain, 1)].source
        assert again == compiled[(domain, 1)]
        assert env_id(again.source) == env_id(compiled[(domain, 1)].source)


@pytest.mark.parametrize("domain", DOMAINS)
def test_seeds_vary_env_id_and_tool_set(domain, compiled):
    more = [compile_environment(load_domain(domain), seed) for seed in (2, 3, 4)]
    envs = [compiled[(domain, seed)] for seed in SEEDS] + more
    assert len({env_id(env.source) for env in envs}) == 5
    assert len({frozenset(tool.tool for tool in env.tools) for env in envs}) >= 2


def placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}


def test_manifest_arguments_and_phrases_are_consistent(compiled):
    for env in compiled.values():
        tools = {tool.tool: tool for tool in env.tools}
        for tool in env.tools:
            low, high = (2, 4) if tool.kind == "state_change" else (1, 2)
            assert low <= len(tool.phrases) <= high, tool.tool
            names = {arg.name for arg in tool.args}
            for phrase in tool.phrases:
                assert {p.split(".")[0] for p in placeholders(phrase)} <= names, phrase
            for arg in tool.args:
                if arg.source == "entity_id":
                    assert env.entity_attrs[arg.entity] == arg.state_attr
                if arg.source == "enum":
                    assert arg.values
                if arg.lookup_tool is not None:
                    lookup = tools[arg.lookup_tool]
                    assert lookup.kind == "query"
                    assert arg.lookup_arg in {a.name for a in lookup.args}
                    assert env.label_fields[arg.entity] == arg.label_field
        assert env.business_rules and env.introduction and env.topic


def test_manifest_agrees_with_derived_tool_schemas(compiled):
    envmodule = pytest.importorskip("envmill.tasks.envs.reading")
    from envmill.tasks.envs.tool_kinds import classify_tools

    for env in compiled.values():
        schemas = {s.function.name: s.function for s in envmodule.derive_tool_schemas(env.source)}
        kinds = classify_tools(env.source)
        for tool in env.tools:
            required = {arg.name for arg in tool.args if arg.required}
            assert set(schemas[tool.tool].parameters.get("required", [])) == required
            assert kinds[tool.tool] == tool.kind


@pytest.fixture(scope="module")
def states(compiled) -> dict[str, dict]:
    return {domain: build_initial_state(compiled[(domain, 0)], 11) for domain in DOMAINS}


def test_initial_state_is_json_and_deterministic(compiled, states):
    for domain, state in states.items():
        assert json.loads(json.dumps(state)) == state
        assert build_initial_state(compiled[(domain, 0)], 11) == state
        assert build_initial_state(compiled[(domain, 0)], 12) != state
        assert set(state) == state_attributes(compiled[(domain, 0)])
        assert state["current_time"].startswith("2025-")


def test_initial_state_records_match_spec(compiled, states):
    for domain, state in states.items():
        spec = load_domain(domain)
        for name, attr in compiled[(domain, 0)].entity_attrs.items():
            entity, rows = spec.entities[name], state[attr]
            assert 1 <= len(rows) and state[entity.counter] == len(rows) + 1
            for record_id, row in rows.items():
                assert row[entity.id_field] == record_id
                assert set(row) == {entity.id_field, *entity.fields}
                check_record(spec, state, compiled[(domain, 0)], entity, row)


def check_record(spec, state, env, entity, row) -> None:
    for field_name, field in entity.fields.items():
        value = row[field_name]
        if value is None:
            assert field.nullable, (entity.name, field_name)
        elif field.type == "ref":
            assert value in state[env.entity_attrs[field.entity]], (entity.name, field_name)
        elif field.type == "enum":
            assert value in field.values
        elif field.type in ("int", "float"):
            assert field.min is None or value >= field.min
            assert field.max is None or value <= field.max


def test_initial_state_matches_derived_state_schema(compiled, states):
    envmodule = pytest.importorskip("envmill.tasks.envs.reading")
    jsonschema = pytest.importorskip("jsonschema")
    for domain, state in states.items():
        jsonschema.validate(state, envmodule.derive_state_schema(compiled[(domain, 0)].source))


def test_names_drawn_in_threads_are_those_drawn_alone():
    """The llm scenarios path compiles catalog environments on item threads: the name generator
    they share must not be reseeded by one compile halfway through another's draw."""
    from concurrent.futures import ThreadPoolExecutor

    from envmill.tasks.backends.procedural.codegen.tool_manifest import plain_names

    keys = [f"airline:{seed}:book_flight:passenger_name" for seed in range(64)]
    alone = [plain_names(key) for key in keys]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns often, as under a loaded worker
    try:
        with ThreadPoolExecutor(16) as pool:
            assert list(pool.map(plain_names, keys)) == alone
    finally:
        sys.setswitchinterval(interval)
