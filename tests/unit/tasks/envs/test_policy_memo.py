"""The policy remembers verdicts by exact source text: a repeat gets the same verdict as a new
list, and a verdict that depends on the caller's stack (nested too deeply) is never kept."""

from __future__ import annotations

import sys

from envmill.tasks.envs.policy import check_check_source

STATEFUL = (
    "seen = []\n\ndef check(initial_state, final_state):\n"
    "    seen.append(1)\n    return len(seen) == 1\n"
)
NESTED = (
    "def check(initial_state, final_state):\n    return len(" + "[" * 60 + "]" * 60 + ") == 1\n"
)


def test_a_repeat_gets_the_same_verdict_in_a_list_of_its_own():
    first = check_check_source(STATEFUL)
    assert first and all(v.rule for v in first)
    first.clear()  # the caller's list: the remembered verdict stays whole
    again = check_check_source(STATEFUL)
    assert [str(v) for v in again] == [str(v) for v in check_check_source(STATEFUL + "\n")]
    assert again and again is not check_check_source(STATEFUL)


def test_a_verdict_of_the_stack_s_depth_is_worked_out_at_each_depth():
    """Checked first deep in a stack, a source is refused as nested too deeply; checked again
    from a shallow one, it is judged on its merits (a kept verdict would refuse it still)."""

    def deep(levels: int) -> list:
        return deep(levels - 1) if levels else check_check_source(NESTED)

    limit = sys.getrecursionlimit()
    refused = deep(limit - 120)
    assert any("nested too deeply" in str(v) for v in refused), refused
    assert check_check_source(NESTED) == []
