"""Static reading of environment modules: id, class, tool schemas, tool kinds, state schema."""

from __future__ import annotations

import ast
import textwrap

import jsonschema
import pytest

from envmill.tasks.envs.reading import (
    EnvModuleError,
    compute_env_id,
    derive_state_schema,
    derive_tool_schemas,
    find_environment_class,
)
from envmill.tasks.envs.tool_kinds import classify_tools

PRELUDE = """
from enum import Enum
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Union
import typing
from typing_extensions import NotRequired, Required, TypedDict


class Status(str, Enum):
    AVAILABLE = "available"
    LOANED = "loaned"


class Book(TypedDict):
    title: str
    status: Status
    tags: NotRequired[list[str]]


class Patch(TypedDict, total=False):
    title: str
    year: Required[int]


Member = TypedDict("Member", {"name": str, "email": "str | None"})
Loose = TypedDict("Loose", {"note": str}, total=False)
Catalog = dict[str, Book]


class Node(TypedDict):
    name: str
    children: list["Node"]


class LibraryError(Exception):
    pass
"""


def env(methods: str, init: str = "self.books = {}") -> str:
    """A module with the shared type definitions and one environment class."""
    body = textwrap.indent(textwrap.dedent(methods), "    ")
    init_body = textwrap.indent(textwrap.dedent(init), "        ")
    return f"{PRELUDE}\n\nclass Library:\n    def __init__(self):\n{init_body}\n\n{body}"


def tool(methods: str, name: str = "t") -> dict:
    schemas = {s.function.name: s.function for s in derive_tool_schemas(env(methods))}
    return schemas[name].model_dump()


def param(annotation: str, default: str = "") -> tuple[dict, bool]:
    """(property schema, required?) of one parameter ``x`` of a tool ``t``."""
    default_text = f" = {default}" if default else ""
    fn = tool(f"def t(self, x: {annotation}{default_text}) -> dict:\n    return {{}}\n")
    return fn["parameters"]["properties"]["x"], "x" in fn["parameters"]["required"]


BOOK = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "status": {"type": "string", "enum": ["available", "loaned"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["title", "status"],
}


@pytest.mark.parametrize(
    ("annotation", "default", "schema", "required"),
    [
        ("str", "", {"type": "string"}, True),
        ("int", "3", {"type": "integer", "default": 3}, False),
        ("float", "", {"type": "number"}, True),
        ("bool", "False", {"type": "boolean", "default": False}, False),
        # a parameter that takes None says so: its default then fits its own schema
        ("Optional[str]", "", {"type": ["string", "null"]}, False),
        ("str | None", "", {"type": ["string", "null"]}, False),
        ("Union[int, None]", "", {"type": ["integer", "null"]}, False),
        ("typing.Optional[int]", "None", {"type": ["integer", "null"], "default": None}, False),
        ("str", "None", {"type": ["string", "null"], "default": None}, False),
        ("str | None", "'a'", {"type": ["string", "null"], "default": "a"}, False),
        (
            "Literal['a', 'b'] | None",
            "None",
            {"type": ["string", "null"], "enum": ["a", "b", None], "default": None},
            False,
        ),
        (
            "int | str | None",
            "None",
            {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}], "default": None},
            False,
        ),
        ("Any", "None", {"default": None}, False),
        ("Union[int, str]", "", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, True),
        ("list[str]", "", {"type": "array", "items": {"type": "string"}}, True),
        ("List[int]", "", {"type": "array", "items": {"type": "integer"}}, True),
        ("Sequence[float]", "", {"type": "array", "items": {"type": "number"}}, True),
        ("tuple[int, ...]", "", {"type": "array", "items": {"type": "integer"}}, True),
        ("set[str]", "", {"type": "array", "items": {"type": "string"}}, True),
        ("list", "", {"type": "array"}, True),
        (
            "dict[str, list[int]]",
            "",
            {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "integer"}},
            },
            True,
        ),
        ("Dict[str, Any]", "", {"type": "object"}, True),
        (
            "Mapping[str, float]",
            "",
            {"type": "object", "additionalProperties": {"type": "number"}},
            True,
        ),
        ("Literal['a', 'b']", "'a'", {"type": "string", "enum": ["a", "b"], "default": "a"}, False),
        ("Literal[1, 2]", "", {"type": "integer", "enum": [1, 2]}, True),
        ("Status", "", {"type": "string", "enum": ["available", "loaned"]}, True),
        ("Book", "", BOOK, True),
        ("'Book'", "", BOOK, True),
        ("'Book | None'", "", {**BOOK, "type": ["object", "null"]}, False),
        ("Catalog", "", {"type": "object", "additionalProperties": BOOK}, True),
        (
            "Patch",
            "",
            {
                "type": "object",
                "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
                "required": ["year"],
            },
            True,
        ),
        (
            "Member",
            "",
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                "required": ["name", "email"],
            },
            True,
        ),
        (
            "Loose",
            "",
            {"type": "object", "properties": {"note": {"type": "string"}}, "required": []},
            True,
        ),
        (
            "Node",
            "",
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "children": {"type": "array"}},
                "required": ["name", "children"],
            },
            True,
        ),
        ("Any", "", {}, True),
        ("object", "", {}, True),
        ("Unknown", "", {}, True),
        ("'not valid ('", "", {}, True),
    ],
)
def test_parameter_schema(annotation: str, default: str, schema: dict, required: bool) -> None:
    assert param(annotation, default) == (schema, required)


def test_missing_annotation_is_any_and_required() -> None:
    fn = tool("def t(self, x, y=2):\n    return {}\n")
    assert fn["parameters"] == {
        "type": "object",
        "required": ["x"],
        "properties": {"x": {}, "y": {"type": "integer", "default": 2}},
    }


def test_keyword_only_included_and_star_args_ignored() -> None:
    fn = tool(
        "def t(self, a: int, *args, b: str, c: bool = True, **kwargs) -> dict:\n    return {}\n"
    )
    assert list(fn["parameters"]["properties"]) == ["a", "b", "c"]
    assert fn["parameters"]["required"] == ["a", "b"]


DOCSTRING_TOOL = '''
def t(self, title: str, limit: int = 5, mode: "str | None" = None) -> dict:
    """Search   the catalog
    by title.

    Only available books are listed.

    Args:
        title: Part of the title,
            case-insensitive.
        limit (int): At most
            this many results.
        mode (str, optional): Sort mode.

    Returns:
        dict: {"success": True, "data": [...]}.
    """
    return {}
'''


def test_docstring_summary_and_both_args_styles() -> None:
    fn = tool(DOCSTRING_TOOL)
    assert fn["description"] == "Search the catalog by title. Only available books are listed."
    props = fn["parameters"]["properties"]
    assert props["title"]["description"] == "Part of the title, case-insensitive."
    assert props["limit"]["description"] == "At most this many results."
    assert props["mode"] == {
        "type": ["string", "null"],
        "description": "Sort mode.",
        "default": None,
    }
    assert fn["parameters"]["required"] == ["title"]


@pytest.mark.parametrize(
    ("doc", "description"),
    [
        ("", ""),
        ('"""One line."""', "One line."),
        ('"""Summary.\n\nRaises:\n    KeyError: never.\n"""', "Summary."),
        ('"""Summary.\n\nNote:\n    Ignored.\n"""', "Summary."),
    ],
)
def test_description_stops_at_first_section(doc: str, description: str) -> None:
    fn = tool(
        f"def t(self) -> dict:\n    {doc}\n    return {{}}\n"
        if doc
        else "def t(self) -> dict:\n    return {}\n"
    )
    assert fn["description"] == description
    assert fn["parameters"] == {"type": "object", "properties": {}, "required": []}


def test_tools_are_public_non_property_methods_in_source_order() -> None:
    source = env("""
    def b_tool(self) -> dict:
        return {}

    def _helper(self) -> dict:
        return {}

    @property
    def size(self) -> int:
        return len(self.books)

    @staticmethod
    def pure(x: int) -> dict:
        return {}

    async def a_tool(self) -> dict:
        return {}
    """)
    schemas = derive_tool_schemas(source)
    assert [s.function.name for s in schemas] == ["b_tool", "pure", "a_tool"]
    assert schemas[1].function.parameters["required"] == ["x"]
    assert schemas[0].model_dump()["type"] == "function"


# --- env id -------------------------------------------------------------------------------------

BASE = 'class A:\n    def f(self, x: int) -> dict:\n        """Doc."""\n        return {"a": x}\n'


@pytest.mark.parametrize(
    ("other", "same"),
    [
        (
            'class A:\n\n    def f(self, x:int)->dict:\n        """Doc."""\n\n'
            '        return {"a" : x}  # note\n',
            True,
        ),
        ("# header comment\n" + BASE + "\n\n", True),
        (
            "class A:\n    def f(self, x: int) -> dict:\n        'Doc.'\n        return {'a': x}\n",
            True,
        ),
        (BASE.replace("Doc.", "Other doc."), False),
        (BASE.replace('"a"', '"b"'), False),
    ],
)
def test_env_id_is_formatting_insensitive(other: str, same: bool) -> None:
    assert len(compute_env_id(BASE)) == 16
    assert (compute_env_id(other) == compute_env_id(BASE)) is same


def test_syntax_error_is_one_line_env_module_error() -> None:
    with pytest.raises(EnvModuleError, match=r"^line 2: syntax error: ") as info:
        compute_env_id("x = 1\ndef broken(:\n")
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


# --- environment class --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (PRELUDE, "no environment class"),
        ("class A:\n    x: int = 1\n", "no environment class"),
        (
            "class A:\n    def f(self): ...\nclass B:\n    def __init__(self): ...\n",
            "2 environment classes",
        ),
    ],
)
def test_environment_class_count_must_be_one(source: str, message: str) -> None:
    with pytest.raises(EnvModuleError, match=message):
        find_environment_class(ast.parse(source))


def test_type_definitions_are_not_environment_classes() -> None:
    source = PRELUDE + textwrap.dedent("""
    from dataclasses import dataclass
    from typing import NamedTuple

    @dataclass
    class Point:
        def norm(self) -> int: ...

    class Pair(NamedTuple):
        a: int
        def first(self) -> int: ...

    class NotFound(LibraryError):
        def describe(self) -> str: ...

    class Env:
        def _private(self): ...
        def tool(self) -> dict: ...
    """)
    assert find_environment_class(ast.parse(source)).name == "Env"


# --- tool kinds ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("self.count = 1", "state_change"),
        ("self.count += 1", "state_change"),
        ("del self.books[k]", "state_change"),
        ("self.books[k]['status'] = 'x'", "state_change"),
        ("book = self.books[k]\nbook['status'] = 'x'", "state_change"),
        ("book = self.books.get(k)\nif book:\n    book['tags'].append('x')", "state_change"),
        ("shelf = self.books\nentry = shelf.get(k) or {}\nentry['n'] = 1", "state_change"),
        ("for b in self.books.values():\n    b['status'] = 'x'", "state_change"),
        ("for i, b in enumerate(sorted(self.books.values())):\n    b['i'] = i", "state_change"),
        ("self.log.append(k)", "state_change"),
        ("self.books.pop(k, None)", "state_change"),
        ("self.books.update({k: {}})", "state_change"),
        ("self._set(k)", "state_change"),
        ("self._outer(k)", "state_change"),
        ("self._mark(self.books[k])", "state_change"),
        ("_apply(self.books, k)", "state_change"),
        ("setattr(self, 'count', 2)", "state_change"),
        ("x = dict(self.books[k])\nx['status'] = 'x'\nreturn x", "query"),
        ("ids = list(self.books)\nids.sort()\nids.append('z')", "query"),
        ("out = []\nfor b in self.books.values():\n    out.append(dict(b))", "query"),
        ("local = {}\nlocal[k] = self.books.get(k)\nself._read(k)", "query"),
        ("self._mark({'fresh': 1})", "query"),
        ("_apply({}, k)", "query"),
        ("return {'n': len(self.books), 'b': self.books.get(k)}", "query"),
    ],
)
def test_tool_kind(body: str, kind: str) -> None:
    methods = (
        "def t(self, k: str) -> dict:\n" + textwrap.indent(body, "    ") + "\n"
        "    return {}\n\n"
        "def _set(self, k):\n    self.books[k] = {}\n\n"
        "def _outer(self, k):\n    return self._set(k)\n\n"
        "def _mark(self, b):\n    b['status'] = 'marked'\n\n"
        "def _read(self, k):\n    return self.books.get(k)\n\n"
        "def _loop(self):\n    return self._loop()\n"
    )
    source = env(methods) + "\n\ndef _apply(store, k):\n    store[k] = 1\n"
    assert classify_tools(source) == {"t": kind}


def test_recursive_helpers_terminate() -> None:
    source = env(
        "def t(self) -> dict:\n    return self._a()\n\n"
        "def _a(self):\n    return self._b()\n\n"
        "def _b(self):\n    return self._a()\n"
    )
    assert classify_tools(source) == {"t": "query"}


# --- state schema -------------------------------------------------------------------------------

STATE_INIT = """
self.books: Catalog = {}
self.members: dict[str, Member] = {}
self.loans = []
self.next_id = 1
self.rate = 0.5
self.current_time = "2024-01-01T00:00:00"
self.open = True
self.last_member: Optional[str] = None
self.pending = None
self.first, self.second = 0, "s"
"""


def state_source() -> str:
    annotations = "    history: list[Node]\n    limit: typing.ClassVar[int] = 3\n"
    source = env("def t(self) -> dict:\n    return {}\n", STATE_INIT)
    return source.replace("class Library:\n", "class Library:\n" + annotations)


GOOD_STATE = {
    "history": [{"name": "a", "children": []}],
    "books": {"b1": {"title": "Dune", "status": "loaned"}},
    "members": {"m1": {"name": "Ann", "email": None}},
    "loans": [],
    "next_id": 2,
    "rate": 1,
    "current_time": "2024-01-02T00:00:00",
    "open": False,
    "last_member": None,
    "pending": {"any": "thing"},
    "first": 3,
    "second": "t",
}


def test_state_schema_from_annotations_and_defaults() -> None:
    schema = derive_state_schema(state_source())
    assert schema["required"] == list(GOOD_STATE)
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["books"] == {"type": "object", "additionalProperties": BOOK}
    assert props["members"]["additionalProperties"]["properties"]["email"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert props["last_member"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert [props[k] for k in ("loans", "next_id", "rate", "current_time", "open", "pending")] == [
        {"type": "array"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "string"},
        {"type": "boolean"},
        {},
    ]
    assert (props["first"], props["second"]) == ({"type": "integer"}, {"type": "string"})
    jsonschema.validate(GOOD_STATE, schema)


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"next_id": "2"},
        {"open": 1},
        {"loans": {}},
        {"last_member": 5},
        {"books": {"b1": {"title": "Dune"}}},
        {"books": {"b1": {"title": "Dune", "status": "lost"}}},
        {"members": {"m1": {"name": "Ann"}}},
    ],
)
def test_state_schema_rejects_bad_states(change: dict) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**GOOD_STATE, **change}, derive_state_schema(state_source()))


def test_state_schema_rejects_missing_attribute() -> None:
    state = {k: v for k, v in GOOD_STATE.items() if k != "loans"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(state, derive_state_schema(state_source()))


def test_state_schema_keys_follow_default_state() -> None:
    default_state = {"books": {}, "pending": [], "dynamic": "x", "counter": 0}
    schema = derive_state_schema(state_source(), default_state)
    assert schema["required"] == ["books", "pending", "dynamic", "counter"]
    assert schema["properties"]["books"]["additionalProperties"] == BOOK
    assert schema["properties"]["pending"] == {"type": "array"}
    assert schema["properties"]["dynamic"] == {"type": "string"}
    jsonschema.validate(default_state, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**default_state, "loans": []}, schema)


INHERITED = '''
class Base:
    def __init__(self):
        self.current_time = "2025-01-01T09:00:00"

    def get_current_time(self) -> dict:
        """Return the current time."""
        return {"success": True, "data": self.current_time}

    def _touch(self, key: str) -> None:
        self.items[key]["seen"] = True


class Shop(Base):
    def __init__(self):
        super().__init__()
        self.items = {}

    def see(self, key: str) -> dict:
        """Mark an item seen."""
        self._touch(key)
        return {"success": True, "message": "seen"}

    def get_current_time(self) -> dict:
        """The shop's clock."""
        return {"success": True, "data": self.current_time}
'''


def test_a_base_class_in_the_module_belongs_to_the_environment():
    assert find_environment_class(ast.parse(INHERITED)).name == "Shop"
    tools = {t.function.name: t.function.description for t in derive_tool_schemas(INHERITED)}
    assert tools == {"get_current_time": "The shop's clock.", "see": "Mark an item seen."}
    assert classify_tools(INHERITED) == {"get_current_time": "query", "see": "state_change"}
    schema = derive_state_schema(INHERITED)
    assert set(schema["properties"]) == {"current_time", "items"}


def test_two_unrelated_classes_are_still_refused():
    source = INHERITED.replace("class Shop(Base):", "class Shop:")
    with pytest.raises(EnvModuleError, match="2 environment classes"):
        find_environment_class(ast.parse(source))


RULES_TOOL = '''
def t(self, room_id: str, nights: int) -> dict:
    """Book a room.

    Args:
        room_id: The room.
        nights (int): How many
            nights.

    Returns:
        dict: the booking.

    Constraints:
        - The room must be free
          for every night.
        * At most 14 nights
        1. VIP guests pay less.

    Raises:
        KeyError: never.
    """
    return {}
'''


def test_rule_sections_reach_the_description_and_args_stay_out() -> None:
    fn = tool(RULES_TOOL)
    assert fn["description"] == (
        "Book a room. Constraints: The room must be free for every night. At most 14 nights. "
        "VIP guests pay less."
    )
    assert fn["parameters"]["properties"]["nights"]["description"] == "How many nights."


@pytest.mark.parametrize(
    ("doc", "description"),
    [
        ('"""Pay.\n\nRules: the amount is positive\n"""', "Pay. Rules: the amount is positive."),
        (
            '"""Pay.\n\nPreconditions:\n    The invoice is open.\n    Amount > 0.\n\nArgs:\n'
            '    x: y.\n"""',
            "Pay. Preconditions: The invoice is open. Amount > 0.",
        ),
        (
            '"""Pay.\n\nArgs:\n    x: y.\n\nBusiness rules:\n    - One payment per day.\n"""',
            "Pay. Business rules: One payment per day.",
        ),
        ('"""Pay.\n\nRequirements:\n"""', "Pay."),
        (
            '"""Pay.\n\nArgs:\n    x: y.\n\nSide effects:\n    Marks it paid.\n\n'
            'Validation rules:\n    Amount > 0.\n"""',
            "Pay. Validation rules: Amount > 0.",
        ),
        ('"""Pay.\n\nExample:\n    pay(1)\n"""', "Pay."),
    ],
)
def test_each_rule_section_is_kept_and_other_sections_dropped(doc: str, description: str) -> None:
    fn = tool(
        f"def t(self) -> dict:\n    {textwrap.indent(doc, '    ').strip()}\n    return {{}}\n"
    )
    assert fn["description"] == description


def test_a_dataclass_environment_class_is_named_with_what_to_write() -> None:
    source = (
        "from dataclasses import dataclass, field\n\n@dataclass\nclass Shop:\n"
        "    items: dict = field(default_factory=dict)\n\n"
        "    def add(self, k: str) -> dict:\n        return {}\n"
    )
    with pytest.raises(EnvModuleError, match=r"line 4: Shop is a type definition .* __init__"):
        find_environment_class(ast.parse(source))
