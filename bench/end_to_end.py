"""End-to-end throughput of ``envmill run`` and what orchestration costs.

Usage: .venv/bin/python -m bench.end_to_end [--envs 24] [--scenarios 12] [--batch-size 4]
Runs the real path (embedded Prefect server, local Dask cluster, the ``synthesize`` flow) into a
temporary data folder, then the same batches through a plain 2-process pool, and prints the
time per stage and the share of wall time that went to orchestration rather than work.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from envmill.schemas.settings import EnvmillSettings


def timed_run(settings: EnvmillSettings, root: Path) -> dict:
    # Prefect reads its settings when first imported: import it only once the API URL is set.
    from envmill.flows.runtime.cluster import dask_scheduler
    from envmill.flows.runtime.prefect_api import prefect_api
    from envmill.warehouse.store import Warehouse

    Warehouse(root)
    marks = {"start": time.perf_counter()}
    with prefect_api(root / "_prefect") as api:
        with dask_scheduler(None, settings.workers, settings.sandbox) as address:
            marks["cluster_up"] = time.perf_counter()
            api.wait()
            marks["server_up"] = time.perf_counter()
            from prefect_dask import DaskTaskRunner

            from envmill.flows.synthesize import synthesize

            summary = synthesize.with_options(task_runner=DaskTaskRunner(address=address))(
                settings=settings, run_id="bench", data_dir=str(root)
            )
            marks["flow_done"] = time.perf_counter()
    marks["end"] = time.perf_counter()
    return {"marks": marks, "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, default=24)
    parser.add_argument("--scenarios", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    settings = EnvmillSettings(
        envs=args.envs, scenarios_per_env=args.scenarios, batch_size=args.batch_size
    )
    with tempfile.TemporaryDirectory() as tmp:
        result = timed_run(settings, Path(tmp) / "data")
    from bench.procedural import synthesize as plain_pool

    outputs, pool_seconds = plain_pool(settings, settings.workers)
    m, summary = result["marks"], result["summary"]
    counts, work = summary["counts"], Counter(summary["work_seconds"])
    wall, flow = m["end"] - m["start"], m["flow_done"] - m["server_up"]
    busy = sum(work.values())
    print(
        f"{counts.get('environments', 0)} environments, "
        f"{counts.get('certified', 0)} certified scenarios, "
        f"{settings.workers} workers, batches of {settings.batch_size}"
    )
    print(
        f"wall {wall:.1f} s = cluster start {m['cluster_up'] - m['start']:.1f} "
        f"+ rest of the server start {m['server_up'] - m['cluster_up']:.1f} (they overlap) "
        f"+ flow {flow:.1f} "
        f"+ shutdown {m['end'] - m['flow_done']:.1f}"
    )
    print("work seconds by stage: " + ", ".join(f"{k} {v:.1f}" for k, v in work.items()))
    print(
        f"throughput over the whole wall: {counts.get('environments', 0) / wall:.2f} envs/s, "
        f"{counts.get('certified', 0) / wall:.1f} certified/s; over the flow alone: "
        f"{counts.get('environments', 0) / flow:.2f} envs/s, "
        f"{counts.get('certified', 0) / flow:.1f} certified/s"
    )
    print(
        f"orchestration share of the flow: {1 - busy / (flow * settings.workers):.1%} "
        "(worker time not spent in a stage); "
        f"of the whole wall: {1 - busy / (wall * settings.workers):.1%}"
    )
    certified = sum(s.status == "certified" for o in outputs for s in o.scenarios)
    print(
        f"plain 2-process pool, same batches: {pool_seconds:.1f} s ({certified} certified); "
        f"flow / pool = {flow / pool_seconds:.2f}x, whole run / pool = {wall / pool_seconds:.2f}x"
    )


if __name__ == "__main__":
    main()
