"""The checking agent (stage ``skeleton_judge``): each probe judged pass / warning / fail from the
method's source, the arguments, the result and the whole state diff (a diff cut short once hid
the one change the judge had to verify), several probes per call. The gate is ``gate``."""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from typing import Any

from envmill.schemas.skeleton import ProbeJudgement, ProbeJudgements
from envmill.tasks.backends.llm.skelbuilder.chain import RanProbe, not_run
from envmill.tasks.backends.llm.skelbuilder.context import (
    TopicContext,
    chunked,
    preview_value,
    to_json,
)
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.envs.reading import find_environment_class, parse_module


def judge_probes(
    ctx: TopicContext, env: AdmittedEnvironment, probes: list[RanProbe]
) -> dict[int, ProbeJudgement]:
    """A verdict for every probe, by its number (batches of probes of neighbouring tools). A
    call that never ran (``not_run``) shows nothing of its tool: it is the tester's slip, a
    warning said here without asking the judge."""
    order = {tool.function.name: i for i, tool in enumerate(env.tools)}
    ran = [probe for probe in probes if not not_run(probe)]
    ordered = sorted(ran, key=lambda p: (order.get(p.call.tool, len(order)), p.index))
    batches = chunked(ordered, ctx.settings.probes_per_judge_call)
    sources = method_sources(env.source)

    def judge(batch: list[RanProbe]) -> list[ProbeJudgement]:
        return _judge_batch(ctx, batch, sources)

    verdicts = {v.probe: v for found in ctx.pool.map(judge, batches) for v in found}
    for probe in probes:
        if not_run(probe):
            reason = f"the tester's slip: {probe.result['error']}"
            verdicts[probe.index] = ProbeJudgement(
                probe=probe.index, verdict="warning", reason=reason
            )
    return verdicts


def _judge_batch(
    ctx: TopicContext, batch: list[RanProbe], sources: dict[str, str]
) -> list[ProbeJudgement]:
    numbers = {probe.index for probe in batch}
    tools = list(dict.fromkeys(probe.call.tool for probe in batch))
    shown = [shown_probe(probe) for probe in batch]

    def problem(answer: ProbeJudgements) -> str | None:
        given = Counter(v.probe for v in answer.verdicts)
        missing = sorted(numbers - set(given))
        extra = sorted(set(given) - numbers)
        if missing:
            return f"no verdict for probe {', '.join(map(str, missing))}; judge every probe shown"
        if extra:
            return f"there is no probe {extra[0]}; judge only the probes shown"
        return None

    reply = ctx.asker.ask(
        "skeleton_judge",
        ProbeJudgements,
        fresh_on_retry=True,
        rounds=ctx.settings.repair_rounds,
        check=problem,
        topic=ctx.topic,
        sources=[sources.get(tool, f"# {tool}: no such method") for tool in tools],
        probes=to_json(shown),
    )
    return reply.verdicts


def method_sources(source: str) -> dict[str, str]:
    """Each method of the environment class, its text as the module has it, by name."""
    lines = source.splitlines()
    cls = find_environment_class(parse_module(source))
    return {
        node.name: textwrap.dedent("\n".join(lines[node.lineno - 1 : node.end_lineno]))
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def shown_probe(probe: RanProbe) -> dict[str, Any]:
    """A probe as the judge sees it: the result trimmed if long (the prompt says how), the diff
    whole, the clock it ran at when the tester moved it."""
    shown = {
        "probe": probe.index,
        "tool": probe.call.tool,
        "tool_kind": probe.tool_kind,
        "kind": probe.call.kind,
        "expectation": probe.call.expectation,
        "arguments": probe.call.arguments,
        "result": preview_value(probe.result),
        "state_diff": probe.diff,
    }
    if probe.call.at_time:
        shown["at_time"] = probe.call.at_time
    return shown
