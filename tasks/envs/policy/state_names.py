"""The process-wide state of the allowed modules, by name: what a check must not reach, because
every later check evaluated in the same process would see what it did there (DESIGN §3.3).

How the names were chosen, module by module (``ALLOWED_IMPORTS``; read by hand on Python 3.11,
the containers then computed at import so a new Python's are found too):

- ``__future__``: ``all_feature_names`` (a list; computed). The ``_Feature`` records are immutable.
- ``collections``, ``collections.abc``: classes only; an ABC's registry changes through
  ``.register``, which purity refuses by name.
- ``copy``: ``dispatch_table`` (copyreg's dict of reducers that ``copy()`` consults; computed).
- ``dataclasses``: ``MISSING``, ``KW_ONLY`` are stateless sentinels; ``dataclass`` writes onto its
  argument (:data:`WRITERS`: a decorator only).
- ``datetime``: immutable values (``UTC``, ``MINYEAR``) and a C capsule; clocks are refused
  elsewhere.
- ``decimal``: ``BasicContext``, ``DefaultContext``, ``ExtendedContext`` (computed: their
  ``flags`` and ``traps`` are mappings); ``getcontext``, ``setcontext``, ``localcontext`` (the
  thread's context, which every check's arithmetic uses).
- ``enum``: ``global_enum`` (writes the members into the defining module's namespace); the
  ``CONFORM``... members are immutable.
- ``functools``: ``lru_cache``, ``cache``, ``cached_property`` (:data:`CACHING`);
  ``get_cache_token`` (reads the ABC registries' counter); ``wraps``, ``update_wrapper``,
  ``total_ordering`` write onto their argument (:data:`WRITERS`).
- ``itertools``, ``math``, ``string``: functions, classes and immutable constants only.
- ``json`` (with ``json.decoder``, ``json.encoder``, ``json.scanner``): ``BACKSLASH`` and
  ``ESCAPE_DCT`` (dicts the codec consults; computed); the patterns are immutable.
- ``re``: ``purge`` (empties the process-wide pattern cache); flags and patterns are immutable.
- ``typing``: ``EXCLUDED_ATTRIBUTES`` (a list; computed); ``overload``, ``get_overloads``,
  ``clear_overloads`` (a process-wide registry); ``final``, ``no_type_check``,
  ``runtime_checkable``, ``dataclass_transform``, ``abstractmethod`` write onto their argument
  (:data:`WRITERS`). Special forms and type variables hold nothing a check can change without an
  attribute write, which is refused.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import functools
import importlib
import inspect
import typing
from collections.abc import Iterable, MutableMapping, MutableSequence, MutableSet
from types import ModuleType
from typing import Any

from envmill.tasks.envs.policy.names import ALLOWED_IMPORTS

# Methods that change their receiver (lists, dicts, sets, deques, Counters, decimal contexts, an
# lru_cache's cache); an ABC's ``register`` is refused by name wherever it appears.
MUTATORS = frozenset(
    "append extend insert remove pop popitem clear update setdefault add discard sort reverse "
    "difference_update intersection_update symmetric_difference_update appendleft extendleft "
    "popleft rotate subtract move_to_end clear_flags clear_traps cache_clear "
    "__setitem__ __delitem__".split()
)
CLEARS = frozenset({"clear", "clear_flags", "clear_traps", "cache_clear"})
MUTABLE_KINDS = (MutableMapping, MutableSequence, MutableSet)  # dict, list, set, deque, bytearray
_DECIMAL_HINT = (
    "pass what you need explicitly instead "
    "(decimal.Decimal(x).quantize(decimal.Decimal('0.01'), rounding=decimal.ROUND_HALF_UP))"
)
# Functions that read or change process-wide state, with what to do instead.
PROCESS_FUNCTIONS: dict[str, str] = {
    "getcontext": _DECIMAL_HINT,
    "setcontext": _DECIMAL_HINT,
    "localcontext": _DECIMAL_HINT,
    "global_enum": "refer to members through their class (Color.RED)",
    "purge": "compile the patterns you need with re.compile and leave the cache alone",
    "overload": "write one plain function instead",
    "get_overloads": "write one plain function instead",
    "clear_overloads": "write one plain function instead",
    "get_cache_token": "test types with isinstance() only",
}
CACHING = (functools.lru_cache, functools.cache, functools.cached_property)
# Helpers that write attributes onto the object they are given (an import's, unless they decorate
# a definition of the check's own).
WRITERS = (
    dataclasses.dataclass,
    functools.total_ordering,
    functools.wraps,
    functools.update_wrapper,
    typing.final,
    typing.no_type_check,
    typing.runtime_checkable,
    typing.dataclass_transform,
    abc.abstractmethod,  # typing's too
)
CACHING_IDS = frozenset(id(helper) for helper in CACHING)
WRITER_IDS = frozenset(id(helper) for helper in WRITERS)


def allowed_modules(names: Iterable[str]) -> dict[str, ModuleType]:
    """Each allowed module and its submodules reachable as public attributes (``json.encoder``),
    by dotted name."""
    found = {}
    for name in sorted(names):
        module = importlib.import_module(name)
        found[name] = module
        for attr, value in vars(module).items():
            inside = isinstance(value, ModuleType) and value.__name__.startswith(f"{name}.")
            if inside and not attr.startswith("_"):
                found[value.__name__] = value
    return found


def is_mutable_instance(value: Any) -> bool:
    """A value a check could change without an attribute write: a mutable container, an object
    that holds one, or one that can be cleared (a decimal context: its ``flags`` hide from
    ``dir``, its ``clear_flags`` does not). Modules, classes and functions are not: their state
    is reached through attributes, refused elsewhere."""
    if isinstance(value, ModuleType | type) or inspect.isroutine(value):
        return False
    return isinstance(value, MUTABLE_KINDS) or any(_mutable_parts(value))


def _mutable_parts(value: Any) -> Iterable[str]:
    """Public attributes of ``value`` that hold one mutable container (the same one when read
    twice: a property that builds a fresh dict each time holds nothing), or that clear it (a
    method bound to it: ``typing.List.clear`` is list's, not the alias's)."""
    for attr in dir(value):
        if attr.startswith("_"):
            continue
        with contextlib.suppress(Exception):
            held = getattr(value, attr)
            if isinstance(held, MUTABLE_KINDS) and getattr(value, attr) is held:
                yield attr
            elif attr in CLEARS and getattr(held, "__self__", None) is value:
                yield attr


def mutable_names_of(names: Iterable[str]) -> frozenset[str]:
    """Every public name of an allowed module (or its submodules) bound to a mutable instance."""
    return frozenset(
        attr
        for module in allowed_modules(names).values()
        for attr, value in vars(module).items()
        if not attr.startswith("_") and is_mutable_instance(value)
    )


MUTABLE_MODULE_NAMES = mutable_names_of(ALLOWED_IMPORTS)
PROCESS_STATE_NAMES = MUTABLE_MODULE_NAMES | frozenset(PROCESS_FUNCTIONS)
_ROOTS = {top: importlib.import_module(top) for top in {n.split(".")[0] for n in ALLOWED_IMPORTS}}


def process_state_message(name: str) -> str:
    if name in PROCESS_FUNCTIONS:
        what = "reads or changes process-wide state that every later check shares"
        return f"'{name}' {what}; {PROCESS_FUNCTIONS[name]}"
    hint = (
        _DECIMAL_HINT
        if name.endswith("Context")
        else "leave it alone and compute from the two states only"
    )
    return f"'{name}' is an allowed module's object that every later check shares; {hint}"


def resolves_into(origin: str | None, name: str | None, ids: frozenset[int]) -> bool:
    """Whether ``origin.name`` (or ``origin`` alone) names one of the objects whose ids are
    ``ids``, looked up in the modules' and classes' own namespaces (no code of theirs runs)."""
    if origin is None:
        return False
    parts = [*origin.split("."), *([name] if name else [])]
    found: Any = _ROOTS.get(parts[0])
    for part in parts[1:]:
        if not isinstance(found, ModuleType | type):
            return False
        found = vars(found).get(part)
    return found is not None and id(found) in ids
