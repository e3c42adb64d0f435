"""The procedural pipeline as plain functions: plan batches, then synthesize one batch.

A batch runs every stage for its environments (compile → check → scenarios → certify →
reference trajectories) in one worker, so a Dask task carries hundreds of sandbox calls and the
orchestration cost per task (STACK §1: ~170 ms) stays small. Every failure of an item is a
``FailureRecord``, never an exception out of the batch.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from envmill.schemas.ids import canonical_json, content_id, sha256_hex
from envmill.schemas.run import BatchOutput, BatchSpec, EnvItemSpec, FailureRecord
from envmill.schemas.scenario import ScenarioRecord, ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.certify import certify_scenario
from envmill.tasks.environment import AdmittedEnvironment, EnvironmentRejected, admit_environment
from envmill.tasks.procedural.catalog import list_domains, load_domain
from envmill.tasks.procedural.compiler import compile_environment
from envmill.tasks.procedural.scenarios import generate_scenario_batch
from envmill.tasks.rollout import reference_trajectory
from envmill.tasks.sandbox import Sandbox

# Part of every batch key: bump it when the generator's output changes, so reruns redo the work.
GENERATOR_VERSION = "procedural-3"


class PlanError(ValueError):
    """Settings that cannot be planned (an unknown domain, say); one line for the user."""


def plan_batches(settings: EnvmillSettings) -> list[BatchSpec]:
    """The run's work, in batches whose keys are content hashes, so a rerun finds what it did."""
    known = list_domains()
    domains = settings.domains or known
    unknown = [d for d in domains if d not in known]
    if unknown:
        raise PlanError(f"unknown domain {unknown[0]!r}; known domains: {', '.join(known)}")
    items = [
        EnvItemSpec(index=i, domain=domains[i % len(domains)], seed=_item_seed(settings.seed, i))
        for i in range(settings.envs)
    ]
    size = settings.batch_size
    return [_batch(items[start : start + size], settings) for start in range(0, len(items), size)]


def _item_seed(seed: int, index: int) -> int:
    return int(sha256_hex(canonical_json(["env", seed, index]))[:12], 16)


def _batch(items: list[EnvItemSpec], settings: EnvmillSettings) -> BatchSpec:
    key = content_id(
        {
            "items": [item.model_dump() for item in items],
            "scenarios_per_env": settings.scenarios_per_env,
            "generator": GENERATOR_VERSION,
        }
    )
    return BatchSpec(key=key, items=items)


class _Stopwatch:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start


def synthesize_batch(batch: BatchSpec, settings: EnvmillSettings, sandbox: Sandbox) -> BatchOutput:
    """Run every stage for each environment of ``batch``; failures become rows."""
    output, clock = BatchOutput(key=batch.key), _Stopwatch()
    for item in batch.items:
        try:
            _synthesize_item(item, settings, sandbox, output, clock)
        except _ItemFailed as failure:
            output.failures.append(failure.record)
        except Exception as exc:  # the sandbox itself failing, say: this item only, not the run
            output.failures.append(failure_of("item", f"{item.domain}#{item.seed}", exc))
    output.seconds = dict(clock.seconds)
    return output


def failure_of(stage: str, item: str, exc: BaseException, attempts: int = 1) -> FailureRecord:
    """A failure row for ``item`` at ``stage``, named by the exception that stopped it."""
    return FailureRecord(
        stage=stage,
        item=item,
        error_class=type(exc).__name__,
        message=str(exc)[:2000],
        attempts=attempts,
    )


class _ItemFailed(Exception):
    """Ends one item's stages early; carries the failure row."""

    def __init__(self, stage: str, item: str, exc: BaseException):
        super().__init__(str(exc))
        self.record = failure_of(stage, item, exc)


def _synthesize_item(
    item: EnvItemSpec,
    settings: EnvmillSettings,
    sandbox: Sandbox,
    output: BatchOutput,
    clock: _Stopwatch,
) -> None:
    label = f"{item.domain}#{item.seed}"
    with clock.stage("compile"):
        try:
            compiled = compile_environment(load_domain(item.domain), item.seed)
        except Exception as exc:  # a catalog or compiler bug stops this item only
            raise _ItemFailed("compile", label, exc) from exc
    with clock.stage("check_env"):
        try:
            env = admit_environment(compiled.source, sandbox)
        except EnvironmentRejected as exc:
            raise _ItemFailed(f"env_{exc.stage}", label, exc) from exc
    output.environments.append(
        env.to_record(
            topic=compiled.topic,
            introduction=compiled.introduction,
            business_rules=compiled.business_rules,
            backend="procedural",
            domain=item.domain,
            seed=item.seed,
        )
    )
    with clock.stage("scenarios"):
        made = generate_scenario_batch(
            compiled, env.env_id, settings.scenarios_per_env, item.seed, sandbox
        )
    for index, reason in made.skipped:
        output.failures.append(
            FailureRecord(
                stage="scenarios",
                item=f"{env.env_id}#{index}",
                error_class="Skipped",
                message=reason,
            )
        )
    with clock.stage("certify"):
        for spec in made.scenarios:
            _certify_into(
                spec, env, compiled.introduction, compiled.business_rules, sandbox, output
            )


def _certify_into(
    spec: ScenarioSpec,
    env: AdmittedEnvironment,
    introduction: str,
    business_rules: list[str],
    sandbox: Sandbox,
    output: BatchOutput,
) -> None:
    try:
        report = certify_scenario(spec, env, sandbox)
    except Exception as exc:  # infrastructure, not the scenario: a failure row, not a rejection
        output.failures.append(failure_of("certify", spec.scenario_id, exc))
        return
    output.scenarios.append(
        ScenarioRecord(
            **spec.model_dump(),
            scenario_id=report.scenario_id,
            status=report.status,
            rejected_gate=report.rejected_gate,
            gates=report.gates,
        )
    )
    if report.status == "certified":
        output.trajectories.append(
            reference_trajectory(
                spec, report, introduction=introduction, business_rules=business_rules
            )
        )
