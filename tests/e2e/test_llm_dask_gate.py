"""The Dask-wide LLM gate (``flows/runtime/llm_gate.py``): the cap and the pace hold across the
workers of a cluster, and the flows that fan out on Dask hand it to their clients."""

from __future__ import annotations

import pytest
from llm_server import llm_settings, make_client

from envmill.flows.runtime.llm_gate import dask_gate
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.llm import LlmClient, local_gate
from envmill.tasks.offline_llm import serve_endpoint


@pytest.fixture
def endpoint():
    with serve_endpoint() as served:
        yield served


def _call(i: int, llm: LlmClient) -> str:
    llm.complete("dask", [{"role": "user", "content": f"dask {i}"}])
    return llm.limits.kind


def test_the_limits_hold_through_dask_too(endpoint, tmp_path):
    from distributed import Client, LocalCluster

    endpoint.configure(latency=0.1)
    client = make_client(
        endpoint.url, tmp_path, max_concurrency=2, requests_per_minute=1200, cache=False
    )
    client.run_id, client.gate = "dask-test", dask_gate

    options = {"processes": False, "n_workers": 1, "threads_per_worker": 8}
    with LocalCluster(dashboard_address=":0", **options) as cluster, Client(cluster) as dask:
        dask.submit(_call, -1, client, pure=False).result()  # the first connection, unpaced
        kinds = dask.gather(dask.map(_call, range(10), llm=client, pure=False))
    assert set(kinds) == {"dask"}
    assert endpoint.stats()["peak_in_flight"] == 2
    starts = sorted(entry["at"] for entry in endpoint.requests("dask"))[1:]
    # Paced 60 / 1200 = 0.05 s apart when sent; the server sees them with the loopback's jitter
    # (up to ~0.03 s on a loaded machine), so a burst shows as gaps near 0 and pacing as a span.
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    threes = [later - earlier for earlier, later in zip(starts, starts[2:], strict=False)]
    assert min(gaps) >= 0.01 and min(threes) >= 2 * 0.05 - 0.03
    assert starts[-1] - starts[0] >= 9 * 0.05 * 0.95


def test_the_cap_holds_across_worker_processes(endpoint, tmp_path):
    from distributed import Client, LocalCluster

    endpoint.configure(latency=0.2)
    settings = llm_settings(endpoint.url, max_concurrency=2, cache=False)
    client = LlmClient(settings, gate_dir=tmp_path / "gate", run_id="two-processes", gate=dask_gate)

    def call(i: int, llm: LlmClient) -> tuple[str, int]:  # pickled by value: workers run it
        import os

        llm.complete("dask", [{"role": "user", "content": f"dask {i}"}])
        return llm.limits.kind, os.getpid()

    options = {"processes": True, "n_workers": 2, "threads_per_worker": 4}
    with LocalCluster(dashboard_address=":0", **options) as cluster, Client(cluster) as dask:
        workers = sorted(dask.scheduler_info()["workers"])
        where = [[workers[i % 2]] for i in range(16)]  # half the calls on each process
        done = dask.gather(
            [dask.submit(call, i, client, workers=w, pure=False) for i, w in enumerate(where)]
        )
    assert {kind for kind, _ in done} == {"dask"} and len({pid for _, pid in done}) == 2
    assert endpoint.stats()["peak_in_flight"] == 2


def test_dask_gates_are_named_by_run_and_cap(endpoint, tmp_path):
    from distributed import Client, LocalCluster

    def make(cap: int, run_id: str) -> LlmClient:
        settings = llm_settings(endpoint.url, max_concurrency=cap, cache=False)
        return LlmClient(settings, gate_dir=tmp_path / "gate", run_id=run_id, gate=dask_gate)

    assert make(2, "").gate_name != make(2, "").gate_name  # no shared "default" gate
    options = {"processes": False, "n_workers": 1, "threads_per_worker": 4}
    with LocalCluster(dashboard_address=":0", **options) as cluster, Client(cluster) as dask:
        for cap in (2, 5):  # one run, two caps: two semaphores
            kinds = dask.gather(dask.map(_call, range(4), llm=make(cap, "same-run"), pure=False))
            assert set(kinds) == {"dask"}
    assert endpoint.stats()["requests"] == 8


def test_outside_dask_the_gate_is_local_and_a_plain_client_never_uses_dask(endpoint, tmp_path):
    from distributed import Client, LocalCluster

    handed = make_client(endpoint.url, tmp_path / "a")
    handed.gate = dask_gate
    assert handed.limits.kind == "local"  # no worker, no Dask client: the machine-wide gate
    plain = make_client(endpoint.url, tmp_path / "b")
    assert plain.gate is local_gate
    options = {"processes": False, "n_workers": 1, "threads_per_worker": 2}
    with LocalCluster(dashboard_address=":0", **options) as cluster, Client(cluster) as dask:
        assert dask.submit(_call, 0, plain, pure=False).result() == "local"


def test_the_flows_hand_the_dask_gate_to_their_clients(endpoint, tmp_path):
    from envmill.flows.rollout import process_client
    from envmill.flows.synthesize import run_backend

    settings = EnvmillSettings(scenarios_from="llm", llm=llm_settings(endpoint.url))
    assert process_client(settings, "run-a", str(tmp_path)).gate is dask_gate
    assert run_backend(settings, "run-a", str(tmp_path)).client.gate is dask_gate
