"""Certification has a wall budget per scenario: the reference run stops at the first step that
timed out, or once the budget is spent, and the gate's reason says so (issue 24: each stalling
step cost its whole wall limit, twice; a 7-step scenario took 73 s to reject)."""

from __future__ import annotations

from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.settings import SandboxLimits
from envmill.tasks.certify import certify_scenario
from envmill.tasks.envs import admit_environment
from envmill.tasks.sandbox import Sandbox

COUNTER = '''
class Counter:
    """A counter with a tool that never answers."""

    def __init__(self):
        self.ticks = 0

    def tick(self) -> dict:
        """Add one tick."""
        self.ticks += 1
        return {"success": True, "data": {"ticks": self.ticks}}

    def stall(self) -> dict:
        """Work for ever on a busy counter (admission probes a fresh one, and it answers)."""
        while self.ticks >= 100:
            self.ticks = self.ticks
        return {"success": True, "data": {"ticks": self.ticks}}
'''

CHECK = "def check(state, final):\n    return final['ticks'] == 107\n"


def _scenario(env_id: str, tools: list[str]) -> ScenarioSpec:
    return ScenarioSpec(
        env_id=env_id,
        backend="manual",
        task="Tick the counter seven times.",
        initial_state={"ticks": 100},
        reference_solution=[{"tool": tool, "arguments": {}} for tool in tools],
        checks=[{"description": "seven ticks", "code": CHECK}],
    )


def test_the_reference_run_stops_at_the_first_step_that_timed_out():
    with Sandbox(SandboxLimits(cpu_seconds=1.0, wall_seconds=1.0, memory_mb=256)) as sandbox:
        env = admit_environment(COUNTER, sandbox)
        scenario = _scenario(env.env_id, ["tick", "stall", *["tick"] * 5])
        report = certify_scenario(scenario, env, sandbox)
    assert report.status == "rejected" and report.rejected_gate == "solution_runs"
    reason = next(g.reason for g in report.gates if g.gate == "solution_runs")
    assert "step 2 (stall)" in reason, reason
    assert report.step_results[2]["error"].startswith("not run: step 2 "), report
    assert (report.final_state or {}).get("ticks") == 101  # the ticks after it never ran


def test_the_reference_run_stops_once_the_budget_is_spent():
    limits = SandboxLimits(
        cpu_seconds=1.0, wall_seconds=2.0, memory_mb=256, scenario_wall_seconds=1e-9
    )
    with Sandbox(limits) as sandbox:
        env = admit_environment(COUNTER, sandbox)
        report = certify_scenario(_scenario(env.env_id, ["tick"] * 7), env, sandbox)
    reason = next(g.reason for g in report.gates if g.gate == "solution_runs")
    assert report.rejected_gate == "solution_runs"
    assert "1e-09 s certification budget ran out at step 1" in reason, reason
    assert (report.final_state or {}).get("ticks", 0) < 107  # the rest never ran
