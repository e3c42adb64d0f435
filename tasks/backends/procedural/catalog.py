"""The procedural backend's domain catalog: YAML files validated into :class:`DomainSpec`.

Every problem surfaces as one :class:`SpecError` whose message names the spec (and, where it
applies, the entity and operation), never as a raw pydantic traceback.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from envmill.tasks.backends.procedural.spec.check import check_domain
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, SpecError

CATALOG_DIR = Path(__file__).with_name("catalog")
# libyaml's safe loader where PyYAML was built with it (the same data, ten times faster)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

__all__ = ["CATALOG_DIR", "SpecError", "list_domains", "load_domain", "parse_domain"]


def list_domains() -> list[str]:
    """Names of the catalog's domains, sorted."""
    return sorted(path.stem for path in CATALOG_DIR.glob("*.yaml"))


@lru_cache(maxsize=64)
def _load_cached(name: str) -> DomainSpec:
    path = CATALOG_DIR / f"{name}.yaml"
    if not path.is_file():
        raise SpecError(f"spec '{name}': no such domain (known: {', '.join(list_domains())})")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise SpecError(f"spec '{name}': invalid YAML: {exc}") from None
    spec = parse_domain(data)
    if spec.name != name:
        raise SpecError(f"spec '{name}': file declares name '{spec.name}'")
    return spec


def load_domain(name: str) -> DomainSpec:
    """The validated spec of catalog domain ``name`` (a fresh copy; callers may not share it)."""
    return _load_cached(name).model_copy(deep=True)


def parse_domain(data: Any) -> DomainSpec:
    """Validate raw spec data (e.g. parsed YAML) into a DomainSpec, or raise SpecError."""
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(data, exc)) from None
    check_domain(spec)
    return spec


def describe_validation_error(data: Any, exc: ValidationError) -> str:
    """One line: the SpecError a semantic check raised, or spec, entity, operation and location."""
    first = exc.errors()[0]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, SpecError):
        return str(cause)
    loc = list(first["loc"])
    parts = [f"spec '{data.get('name', '?') if isinstance(data, dict) else '?'}'"]
    if len(loc) >= 2 and loc[0] == "entities":
        parts.append(f"entity '{loc[1]}'")
        if len(loc) >= 4 and loc[2] == "operations":
            parts.append(f"operation '{_operation_name(data, loc[1], loc[3])}'")
    return f"{', '.join(parts)}: {'.'.join(map(str, loc))}: {first['msg']}"


def _operation_name(data: Any, entity: Any, index: Any) -> str:
    """The ``name`` of an operation in raw spec data, or ``#index`` when it has none."""
    try:
        return str(data["entities"][entity]["operations"][index]["name"])
    except (KeyError, IndexError, TypeError):
        return f"#{index}"
