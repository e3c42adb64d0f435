"""The seam's single lists: backend names come from one list that the registry covers exactly and
the CLI offers; a bad name is one line; the registry composes the hybrid; what a backend makes
carries its records (nothing to drain); export formats come from the modules that declare them.
The import directions are ``test_import_rules.py``'s. No process is started."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
import typer

import envmill.tasks
from envmill.schemas.backends import BACKEND_NAMES, SCENARIO_SOURCES, TRAITS
from envmill.schemas.settings import EnvmillSettings, SettingsError, load_settings
from envmill.tasks.backends import PlanError, backend_names, make_backend, registered
from envmill.tasks.backends.registry import REGISTRY

TASKS = Path(envmill.tasks.__file__).parent
LOCAL = {"llm": {"base_url": "http://127.0.0.1:9/v1"}}  # a client is made, never asked


def _option(command: str, name: str):
    from envmill.flows.cli import app

    group = typer.main.get_command(app)
    (param,) = [p for p in group.commands[command].params if p.name == name]  # type: ignore[attr-defined]
    return param


def test_the_registry_covers_exactly_the_names_settings_accept():
    settings_names = get_args(EnvmillSettings.model_fields["backend"].annotation)
    assert tuple(REGISTRY) == backend_names() == BACKEND_NAMES == settings_names
    assert tuple(TRAITS) == BACKEND_NAMES
    assert all(entry.traits is TRAITS[name] for name, entry in REGISTRY.items())


def test_cli_choices_are_the_registry_names():
    offered = _option("run", "backend").help.split(" or ")
    assert [choice.split(" ")[0] for choice in offered] == list(backend_names())
    sources = _option("run", "scenarios_from").help
    assert all(source in sources for source in SCENARIO_SOURCES)


def test_deployments_name_only_registry_backends():
    import yaml

    specs = yaml.safe_load((TASKS.parent / "prefect.yaml").read_text(encoding="utf-8"))
    named = [
        ((spec.get("parameters") or {}).get("settings") or {}).get("backend")
        for spec in specs["deployments"]
    ]
    assert {name for name in named if name} <= set(backend_names())


def test_an_unknown_backend_is_one_line():
    with pytest.raises(SettingsError) as refused:
        load_settings(backend="quantum")
    assert "\n" not in str(refused.value) and "setting 'backend'" in str(refused.value)
    with pytest.raises(PlanError) as unknown:
        registered("quantum")
    assert str(unknown.value) == "unknown backend 'quantum'; backends: procedural, llm, bfcl"


def test_the_registry_composes_environments_with_llm_scenarios():
    from envmill.tasks.backends.llm.backend import LlmBackend
    from envmill.tasks.backends.llm.hybrid import LlmScenarios
    from envmill.tasks.backends.procedural.backend import ProceduralBackend

    plain = make_backend(EnvmillSettings())
    assert type(plain) is ProceduralBackend
    hybrid = make_backend(EnvmillSettings(scenarios_from="llm", **LOCAL))
    assert isinstance(hybrid, LlmScenarios) and type(hybrid.environments) is ProceduralBackend
    assert hybrid.name == "procedural" and hybrid.version.startswith("procedural-3+scengen-")
    assert type(make_backend(EnvmillSettings(backend="llm", **LOCAL))) is LlmBackend
    with pytest.raises(PlanError, match="no LLM endpoint configured"):
        make_backend(EnvmillSettings(scenarios_from="llm"))  # the hybrid asks for its client


def test_no_backend_keeps_records_for_someone_to_drain():
    from envmill.tasks.backends.llm.backend import LlmBackend
    from envmill.tasks.backends.llm.hybrid import LlmScenarios
    from envmill.tasks.backends.procedural.backend import ProceduralBackend

    for backend in (ProceduralBackend, LlmBackend, LlmScenarios):
        assert not [name for name in dir(backend) if name.startswith("drain")], backend


def test_export_formats_come_from_the_modules_that_declare_them():
    import envmill.schemas.export as export_schemas
    from envmill.flows.cli.export import FormatName
    from envmill.tasks.export import FORMATS, llamafactory, openai, parquet

    declared = [module.FORMAT for module in (openai, llamafactory, parquet)]
    assert FORMATS == {spec.name: spec for spec in declared}
    assert [choice.value for choice in FormatName] == list(FORMATS)
    assert all(callable(spec.render) and callable(spec.validate) for spec in declared)
    assert not hasattr(export_schemas, "EXPORT_FORMATS")  # schemas name no format
