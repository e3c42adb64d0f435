"""The shared pipeline as plain functions: plan batches, then synthesize one batch.

A batch runs every stage for its environments (make → admit → scenarios → certify → reference
trajectories) in one worker, so a Dask task carries hundreds of sandbox calls and the
orchestration cost per task (STACK §1: ~170 ms) stays small. What is made comes from the run's
backend (``tasks/backends``), with the records of the work it took (LLM calls, probes), which
join the batch's rows; everything after that is the same for every backend. Every failure of an
item is a ``FailureRecord``, never an exception out of the batch.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Container, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from itertools import islice
from typing import TYPE_CHECKING, Any

from envmill.schemas.environment import ToolSchema
from envmill.schemas.ids import content_id
from envmill.schemas.run import BatchOutput, BatchSpec, EnvItemSpec, FailureRecord
from envmill.schemas.scenario import ScenarioRecord, ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends import (
    Backend,
    BatchAborted,
    EnvironmentDraft,
    RecordedFailure,
    ScenarioDrafts,
    make_backend,
)
from envmill.tasks.backends.base import DraftT
from envmill.tasks.certify import certify_scenario
from envmill.tasks.core.system_message import Briefing
from envmill.tasks.envs import AdmittedEnvironment, EnvironmentRejected, admit_environment
from envmill.tasks.judge import ReplyJudge, judge_reply
from envmill.tasks.rollout import reference_trajectory
from envmill.tasks.sandbox import Sandbox

if TYPE_CHECKING:
    from envmill.tasks.judge.llm import ItemJudges


def plan_batches(
    settings: EnvmillSettings, backend: Backend[Any] | None = None, done: Container[str] = ()
) -> list[BatchSpec]:
    """The run's work in batches (see :func:`iter_batches`), as a list."""
    return list(iter_batches(settings, backend, done))


def iter_batches(
    settings: EnvmillSettings, backend: Backend[Any] | None = None, done: Container[str] = ()
) -> Iterator[BatchSpec]:
    """The run's items that are not ``done`` (item keys), ``batch_size`` at a time, lazily.

    An item's key hashes what it makes, never where it sits in the plan, so a rerun with another
    batch size still finds the items it did; a batch's key hashes its items' keys. The backend
    checks the settings when this is called, not when the first batch is asked for.
    """
    backend = backend or make_backend(settings)
    items = (  # a backend that knows better what an item makes keys it itself
        item if item.key else item.model_copy(update={"key": item_key(item, settings, backend)})
        for item in backend.plan_items(settings)
    )
    todo = (item for item in items if item.key not in done)
    return (_batch(chunk) for chunk in iter(lambda: list(islice(todo, settings.batch_size)), []))


def item_key(item: EnvItemSpec, settings: EnvmillSettings, backend: Backend[Any]) -> str:
    return content_id(
        {
            "subject": item.subject,
            "seed": item.seed,
            "scenarios_per_env": settings.scenarios_per_env,
            "generator": backend.version,
        }
    )


def _batch(items: list[EnvItemSpec]) -> BatchSpec:
    return BatchSpec(key=content_id({"items": [item.key for item in items]}), items=items)


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


def synthesize_batch(
    batch: BatchSpec,
    settings: EnvmillSettings,
    sandbox: Sandbox,
    backend: Backend[Any] | None = None,
    judges: ItemJudges | None = None,
) -> BatchOutput:
    """Run every stage for each environment of ``batch``; failures become rows.

    Items run one after another, or ``backend.item_threads`` at once for a backend that mostly
    waits on an LLM; either way the output lists them in item order. ``judges`` (the run's LLM
    judge, ``[reward] judge = "llm"``) judges the replies certification probes, in place of
    envmill's rules; its calls join each item's rows.
    """
    backend = backend or make_backend(settings)

    def one(item: EnvItemSpec) -> tuple[BatchOutput, _Stopwatch]:
        return _item_output(item, settings, sandbox, backend, judges)

    threads = min(backend.item_threads, len(batch.items))
    if threads > 1:
        with ThreadPoolExecutor(threads, thread_name_prefix="envmill-item") as pool:
            parts = list(pool.map(one, batch.items))
    else:
        parts = [one(item) for item in batch.items]
    output, seconds = BatchOutput(key=batch.key, items=[i.key for i in batch.items]), Counter()
    for part, clock in parts:
        output.environments += part.environments
        output.scenarios += part.scenarios
        output.trajectories += part.trajectories
        output.failures += part.failures
        output.llm_calls += part.llm_calls
        output.env_probes += part.env_probes
        seconds.update(clock.seconds)
    output.seconds = dict(seconds)
    output.provenance = backend.provenance()
    return output


def _item_output(
    item: EnvItemSpec,
    settings: EnvmillSettings,
    sandbox: Sandbox,
    backend: Backend[Any],
    judges: ItemJudges | None,
) -> tuple[BatchOutput, _Stopwatch]:
    """One item's rows; its failure (of any kind) is a row too."""
    output, clock = BatchOutput(key=""), _Stopwatch()
    judge = judge_reply if judges is None else judges.judge(item.label)
    try:
        _synthesize_item(item, settings, sandbox, backend, output, clock, judge)
    except _ItemFailed as failure:
        output.failures.append(failure.record)
    except BatchAborted:
        raise
    except Exception as exc:  # the sandbox itself failing, say: this item only, not the run
        output.failures.append(failure_of("item", item.label, _keep_records(exc, output)))
    finally:
        if judges is not None:
            output.llm_calls += judges.calls(item.label)
    return output, clock


def _keep_records(exc: Exception, output: BatchOutput) -> Exception:
    """What failed: ``exc``, or the cause of a RecordedFailure, whose records join ``output``."""
    if not isinstance(exc, RecordedFailure):
        return exc
    output.llm_calls += exc.call_records
    output.env_probes += exc.probes
    return exc.cause


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

    def __init__(self, record: FailureRecord):
        super().__init__(record.message)
        self.record = record


def _synthesize_item(
    item: EnvItemSpec,
    settings: EnvmillSettings,
    sandbox: Sandbox,
    backend: Backend[DraftT],
    output: BatchOutput,
    clock: _Stopwatch,
    judge: ReplyJudge,
) -> None:
    with clock.stage("make_env"):
        try:
            draft = backend.make_environment(item, sandbox)
        except BatchAborted:
            raise
        except Exception as exc:  # a backend bug or a failed generation stops this item only
            cause = _keep_records(exc, output)
            raise _ItemFailed(generation_failure(item.label, cause)) from cause
    output.llm_calls += draft.call_records
    output.env_probes += draft.probes
    with clock.stage("check_env"):
        try:
            env = getattr(draft, "admitted", None) or admit_environment(draft.source, sandbox)
        except EnvironmentRejected as exc:
            raise _ItemFailed(rejection_of(item.label, exc)) from exc
    output.environments.append(
        env.to_record(
            topic=draft.topic,
            introduction=draft.introduction,
            business_rules=draft.business_rules,
            backend=backend.name,
            domain=draft.domain,
            seed=item.seed,
            warnings=list(getattr(draft, "warnings", [])),  # what the LLM backend's check found
            origin=getattr(draft, "origin", None) or "envmill",  # an importer's corpus name
        )
    )
    with clock.stage("scenarios"):
        made = backend.make_scenarios(draft, env, item, settings.scenarios_per_env, sandbox)
    output.llm_calls += made.call_records
    output.failures += [
        FailureRecord(
            stage="scenarios",
            item=f"{env.env_id}#{skip.index}",
            error_class="Skipped",
            code=skip.code,
            message=skip.message,
        )
        for skip in made.skipped
    ]
    with clock.stage("certify"):
        for spec in made.scenarios:
            _certify_into(spec, env, draft, sandbox, output, made, judge)


def generation_failure(item: str, exc: Exception) -> FailureRecord:
    """The failure row of a backend that made no environment: at the backend's own stage, with
    its category and every problem (``exc.stage``, ``exc.code``, ``exc.details``) when it names
    them, else at ``make_env``."""
    stage, code = getattr(exc, "stage", None), getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    record = failure_of(stage if isinstance(stage, str) and stage else "make_env", item, exc)
    return record.model_copy(
        update={
            "code": code if isinstance(code, str) else "",
            "details": [str(d) for d in details] if isinstance(details, list) else [],
        }
    )


def rejection_of(item: str, exc: EnvironmentRejected) -> FailureRecord:
    """The failure row of a refused module: the first policy rule as its code, every reason kept."""
    return FailureRecord(
        stage=f"env_{exc.stage}",
        item=item,
        error_class="EnvironmentRejected",
        code=exc.violations[0].rule if exc.violations else exc.stage,
        message=str(exc)[:2000],
        details=[str(violation) for violation in exc.violations],
    )


def parameter_words(tools: list[ToolSchema]) -> dict[str, dict[str, str]]:
    """Each tool's parameters → their descriptions (what a reference asks a user for)."""
    return {
        tool.function.name: {
            name: str(schema.get("description", ""))
            for name, schema in tool.function.parameters.get("properties", {}).items()
            if isinstance(schema, dict)
        }
        for tool in tools
    }


def briefing_of(draft: EnvironmentDraft) -> Briefing:
    return Briefing(draft.introduction, tuple(draft.business_rules))


def _certify_into(
    spec: ScenarioSpec,
    env: AdmittedEnvironment,
    draft: EnvironmentDraft,
    sandbox: Sandbox,
    output: BatchOutput,
    made: ScenarioDrafts,
    judge: ReplyJudge,
) -> None:
    """Certify ``spec`` into rows; a backend's own report (certified as it repaired) stands
    where envmill's rules judge the replies."""
    try:
        report = (made.reports.get(spec.scenario_id) if judge is judge_reply else None) or (
            certify_scenario(spec, env, sandbox, judge, briefing_of(draft))
        )
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
            repairs=made.repairs.get(spec.scenario_id, 0),
        )
    )
    if report.status == "certified":
        output.trajectories.append(
            reference_trajectory(
                spec,
                report,
                introduction=draft.introduction,
                business_rules=draft.business_rules,
                tool_kinds=dict(env.tool_kinds),
                descriptions={t.function.name: t.function.description for t in env.tools},
                parameters=parameter_words(env.tools) if spec.turns else None,
            )
        )
