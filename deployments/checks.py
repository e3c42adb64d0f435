"""What serving or registering needs from Prefect, each missing piece one line saying how to fix it.

Prefect's own errors for these are tracebacks or, with no API configured, a temporary server that
stops with the command (and takes the deployments' schedules with it).
"""

from __future__ import annotations

from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from prefect.settings import get_current_settings

from envmill.flows.cli.support import fail

START_API = (
    "start one with `prefect server start` and set "
    "PREFECT_API_URL=http://127.0.0.1:4200/api (or `prefect config set PREFECT_API_URL=...`)"
)


def require_api() -> str:
    """The Prefect API's URL, once it answers."""
    url = get_current_settings().api.url
    if not url:
        fail(f"no Prefect API configured: {START_API}")
    with get_client(sync_client=True) as client:
        problem = client.api_healthcheck()
    if problem is not None:
        fail(f"the Prefect API at {url} does not answer ({type(problem).__name__}); {START_API}")
    return url


def require_pool(name: str, pool_type: str) -> None:
    """The work pool ``name`` exists and is of ``pool_type``."""
    create = f"prefect work-pool create {name} --type {pool_type}"
    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            fail(f"no work pool '{name}'; create it with `{create}`")
    if pool.type != pool_type:
        fail(
            f"work pool '{name}' is of type '{pool.type}', not '{pool_type}'; "
            f"pass --work-pool with a {pool_type} pool (`{create.replace(name, 'NAME', 1)}`)"
        )


def require_secret(name: str) -> None:
    """A Secret block ``name`` exists (its value is not read)."""
    with get_client(sync_client=True) as client:
        try:
            client.read_block_document_by_name(name, "secret", include_secrets=False)
        except ObjectNotFound:
            fail(
                f"no Secret block '{name}'; create it with `python -c \"from getpass import "
                f"getpass; from prefect.blocks.system import Secret; "
                f"Secret(value=getpass()).save('{name}')\"`"
            )


def require_unpooled(full_names: list[str]) -> None:
    """None of these deployments is registered on a work pool: serving one would leave it on
    its pool (an update keeps the pool), so both the pool's worker and ``serve`` would run it."""
    with get_client(sync_client=True) as client:
        for name in full_names:
            try:
                pool = client.read_deployment_by_name(name).work_pool_name
            except ObjectNotFound:
                continue
            if pool:
                fail(
                    f"{name} is registered on work pool '{pool}', whose worker runs it; delete "
                    f"it first (`prefect deployment delete {name}`) or keep to the worker"
                )
