"""Deployment definitions build offline, with valid schedules and parameters the flow accepts."""

from __future__ import annotations

import jsonschema


def test_deployments_build_with_schedules_and_valid_parameters(tmp_path):
    from prefect.utilities.callables import parameter_schema

    from envmill.deployments.synthesize_deployments import build_deployments
    from envmill.flows.synthesize import synthesize

    deployments = build_deployments(str(tmp_path / "data"))
    assert [d.name for d in deployments] == ["synthesize-nightly", "synthesize-smoke"]
    schema = parameter_schema(synthesize).model_dump_for_openapi()
    for deployment in deployments:
        assert deployment.schedules, deployment.name
        jsonschema.validate(deployment.parameters, schema)
        assert deployment.parameters["settings"]["envs"] > 0
    cron = deployments[0].schedules[0].schedule
    assert cron.cron == "0 3 * * *"
