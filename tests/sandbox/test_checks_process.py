"""Checks the policy passed share one process per request (DESIGN §3.3, issue 26); anything else
gets a process per evaluation; the other image evaluates in the other order; plans travel in
one round trip each."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox import Sandbox
from tests.conftest import TEST_LIMITS

sys.path.insert(0, str(Path(__file__).parents[2] / "tasks" / "sandbox"))
import checkrunner  # noqa: E402  (the host's module: stdlib only, importable as the zygote does)

HOLDS = "def check(initial_state, final_state):\n    return final_state['n'] == 2\n"
GROWS = "def check(initial_state, final_state):\n    return final_state['n'] > initial_state['n']\n"
HANGS_ON_TWO = (
    "def check(initial_state, final_state):\n"
    "    while final_state['n'] == 2:\n        pass\n    return True\n"
)
ENDS_ITS_PROCESS = (  # never passes the policy; the caller says it did, to test the runner
    "import os\n\ndef check(initial_state, final_state):\n    os._exit(3)\n"
)
# an order-dependent pair the policy refuses (process-wide decimal flags): told pure, they share
# a process, and the flag one leaves is what the other reads
SETS_A_FLAG = (
    "import decimal\n\ndef check(initial_state, final_state):\n"
    "    decimal.Decimal(1) / decimal.Decimal(3)\n    return True\n"
)
READS_THE_FLAG = (
    "import decimal\n\ndef check(initial_state, final_state):\n"
    "    return not decimal.getcontext().flags[decimal.Inexact]\n"
)
PAIRS = [({"n": 1}, {"n": 2}), ({"n": 1}, {"n": 1}), ({"n": 0}, {"n": 3})]


def _request(checks: list[str], pure: bool, probe: bool = True, **more) -> dict:
    states = [state for pair in PAIRS for state in pair]
    return {
        "checks": checks,
        "states": states,
        "pairs": [[2 * j, 2 * j + 1] for j in range(len(PAIRS))],
        "full_pairs": len(PAIRS),
        "probe": probe,
        "pure": [pure] * len(checks),
        "seconds_per_check": 2.0,
        **more,
    }


@pytest.fixture
def forks(monkeypatch) -> list[int]:
    """The runner's forks in this process, counted."""
    counted, fork = [], os.fork

    def counting_fork() -> int:
        pid = fork()
        if pid:
            counted.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    return counted


def test_pure_checks_share_one_process_and_others_get_one_per_evaluation(forks):
    reply = checkrunner.run_checks(_request([HOLDS, GROWS], pure=True), repr)
    assert len(forks) == 1
    values = [[cell["value"] for cell in row] for row in reply["results"]]
    assert values == [[True, False, False], [True, False, True]]
    assert reply["unstable"] == [False, False]
    forks.clear()
    assert checkrunner.run_checks(_request([HOLDS, GROWS], pure=False), repr) == reply
    assert len(forks) == 2 * len(PAIRS) + 2  # each evaluation, then each check's probe


def test_a_check_that_hangs_or_ends_the_shared_process_costs_only_its_own_cells(forks):
    request = _request([HANGS_ON_TWO, ENDS_ITS_PROCESS, HOLDS], pure=True, probe=False)
    request["seconds_per_check"] = 0.3
    reply = checkrunner.run_checks(request, repr)
    hangs, ends, holds = reply["results"]
    assert [cell["late"] for cell in hangs] == [True, False, False]
    assert all(cell["late"] and cell["value"] is None for cell in ends)
    assert [cell["value"] for cell in holds] == [True, False, False]
    assert len(forks) == 1 + 1 + 3  # a new child after each answer that never came


def test_the_probes_together_then_apart_when_one_of_them_hangs():
    """A check that hangs only in a kept namespace (its second call) makes the probes of all
    checks go quiet at once; each is probed again alone, so only that one is unstable."""
    kept = (
        "calls = []\n\ndef check(initial_state, final_state):\n"
        "    calls.append(1)\n    while len(calls) > 3:\n        pass\n    return True\n"
    )
    request = _request([kept, HOLDS], pure=True)
    request["seconds_per_check"] = 0.2
    reply = checkrunner.run_checks(request, repr)
    assert reply["unstable"] == [True, False]


def test_the_other_order_shows_a_check_that_reads_what_another_left():
    with Sandbox(TEST_LIMITS) as box:
        checks = [SETS_A_FLAG, READS_THE_FLAG]
        forward = box.run_checks(checks, PAIRS, pure=[True, True], probe=False)
        backward = box.run_checks(checks, PAIRS, pure=[True, True], probe=False, reverse=True)
    assert [cell.value for cell in forward.cells[1]] == [False] * 3
    assert [cell.value for cell in backward.cells[1]] == [True] * 3


def test_a_checks_host_serves_many_requests_and_none_sees_another(monkeypatch):
    forge = (
        "import sys\n\ndef check(initial_state, final_state):\n"
        "    sys.modules['checkrunner']._call = lambda *a, **k: (True, None)\n    return True\n"
    )
    never = "def check(initial_state, final_state):\n    return False\n"
    with Sandbox(TEST_LIMITS) as box:
        spawned = []
        spawn = box.spawn_host
        monkeypatch.setattr(box, "spawn_host", lambda **kw: spawned.append(kw) or spawn(**kw))
        box.run_checks([forge], PAIRS, pure=[True])  # a liar: the forgery stays in its child
        outcome = box.run_checks([never], PAIRS, pure=[True])
        assert [cell.value for cell in outcome.cells[0]] == [False] * 3
        box.run_checks([HOLDS], PAIRS, image=1)
        assert len(spawned) == 2  # one host per image, kept
        box._images[0].stop()  # a restarted zygote: its hosts are gone, a new one is spawned
        assert box.run_checks([HOLDS], PAIRS).cells[0][0].value is True
        assert len(spawned) == 3


def test_many_plans_in_one_round_trip_each_from_a_fresh_copy_of_its_start(sandbox):
    source = (
        "class Tally:\n    def __init__(self):\n        self.rows = []\n\n"
        "    def add(self, x: int) -> dict:\n        self.rows.append(x)\n"
        "        return {'success': x > 0, 'data': len(self.rows)}\n"
    )
    with sandbox.episode(source, "Tally") as episode:
        starts = [{"rows": []}, {"rows": [9]}]
        plans = [(0, [("add", {"x": 1}), ("add", {"x": -1})]), (1, [("add", {"x": 2})])]
        plans.append((0, [("add", {"x": 3})]))
        runs = episode.replays(starts, plans)
        traced = episode.replays(starts, plans[:1], trace=True)
    assert runs is not None and traced is not None
    assert [run.succeeded for run in runs] == [[True, False], [True], [True]]
    assert [run.state for run in runs] == [{"rows": [1, -1]}, {"rows": [9, 2]}, {"rows": [3]}]
    assert starts == [{"rows": []}, {"rows": [9]}]
    assert traced[0].states == [{"rows": [1]}, {"rows": [1, -1]}]
    assert [result["data"] for result in traced[0].results or []] == [1, 2]


def test_a_plan_that_hangs_fails_the_whole_round_trip():
    source = (
        "class Spin:\n    def __init__(self):\n        self.n = 0\n\n"
        "    def spin(self) -> dict:\n        while True:\n            pass\n\n"
        "    def bump(self) -> dict:\n        self.n += 1\n        return {'success': True}\n"
    )
    limits = SandboxLimits(cpu_seconds=2, wall_seconds=0.5, memory_mb=256)
    with Sandbox(limits) as box, box.episode(source, "Spin") as episode:
        assert episode.replays([{"n": 0}], [(0, [("bump", {})]), (0, [("spin", {})])]) is None
        assert episode.call("bump", {}).state == {"n": 1}  # a fresh host, from the last state


REMEMBERS = '''
SEEN = []


class Ledger:
    """Entries, numbered by a list the module keeps: a second episode in the same process
    numbers from where the first stopped."""

    def __init__(self):
        self.entries = {}

    def add(self, text: str) -> dict:
        """Add an entry.

        Args:
            text: What to write.
        """
        SEEN.append(text)
        self.entries[str(len(SEEN))] = text
        return {"success": True, "data": len(SEEN)}
'''


def test_reused_episodes_share_a_process_and_start_from_their_own_state(sandbox):
    with sandbox.episode(REMEMBERS, "Ledger", {"entries": {}}, reuse=True) as first:
        assert first.call("add", {"text": "a"}).result["data"] == 1
        pid = first._host.pid
    with sandbox.episode(REMEMBERS, "Ledger", {"entries": {"9": "z"}}, reuse=True) as second:
        assert second._host.pid == pid
        assert second.state() == {"entries": {"9": "z"}}
        assert second.call("add", {"text": "b"}).result["data"] == 2  # the module remembers
    with sandbox.episode(REMEMBERS, "Ledger", {"entries": {}}) as fresh:
        assert fresh._host.pid != pid
        assert fresh.call("add", {"text": "c"}).result["data"] == 1


def test_a_program_that_carries_state_between_episodes_is_not_admitted(sandbox):
    """What lets certification keep a host per environment: admission refuses a module that
    keeps state outside its instance (and the replay in a fresh process backs that up)."""
    from envmill.tasks.envs import EnvironmentRejected, admit_environment

    with pytest.raises(EnvironmentRejected, match="module_state"):
        admit_environment(REMEMBERS, sandbox)


LIVE_RECORD = '''
class Store:
    """Items with a status."""

    def __init__(self) -> None:
        self.items: dict[str, dict] = {}

    def get_item(self, item_id: str) -> dict:
        """Look up one item.

        Args:
            item_id: The item id.
        """
        return {"success": True, "data": self.items[item_id]}

    def archive_item(self, item_id: str) -> dict:
        """Archive an item.

        Args:
            item_id: The item id.
        """
        self.items[item_id]["status"] = "archived"
        return {"success": True}
'''


def test_a_traced_result_is_what_the_step_returned_then(sandbox):
    """A breaker's: a tool that returns the live record showed, in step 1's result, the
    change step 2 made to it (the reference trajectory then read 'archived' too early)."""
    start = {"items": {"I1": {"status": "active"}}}
    steps = [("get_item", {"item_id": "I1"}), ("archive_item", {"item_id": "I1"})]
    with sandbox.episode(LIVE_RECORD, "Store", start) as episode:
        (traced,) = episode.replays([start], [(0, steps)], trace=True) or [None]
    assert traced is not None and traced.results is not None
    assert traced.results[0]["data"] == {"status": "active"}


MEMO_DEFAULT = '''
def _remember(key, item, memo={}):
    if key not in memo:
        memo[key] = dict(item)
    return dict(memo[key])


class Store:
    """Items with an owner."""

    def __init__(self) -> None:
        self.items: dict[str, dict] = {}

    def get_item(self, item_id: str) -> dict:
        """Look up one item.

        Args:
            item_id: The item id.
        """
        return {"success": True, "data": _remember(item_id, self.items[item_id])}
'''


def test_each_certification_runs_its_reference_in_a_fresh_process(sandbox):
    """A breaker's: with a kept host, a memo in a mutable default carried the first scenario's
    record into the next ones' reference results."""
    from envmill.schemas.scenario import ScenarioSpec
    from envmill.tasks.certify import certify_scenario
    from envmill.tasks.envs import admit_environment

    env = admit_environment(MEMO_DEFAULT, sandbox)
    owners = []
    for owner in ("alice", "bob", "carol"):
        scenario = ScenarioSpec(
            env_id=env.env_id,
            backend="manual",
            task="Who owns I1?",
            initial_state={"items": {"I1": {"owner": owner}}},
            reference_solution=[{"tool": "get_item", "arguments": {"item_id": "I1"}}],
            checks=[{"description": "x", "code": "def check(a, b):\n    return True\n"}],
        )
        owners.append(certify_scenario(scenario, env, sandbox).step_results[0]["data"]["owner"])
    assert owners == ["alice", "bob", "carol"]


def test_a_shared_child_past_half_its_cpu_hands_over_to_a_new_one():
    """A breaker's: four checks of 0.3 s CPU each on three pairs, under a 1 s CPU limit, had
    their later cells marked late; each process's limit is now spent by its own checks."""
    busy = (
        "def check(initial_state, final_state):\n"
        "    total = 0\n    for n in range(8_000_000):\n        total += n\n"
        "    return final_state['n'] == 2\n"
    )
    limits = SandboxLimits(cpu_seconds=1, wall_seconds=4, memory_mb=256)
    with Sandbox(limits) as box:
        outcome = box.run_checks([busy] * 4, PAIRS, pure=[True] * 4, probe=False)
    assert [[cell.value for cell in row] for row in outcome.cells] == [[True, False, False]] * 4


def test_a_dead_zygote_costs_no_checks_request():
    """A breaker's: after the zygote was killed, the first request went to a kept host of it."""
    with Sandbox(TEST_LIMITS) as box:
        assert box.run_checks([HOLDS], PAIRS).ok
        zygote = box._images[0].process
        assert zygote is not None
        zygote.kill()
        zygote.wait()
        outcome = box.run_checks([HOLDS], PAIRS, pure=[True])
    assert outcome.ok and [cell.value for cell in outcome.cells[0]] == [True, False, False]


def test_a_change_equality_misses_is_still_a_change(sandbox):
    """Each evaluation gets its states copied from a serialized form that keeps types and key
    order, and the same form tells whether the check changed them: 1 becoming True, or a key
    moved to the end, equal as values, are changes; reading is not."""
    checks = [
        "def check(initial_state, final_state):\n    final_state['n'] = True\n    return True\n",
        "def check(initial_state, final_state):\n"
        "    final_state['n'] = final_state.pop('n')\n    return True\n",
        "def check(initial_state, final_state):\n    final_state['n'] = 1.0\n    return True\n",
        "def check(initial_state, final_state):\n"
        "    return list(final_state) == ['n', 'm'] and type(final_state['n']) is int\n",
    ]
    outcome = sandbox.run_checks(checks, [({"n": 1, "m": 2}, {"n": 1, "m": 2})] * 2)
    assert [[cell.mutated for cell in row] for row in outcome.cells] == [[True] * 2] * 3 + [
        [False] * 2
    ]
    assert [cell.value for cell in outcome.cells[3]] == [True, True]


@pytest.mark.parametrize(
    "state, why",
    [({"name": "Ana \ud800"}, "surrogate"), ({"n": float("nan")}, "JSON")],
)
def test_a_state_no_frame_can_carry_is_one_error_and_the_host_goes_on(sandbox, state, why):
    """A breaker's: a state the factory was handed (a model's JSON) with a lone surrogate made
    ``run_checks`` raise; now nothing is sent, the outcome says why, and the next request is
    served as usual."""
    outcome = sandbox.run_checks([HOLDS], [(state, state)])
    assert outcome.error is not None and "cannot be sent" in outcome.error, outcome
    assert why in outcome.error
    assert [cell.value for cell in sandbox.run_checks([HOLDS], PAIRS).cells[0]] == [
        True,
        False,
        False,
    ]


def test_a_state_nested_too_deeply_for_a_frame_is_one_error(sandbox):
    deep: dict = {}
    for _ in range(3000):
        deep = {"n": deep}
    outcome = sandbox.run_checks([HOLDS], [(deep, deep)])
    assert outcome.error is not None and "nested too deeply" in outcome.error, outcome
