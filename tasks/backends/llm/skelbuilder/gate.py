"""The environment check's gate, and what the environment keeps from the check.

The gate refuses an environment whose probes pass too rarely (warnings count as passes unless
``warnings_fail``), a tool no probe reached, or too many state-changing tools no positive probe
saw succeed: a judge scores a correct refusal as a pass, so a tool probed only ever as a refusal
would pass with its success path never run. Each such tool and each judge warning is kept on the
environment as an ``EnvWarning`` whether or not the gate passes.
"""

from __future__ import annotations

from collections import Counter

from envmill.schemas.environment import EnvWarning
from envmill.schemas.skeleton import EnvCheckReport, ProbeJudgement, SkeletonSettings
from envmill.tasks.backends.llm.skelbuilder.chain import RanProbe, not_run
from envmill.tasks.backends.llm.skelbuilder.probing import never_succeeded
from envmill.tasks.envs import AdmittedEnvironment

Verdicts = dict[int, ProbeJudgement]


def score_probes(
    env: AdmittedEnvironment, probes: list[RanProbe], verdicts: Verdicts, settings: SkeletonSettings
) -> EnvCheckReport:
    """The gate: the pass rate over every probe that ran, the tools no probe reached, the
    state-changing tools that never succeeded."""
    probes = [probe for probe in probes if not not_run(probe)]
    counts = Counter(verdicts[p.index].verdict for p in probes)
    passing = counts["pass"] + (0 if settings.warnings_fail else counts["warning"])
    rate = passing / len(probes) if probes else 0.0
    probed = {probe.call.tool for probe in probes}
    report = EnvCheckReport(
        probes=len(probes),
        passed=counts["pass"],
        warnings=counts["warning"],
        failed=counts["fail"],
        pass_rate=round(rate, 4),
        threshold=settings.pass_threshold,
        untested=[t.function.name for t in env.tools if t.function.name not in probed],
        never_succeeded=never_succeeded(env, probes),
    )
    code, reason = _refusal(env, probes, verdicts, report, rate, settings)
    if code:
        return report.model_copy(update={"code": code, "reason": reason})
    return report.model_copy(update={"accepted": True})


def _refusal(
    env: AdmittedEnvironment,
    probes: list[RanProbe],
    verdicts: Verdicts,
    report: EnvCheckReport,
    rate: float,
    settings: SkeletonSettings,
) -> tuple[str, str]:
    """The gate's code and reason when it refuses, else two empty strings."""
    if not probes:
        return "no_probes", "no probe call ran"
    if rate < settings.pass_threshold:
        return "pass_rate_below_threshold", _rate_reason(probes, verdicts, report, rate, settings)
    if report.untested:
        return "untested_tools", (
            f"{len(report.untested)} tools never probed: {', '.join(report.untested[:5])}"
        )
    changing = sum(1 for kind in env.tool_kinds.values() if kind == "state_change")
    share = len(report.never_succeeded) / changing if changing else 0.0
    if share > settings.untested_success_share:
        return "untested_success", (
            f"{len(report.never_succeeded)} of {changing} state-changing tools never succeeded "
            f"({share:.2f} > {settings.untested_success_share:g}): "
            f"{', '.join(report.never_succeeded[:5])}"
        )
    return "", ""


def _rate_reason(
    probes: list[RanProbe],
    verdicts: Verdicts,
    report: EnvCheckReport,
    rate: float,
    settings: SkeletonSettings,
) -> str:
    against = {"fail", "warning"} if settings.warnings_fail else {"fail"}
    first = next(p for p in probes if verdicts[p.index].verdict in against)
    warned = (
        f" and {report.warnings} warned (warnings count as failures)"
        if settings.warnings_fail and report.warnings
        else ""
    )
    return (
        f"pass rate {rate:.2f} < {settings.pass_threshold:g}: {report.failed} of {report.probes} "
        f"probes failed{warned} (first: probe {first.index}, {first.call.tool}: "
        f"{verdicts[first.index].reason})"
    )


def env_warnings(
    probes: list[RanProbe], verdicts: Verdicts, report: EnvCheckReport
) -> list[EnvWarning]:
    """The judge's warnings, then one finding per state-changing tool that never succeeded (a
    call that never ran is the tester's slip, not the environment's)."""
    warned = [
        EnvWarning(
            kind="judge_warning",
            tool=p.call.tool,
            probes=[p.index],
            message=verdicts[p.index].reason,
        )
        for p in probes
        if verdicts[p.index].verdict == "warning" and not not_run(p)
    ]
    return warned + [_never_succeeded(tool, probes) for tool in report.never_succeeded]


def _never_succeeded(tool: str, probes: list[RanProbe]) -> EnvWarning:
    own = [p for p in probes if p.call.tool == tool]
    last = next((p for p in reversed(own) if p.call.kind == "positive"), None)
    told = f" (last positive call: {str(last.result.get('error', ''))[:160]})" if last else ""
    message = (
        f"{tool} never succeeded in {len(own)} probe{'s' * (len(own) != 1)}{told}"
        if own
        else f"{tool} was never probed"
    )
    return EnvWarning(
        kind="never_succeeded", tool=tool, probes=[p.index for p in own], message=message
    )
