"""The sandbox runtime: episodes, failures as values, recovery, and no leftovers."""

from __future__ import annotations

import pytest

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox import CheckCell, ReplayOutcome, Sandbox
from tests.conftest import TEST_LIMITS
from tests.procs import assert_no_new_processes, descendants

COUNTER = '''
class Counter:
    """A tiny environment with a tool for each way a call can go wrong."""

    def __init__(self):
        self.count = 0
        self.log = []

    def bump(self, by: int = 1) -> dict:
        self.count += by
        self.log.append(by)
        return {"success": True, "message": "bumped", "data": self.count}

    def read(self) -> dict:
        return {"success": True, "data": self.count}

    def explode(self) -> dict:
        raise KeyError("no such thing")

    def spin(self) -> dict:
        while True:
            pass

    def hog(self) -> dict:
        blocks = []
        while True:
            blocks.append(bytearray(50 << 20))

    def not_a_dict(self) -> list:
        return [1, 2]

    def not_json(self) -> dict:
        return {"success": True, "data": {1: "int key"}}

    def huge(self) -> dict:
        return {"success": True, "data": "x" * (64 << 20)}
'''


def test_episode_keeps_one_instance_across_calls(sandbox):
    with sandbox.episode(COUNTER, "Counter") as episode:
        assert episode.call("bump", {"by": 2}).result["data"] == 2
        outcome = episode.call("bump", {})
        assert outcome.result == {"success": True, "message": "bumped", "data": 3}
        assert outcome.state == {"count": 3, "log": [2, 1]}


def test_state_loads_into_a_fresh_instance(sandbox):
    with sandbox.episode(COUNTER, "Counter", {"count": 40}) as episode:
        assert episode.call("bump", {"by": 2}).state == {"count": 42, "log": [2]}
        assert episode.load_state({"log": [9]}).state == {"count": 0, "log": [9]}


def test_unknown_state_key_is_refused(sandbox):
    with sandbox.episode(COUNTER, "Counter", {"count": 1, "sneaky": 2}) as episode:
        assert not episode.loaded
        assert "sneaky" in episode.load_outcome.error


def test_a_raising_tool_is_an_error_result(sandbox):
    with sandbox.episode(COUNTER, "Counter") as episode:
        assert episode.call("explode", {}).result == {
            "success": False,
            "error": "KeyError: 'no such thing'",
        }
        assert episode.call("read", {}).result["success"] is True


@pytest.mark.parametrize(
    ("tool", "fragment"),
    [("not_a_dict", "not a dict"), ("not_json", "non-string key"), ("bump", "TypeError")],
)
def test_bad_results_and_arguments_are_tool_errors(sandbox, tool, fragment):
    arguments = {"nope": 1} if tool == "bump" else {}
    with sandbox.episode(COUNTER, "Counter") as episode:
        result = episode.call(tool, arguments).result
    assert result["success"] is False and fragment in result["error"]


@pytest.mark.parametrize("tool", ["_private", "__init__", "missing", "count"])
def test_only_public_methods_are_tools(sandbox, tool):
    with sandbox.episode(COUNTER, "Counter") as episode:
        outcome = episode.call(tool, {})
    assert not outcome.ok and outcome.result["success"] is False


@pytest.mark.parametrize(
    ("tool", "error_class", "fragment"),
    [
        ("spin", "killed", "killed by a limit"),  # RLIMIT_CPU (1 s) fires before the wall (2 s)
        ("hog", None, "MemoryError"),  # RLIMIT_AS: the program sees MemoryError, the host lives
        ("huge", "too_large", "exceeds"),
    ],
)
def test_a_runaway_call_is_stopped_and_the_episode_goes_on(sandbox, tool, error_class, fragment):
    with sandbox.episode(COUNTER, "Counter") as episode:
        episode.call("bump", {"by": 5})
        outcome = episode.call(tool, {})
        assert outcome.result["success"] is False and fragment in outcome.result["error"]
        assert outcome.error_class == error_class
        # the host was replaced (or survived) with the last good state
        assert episode.call("read", {}).result == {"success": True, "data": 5}


def test_replay_answers_per_step_and_a_dead_host_is_a_value(sandbox):
    with sandbox.episode(COUNTER, "Counter") as episode:
        steps = [("bump", {}), ("explode", {}), ("read", {})]
        replayed = episode.replay({"count": 10}, steps)
        assert replayed == ReplayOutcome(
            succeeded=[True, False, True], state={"count": 11, "log": [1]}
        )
        crashed = episode.replay({"count": 1}, [("bump", {}), ("spin", {})])
        assert not crashed.ok and crashed.error_class == "killed"
        assert crashed.succeeded == [False, False] and crashed.state is None
        # the next call runs in a fresh host, from the last state a host reported
        assert episode.call("read", {}).result == {"success": True, "data": 11}


def test_wall_timeout_is_enforced_by_the_parent():
    source = (
        "class Sleeper:\n    def __init__(self):\n        self.n = 0\n    def wait(self) -> dict:\n"
        "        import time\n        time.sleep(30)\n        return {}\n"
    )
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=0.5, memory_mb=256)
    with Sandbox(limits) as box, box.episode(source, "Sleeper") as episode:
        outcome = episode.call("wait", {})
    assert outcome.error_class == "timeout" and "0.5 s" in outcome.error


def test_checks_run_on_copies_and_report_mutation(sandbox):
    checks = [
        "def check(initial_state, final_state):\n"
        "    return final_state['n'] > initial_state['n']\n",
        "def check(initial_state, final_state):\n    final_state['n'] = 0\n    return True\n",
        "def check(initial_state, final_state):\n    return 1\n",
        "def check(initial_state, final_state):\n    return final_state['missing']\n",
    ]
    outcome = sandbox.run_checks(checks, [({"n": 1}, {"n": 2}), ({"n": 1}, {"n": 1})])
    rows = outcome.cells
    assert [cell.value for cell in rows[0]] == [True, False]
    assert rows[1][0] == CheckCell(value=True, error=None, mutated=True)
    assert rows[2][0].value is None and "not bool" in rows[2][0].error
    assert rows[3][0].value is None and "KeyError" in rows[3][0].error


def test_a_check_is_given_the_two_states_and_never_a_reply(sandbox):
    """Even a check the policy would refuse (the sandbox runs what it is sent) cannot read a
    reply: a third parameter keeps its default or the call fails; nothing fills it."""
    talk = "He is checked in."
    checks = [
        f"def check(initial_state, final_state, answer={talk!r}):\n    return answer != {talk!r}\n",
        "def check(initial_state, final_state, answer):\n    return True\n",
        "def check(*states):\n    return len(states) == 2\n",
    ]
    rows = sandbox.run_checks(checks, [({"n": 1}, {"n": 1})]).cells
    assert rows[0][0].value is False and rows[2][0].value is True
    assert rows[1][0].value is None and "answer" in rows[1][0].error


def test_hanging_checks_share_one_time_budget():
    """Six checks that never return, on three pairs, would take 6 × 3 × 0.25 s one by one; the
    request's budget (CHECKS_BUDGET × wall_seconds = 2 s) ends it, and the honest check that
    comes after them still answers only if time is left (here: none, said so)."""
    hang = "def check(initial_state, final_state):\n    while True:\n        pass\n"
    honest = "def check(initial_state, final_state):\n    return True\n"
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=0.5, memory_mb=256)
    with Sandbox(limits) as box:
        outcome = box.run_checks([hang] * 6 + [honest], [({"n": 1}, {"n": 2})] * 3)
    errors = [cell.error for row in outcome.cells for cell in row]
    assert all(cell.value is None for row in outcome.cells for cell in row)
    assert errors[0].startswith("no answer within 0.25 s")
    assert errors[-1].startswith("no answer within the checks' time budget")


def test_basic_isolation_fallback_runs_the_same_calls():
    limits = TEST_LIMITS.model_copy(update={"isolation": "basic"})
    with Sandbox(limits) as box:
        assert box.isolation == "rlimits+scrubbed-env+tmp-cwd"
        with box.episode(COUNTER, "Counter") as episode:
            assert episode.call("bump", {"by": 3}).state["count"] == 3
            assert episode.call("spin", {}).result["success"] is False
            assert episode.call("read", {}).result["data"] == 3


def test_closing_the_sandbox_leaves_no_process():
    before = descendants()
    with Sandbox(TEST_LIMITS) as box:
        for _ in range(3):
            with box.episode(COUNTER, "Counter") as episode:
                episode.call("spin", {})
    assert_no_new_processes(before)


def test_a_module_with_a_wide_non_ascii_docstring_loads():
    """The zygote's control datagram is bounded in bytes, not characters (issue 9)."""
    source = f'"""{"é" * 40_000}"""\n' + COUNTER
    with Sandbox(TEST_LIMITS) as box:
        with box.episode(source, "Counter") as episode:
            assert episode.loaded, episode.load_outcome
            assert episode.call("bump", {}).result["success"]
        with box.episode(COUNTER, "Counter") as bystander:
            assert bystander.call("read", {}).result == {"success": True, "data": 0}


def test_an_episode_keeps_at_most_its_byte_budget():
    limits = TEST_LIMITS.model_copy(update={"max_episode_bytes": 1 << 16})
    with Sandbox(limits) as box, box.episode(COUNTER, "Counter") as episode:
        outcomes = [episode.call("bump", {"by": 1}) for _ in range(2000)]
    refused = [i for i, o in enumerate(outcomes) if o.error_class == "too_large"]
    assert outcomes[0].result["success"] and refused
    assert all(outcomes[i].error_class == "too_large" for i in range(refused[0], 2000))
    assert "may keep" in outcomes[-1].error


def test_a_reply_of_many_small_values_is_refused_before_decoding():
    source = COUNTER + (
        "\n    def many(self) -> dict:\n        return {'success': True, 'data': [{}] * 300000}\n"
    )
    with Sandbox(TEST_LIMITS) as box, box.episode(source, "Counter") as episode:
        outcome = episode.call("many", {})
        assert outcome.error_class == "too_large" and "values" in outcome.error
        assert episode.call("read", {}).result["success"]


def test_hosts_run_under_the_syscall_filter(sandbox):
    if not sandbox.level.seccomp:
        pytest.skip("no libseccomp binding here")
    source = COUNTER + (
        "\n    def spawn(self) -> dict:\n        import os\n        try:\n"
        "            os.execv('/bin/sh', ['sh'])\n        except OSError as exc:\n"
        "            return {'success': False, 'error': repr(exc)}\n"
    )
    with sandbox.episode(source, "Counter") as episode:
        assert "Operation not permitted" in episode.call("spawn", {}).result["error"]
    assert "seccomp" in sandbox.isolation


def test_the_zygote_bounds_its_own_memory(sandbox):
    """A hostile source compiled in the zygote must not grow it without end (issue 9)."""
    with sandbox.episode(COUNTER, "Counter") as episode:
        assert episode.loaded
    zygotes = [
        pid
        for pid in descendants()
        if "zygote.py" in " ".join(_cmdline(pid)) and "unshare" not in _cmdline(pid)[0]
    ]
    assert zygotes, "no zygote found"
    for pid in zygotes:
        limits = open(f"/proc/{pid}/limits").read()
        line = next(row for row in limits.splitlines() if row.startswith("Max address space"))
        assert "unlimited" not in line, line


def _cmdline(pid: int) -> list[str]:
    try:
        return open(f"/proc/{pid}/cmdline").read().split("\0")
    except OSError:
        return []


def test_a_check_cannot_forge_the_checks_after_it(sandbox):
    """Each (check, pair) runs in a process of its own: rewriting the runner reaches nothing."""
    forger = (
        "import sys\n\ndef check(initial_state, final_state):\n"
        "    runner = sys.modules['checkrunner']\n"
        "    runner._call = lambda *a, **k: (True, None)\n    return True\n"
    )
    honest = "def check(initial_state, final_state):\n    return final_state['n'] == 2\n"
    outcome = sandbox.run_checks([forger, honest], [({"n": 1}, {"n": 1})] * 2)
    assert [cell.value for cell in outcome.cells[1]] == [False, False]


def test_hosts_cannot_signal_each_other_through_file_locks(sandbox):
    if not sandbox.level.seccomp:
        pytest.skip("no libseccomp binding here")
    source = COUNTER + (
        "\n    def lock(self) -> dict:\n        import os\n        try:\n"
        "            os.lockf(0, os.F_TLOCK, 1)\n        except OSError as exc:\n"
        "            return {'success': False, 'error': repr(exc)}\n"
        "        return {'success': True}\n"
    )
    with sandbox.episode(source, "Counter") as episode:
        assert "Operation not permitted" in episode.call("lock", {}).result["error"]


def test_only_the_runner_says_a_cell_was_late():
    """A check that hangs on one pair is late there (and not probed); one that raises an error
    reading like a timeout is not late, and is probed like any other."""
    hangs_on_two = (
        "def check(initial_state, final_state):\n"
        "    while final_state['n'] == 2:\n        pass\n    return True\n"
    )
    mimic = (
        "def check(initial_state, final_state):\n"
        "    raise ValueError('no answer within 0.25 s (it hung or ended its process)')\n"
    )
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=0.5, memory_mb=256)
    with Sandbox(limits) as box:
        outcome = box.run_checks(
            [hangs_on_two, mimic], [({"n": 1}, {"n": 1}), ({"n": 1}, {"n": 2})]
        )
    assert [cell.late for cell in outcome.cells[0]] == [False, True]
    assert [cell.late for cell in outcome.cells[1]] == [False, False]
    assert outcome.cells[1][0].error.startswith("ValueError: no answer within")
