"""Deployment definitions build offline, with valid schedules and parameters the flow accepts."""

from __future__ import annotations

import jsonschema


def test_deployments_build_with_schedules_and_valid_parameters(tmp_path):
    from prefect.utilities.callables import parameter_schema

    from envmill.deployments.synthesize_deployments import build_deployments
    from envmill.flows.deployed import retry_failed, synthesize_on_cluster

    deployments = build_deployments(str(tmp_path / "data"))
    names = ["synthesize-nightly", "synthesize-smoke", "retry-failed-nightly"]
    assert [d.name for d in deployments] == names
    flows = [synthesize_on_cluster, synthesize_on_cluster, retry_failed]
    for deployment, flow in zip(deployments, flows, strict=True):
        assert deployment.schedules, deployment.name
        assert deployment.entrypoint == f"envmill.flows.deployed.{flow.fn.__name__}"
        jsonschema.validate(deployment.parameters, parameter_schema(flow).model_dump_for_openapi())
        assert deployment.parameters["settings"]["envs"] > 0
        assert "api_key" not in deployment.parameters["settings"]["llm"]
    assert deployments[2].parameters["settings"]["backend"] == "llm"
    cron = deployments[0].schedules[0].schedule
    assert cron.cron == "0 3 * * *"
