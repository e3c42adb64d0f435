"""The deployments of prefect.yaml, offline: they parse as Prefect reads them, load the right
flows, carry parameters and schedules the flows accept, name one process pool, hold no secret,
and resolve settings and data folder as ``envmill run`` would. No Prefect server."""

from __future__ import annotations

import sys
import zoneinfo
from pathlib import Path

import jsonschema
import pytest
import yaml

from envmill.deployments import synthesize_deployments as sd
from tests.timing import scaled

pytestmark = pytest.mark.timeout(60)

NAMES = ["synthesize-nightly", "synthesize-smoke", "retry-failed-nightly"]
ENTRYPOINTS = {
    "synthesize-nightly": "envmill.flows.deployed.synthesize_on_cluster",
    "synthesize-smoke": "envmill.flows.deployed.synthesize_on_cluster",
    "retry-failed-nightly": "envmill.flows.deployed.retry_failed",
}


@pytest.fixture(scope="module")
def specs() -> list[dict]:
    return sd.read_specs()


def test_prefect_yaml_parses_as_prefect_deploy_reads_it(specs):
    from prefect.cli.deploy._models import PrefectYamlModel  # what `prefect deploy` validates

    raw = yaml.safe_load(sd.PREFECT_FILE.read_text())
    model = PrefectYamlModel.model_validate(raw)
    assert [d.name for d in model.deployments] == [spec["name"] for spec in specs] == NAMES
    assert {d.name: d.entrypoint for d in model.deployments} == ENTRYPOINTS
    assert model.pull is None  # `prefect deploy` records the folder it runs in, as `register` does
    assert all(d.work_pool.name == "envmill" for d in model.deployments)


def test_every_entrypoint_loads_the_flow_object_itself(specs):
    from prefect.flows import load_flow_from_entrypoint

    from envmill.flows import deployed

    flows = {"synthesize_on_cluster": deployed.synthesize_on_cluster}
    flows["retry_failed"] = deployed.retry_failed
    for spec in specs:
        flow = load_flow_from_entrypoint(spec["entrypoint"], use_placeholder_flow=False)
        assert flow is flows[spec["entrypoint"].rsplit(".", 1)[1]]  # no second copy of a module
    assert "synthesize" not in sys.modules and "flows" not in sys.modules


def test_parameters_validate_against_the_flow_schema(specs, tmp_path, monkeypatch):
    from prefect.flows import load_flow_from_entrypoint
    from prefect.utilities.callables import parameter_schema

    from envmill.schemas.settings import EnvmillSettings

    monkeypatch.chdir(tmp_path)  # no envmill.toml of the checkout's
    for spec in specs:
        flow = load_flow_from_entrypoint(spec["entrypoint"])
        for parameters in (spec["parameters"], {**spec["parameters"], "data_dir": "/srv/data"}):
            jsonschema.validate(parameters, parameter_schema(flow).model_dump_for_openapi())
            validated = flow.validate_parameters(parameters)  # what the run's process does
            assert isinstance(validated["settings"], EnvmillSettings)
    bad = {"settings": {"envs": 0}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, parameter_schema(flow).model_dump_for_openapi())


def test_schedules_are_crons_in_a_timezone_read_as_prefect_deploy_reads_them(specs):
    from prefect.cli.deploy._schedules import _schedule_config_to_deployment_schedule
    from prefect.client.schemas.schedules import CronSchedule

    crons = {}
    for spec in specs:
        for schedule in spec["schedules"]:
            assert schedule["timezone"] in zoneinfo.available_timezones()
            theirs = _schedule_config_to_deployment_schedule(schedule)["schedule"]
            built = sd.build_deployment(spec).schedules
            ours = built[spec["schedules"].index(schedule)].schedule
            assert ours.model_dump(exclude={"anchor_date"}) == theirs.model_dump(
                exclude={"anchor_date"}
            )
            if "cron" in schedule:
                crons[spec["name"]] = CronSchedule(cron=schedule["cron"], timezone="UTC").cron
    assert crons == {"synthesize-nightly": "0 3 * * *", "retry-failed-nightly": "0 5 * * *"}


def test_built_deployments_run_in_the_current_folder_with_the_data_folder_given(
    tmp_path, monkeypatch
):
    from prefect.runner.storage import LocalStorage

    monkeypatch.chdir(tmp_path)
    deployments = sd.build_deployments("data")
    assert [d.name for d in deployments] == NAMES
    for deployment in deployments:
        assert deployment.entrypoint == ENTRYPOINTS[deployment.name]
        assert deployment.storage == LocalStorage(str(tmp_path))
        step = deployment.storage.to_pull_step()["prefect.deployments.steps.set_working_directory"]
        assert step == {"directory": str(tmp_path)}
        assert deployment.parameters["data_dir"] == str(tmp_path / "data")
        assert deployment.work_pool_name is None  # serve; register names the pool
    assert deployments[0].parameters["settings"] == {
        "envs": 240,
        "scenarios_per_env": 20,
        "seed": 0,
    }
    assert deployments[2].parameters["settings"] == {"backend": "llm"}
    assert "data_dir" not in sd.build_deployments()[0].parameters  # the run's side decides


def test_one_process_pool_as_the_docs_say(specs):
    assert sd.default_work_pool(specs) == "envmill" and sd.WORK_POOL_TYPE == "process"
    text = sd.PREFECT_FILE.read_text()
    assert "prefect work-pool create envmill --type process" in text
    assert "prefect worker start --pool P" in sd.__doc__


def test_no_secret_in_the_definitions(specs):
    text = sd.PREFECT_FILE.read_text()
    # `prefect deploy` would store a block reference's value in the deployment
    assert "{{" not in text.replace("{{ prefect.blocks.secret.NAME }}", "")
    assert "api_key" not in text and "sk-" not in text
    for spec in specs:
        assert "llm" not in spec["parameters"]["settings"]
    reference = sd.key_reference("envmill-llm-key")
    assert reference == {"env": {"OPENAI_API_KEY": "{{ prefect.blocks.secret.envmill-llm-key }}"}}
    with pytest.raises(sd.DeploymentError, match="not a block name"):
        sd.key_reference("x }} {{ prefect.blocks.secret.other")


def test_a_deployed_run_resolves_settings_and_folder_like_envmill_run(tmp_path, monkeypatch):
    """Parameters over ENVMILL_* over ./envmill.toml over defaults, validated in the run's
    folder; the data folder is data_dir, else ENVMILL_HOME, else ./envmill-data."""
    from envmill.flows.deployed import synthesize_on_cluster
    from envmill.flows.preflight import data_folder
    from envmill.schemas.settings import load_settings

    monkeypatch.chdir(tmp_path)
    (tmp_path / "envmill.toml").write_text("workers = 3\nseed = 5\n")
    monkeypatch.setenv("ENVMILL_SCENARIOS_PER_ENV", "7")
    monkeypatch.delenv("ENVMILL_HOME", raising=False)
    parameters = {"settings": {"envs": 240, "seed": 0}}
    settings = synthesize_on_cluster.validate_parameters(parameters)["settings"]
    assert settings == load_settings(envs=240, seed=0)  # `envmill run --envs 240 --seed 0`
    assert (settings.workers, settings.seed, settings.scenarios_per_env) == (3, 0, 7)
    assert data_folder(settings) == tmp_path / "envmill-data"
    assert data_folder(settings, "elsewhere") == tmp_path / "elsewhere"
    monkeypatch.setenv("ENVMILL_HOME", str(tmp_path / "home"))
    settings = synthesize_on_cluster.validate_parameters(parameters)["settings"]
    assert data_folder(settings) == tmp_path / "home"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"schedules": [{"cron": "0 3 * *"}]}, "Invalid cron string"),
        ({"schedules": [{"cron": "0 3 * * *", "timezone": "Mars/Base"}]}, "Invalid timezone"),
        ({"schedules": [{"rrule": "FREQ=DAILY"}]}, "keys this module does not read: ['rrule']"),
        ({"parameters": {"settings": {"envz": 1}}}, "settings: Additional properties"),
        ({"parameters": {}}, "parameters: 'settings' is a required property"),
        ({"entrypoint": "envmill.flows.deployed.nope"}, "MissingFlowError"),
        ({"work_pool": {"name": "envmill", "job_variables": {}}}, "['job_variables']"),
    ],
)
def test_an_entry_that_would_not_register_as_written_is_one_line(entry, said):
    spec = {
        "name": "x",
        "entrypoint": ENTRYPOINTS["synthesize-nightly"],
        "parameters": {"settings": {}},
    }
    with pytest.raises(sd.DeploymentError) as caught:
        sd.build_deployment(spec | entry)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith("deployment x: ")


def _main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["synthesize_deployments", *args])
    with pytest.raises(SystemExit) as exited:
        sd.main()
    return exited.value.code, capsys.readouterr().err


def test_no_prefect_api_is_one_line_saying_how_to_start_one(monkeypatch, capsys):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        for command in ("serve", "register"):
            code, err = _main(monkeypatch, capsys, command)
            assert code == 2 and err.count("\n") == 1
            assert "no Prefect API configured: start one with `prefect server start`" in err
            assert "PREFECT_API_URL=" in err


def test_an_api_that_does_not_answer_is_one_line(monkeypatch, capsys):
    import socket

    from prefect.settings import PREFECT_API_URL, temporary_settings

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/api"
    with temporary_settings(updates={PREFECT_API_URL: url}):
        code, err = _main(monkeypatch, capsys, "register")
    assert code == 2 and err.count("\n") == 1
    assert f"the Prefect API at {url} does not answer" in err


def test_a_broken_prefect_yaml_or_option_is_one_line(monkeypatch, capsys, tmp_path):
    code, err = _main(monkeypatch, capsys, "register", "--llm-key-block", "Not A Name")
    assert code == 2 and "not a block name" in err and err.count("\n") == 1
    broken = tmp_path / "prefect.yaml"
    broken.write_text("deployments: [\n")
    monkeypatch.setattr(sd, "PREFECT_FILE", broken)
    code, err = _main(monkeypatch, capsys, "register")
    assert code == 2 and err.count("\n") == 1 and "is not valid YAML" in err
    monkeypatch.setattr(sd, "PREFECT_FILE", tmp_path / "missing.yaml")
    code, err = _main(monkeypatch, capsys, "serve")
    assert code == 2 and "cannot read" in err and err.count("\n") == 1
    code, err = _main(monkeypatch, capsys, "deploy")
    assert code == 2 and "No such command 'deploy'" in err and err.count("\n") == 1


def test_the_module_runs_as_a_command():
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "envmill.deployments.synthesize_deployments", "--help"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        cwd=Path(__file__).parent,
    )
    assert done.returncode == 0 and "serve" in done.stdout and "register" in done.stdout
