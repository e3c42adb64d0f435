"""Registering on a work pool, against the session's loopback Prefect server: ``register`` stores
what ``prefect deploy --all`` stores from the same prefect.yaml, a key block only as a reference,
and a missing or wrong pool, or serving what a pool runs, is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envmill.deployments import synthesize_deployments as sd
from tests.timing import scaled

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
POOL = "envmill"


@pytest.fixture(scope="module")
def api(prefect_harness) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists
    from prefect.settings import PREFECT_API_URL

    with get_client(sync_client=True) as client:
        for name, kind in ((POOL, "process"), ("not-process", "docker")):
            try:
                client.create_work_pool(WorkPoolCreate(name=name, type=kind))
            except ObjectAlreadyExists:
                pass
    return PREFECT_API_URL.value()


def _main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["synthesize_deployments", *args])
    code = 0
    try:
        sd.main()
    except SystemExit as exited:
        code = exited.code
    return code, capsys.readouterr().err


def _registered() -> dict[str, dict]:
    """What the API holds for each of envmill's deployments, schedule anchors aside (an
    interval's anchor is the moment it was built)."""
    from prefect.client.orchestration import get_client

    names = [spec["name"] for spec in sd.read_specs()]
    with get_client(sync_client=True) as client:
        found = {d.name: d for d in client.read_deployments() if d.name in names}
    return {
        name: {
            "entrypoint": d.entrypoint,
            "pull_steps": d.pull_steps,
            "job_variables": d.job_variables,
            "parameters": d.parameters,
            "work_pool_name": d.work_pool_name,
            "tags": sorted(d.tags),
            "description": d.description,
            "schedules": [s.schedule.model_dump(exclude={"anchor_date"}) for s in d.schedules],
            "enforce_parameter_schema": d.enforce_parameter_schema,
            "parameter_openapi_schema": d.parameter_openapi_schema,
        }
        for name, d in found.items()
    }


def test_register_stores_what_prefect_deploy_stores(api, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code, err = _main(monkeypatch, capsys, "register")
    assert code == 0, err
    assert "registered synthesize-on-cluster/synthesize-nightly on work pool 'envmill'" in err
    assert f"prefect worker start --pool {POOL}" in err
    ours = _registered()
    assert sorted(ours) == sorted(spec["name"] for spec in sd.read_specs())
    for name, deployment in ours.items():
        assert deployment["work_pool_name"] == POOL
        assert deployment["pull_steps"] == [
            {"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}
        ]
        assert deployment["entrypoint"].startswith("envmill.flows.deployed."), name
        assert deployment["job_variables"] == {}
    env = {**os.environ, "PREFECT_API_URL": api}
    done = subprocess.run(
        [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--all"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=scaled(150),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert _registered() == ours


def test_a_key_block_is_registered_as_a_reference_only(api, monkeypatch, capsys):
    from prefect.blocks.system import Secret

    value = "sk-test-0123456789-not-a-real-key"
    Secret(value=value).save("envmill-llm-key", overwrite=True)
    monkeypatch.chdir(ROOT)
    code, err = _main(monkeypatch, capsys, "register", "--llm-key-block", "envmill-llm-key")
    assert code == 0, err
    registered = _registered()
    reference = "{{ prefect.blocks.secret.envmill-llm-key }}"
    assert all(
        d["job_variables"] == {"env": {"OPENAI_API_KEY": reference}} for d in registered.values()
    )
    assert value not in json.dumps(registered, default=str)
    code, err = _main(monkeypatch, capsys, "register", "--llm-key-block", "no-such-key")
    assert code == 2 and "no Secret block 'no-such-key'; create it with" in err
    assert err.count("\n") == 1
    code, err = _main(monkeypatch, capsys, "register")  # without: the reference is gone again
    assert code == 0 and all(d["job_variables"] == {} for d in _registered().values())


def test_a_missing_or_wrong_pool_is_one_line_saying_how_to_create_one(api, monkeypatch, capsys):
    code, err = _main(monkeypatch, capsys, "register", "--work-pool", "nightly")
    assert code == 2 and err.count("\n") == 1
    assert "no work pool 'nightly'; create it with `prefect work-pool create nightly " in err
    assert "--type process`" in err
    code, err = _main(monkeypatch, capsys, "register", "--work-pool", "not-process")
    assert code == 2 and err.count("\n") == 1
    assert "work pool 'not-process' is of type 'docker', not 'process'" in err


def test_serving_what_a_pool_runs_is_refused(api, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert _main(monkeypatch, capsys, "register")[0] == 0
    code, err = _main(monkeypatch, capsys, "serve")
    assert code == 2 and err.count("\n") == 1
    assert "is registered on work pool 'envmill', whose worker runs it" in err
    assert "prefect deployment delete synthesize-on-cluster/synthesize-nightly" in err
