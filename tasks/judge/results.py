"""The verdict on the tool results an agent obtained (a scenario's ``expected_results``).

Some tasks are met by what the agent found out rather than by a state it changed (BFCL's
multi-turn reads: "what is in the folder?"). Checks judge states only and never read the
conversation (DESIGN §3.3), so envmill judges the results, as it judges an answer: for every user
message i, each result the scenario expects of it (a multiset, compared by canonical JSON) must be
among the results the agent obtained from the start up to the end of message i. A result obtained
early counts for later messages; one obtained only after its message was answered does not.
The verdict counts as one more check in the reward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from envmill.schemas.ids import canonical_json
from envmill.tasks.judge.verdict import Verdict

SHOWN = 160  # characters of a missing result a reason quotes


def judge_results(
    expected: Sequence[Sequence[dict[str, Any]]] | None,
    obtained: Sequence[Sequence[Any]],
) -> Verdict | None:
    """The verdict on ``obtained`` (per user message, the tool results the agent got while it
    was answering that message; a message never sent got none); None when nothing is expected.
    """
    if expected is None:
        return None
    have: Counter[str] = Counter()
    for index, wanted in enumerate(expected):
        if index < len(obtained):
            have.update(canonical_json(result) for result in obtained[index])
        missing = Counter(canonical_json(result) for result in wanted) - have
        if missing:
            shown = next(iter(missing))
            shown = shown if len(shown) <= SHOWN else f"{shown[:SHOWN]}…"
            return Verdict(
                False,
                f"by the end of user message {index + 1} the agent had not obtained "
                f"{sum(missing.values())} expected result(s), e.g. {shown}",
            )
    count = sum(len(wanted) for wanted in expected)
    return Verdict(True, f"all {count} expected results were obtained in time")


def results_by_message(
    results: Sequence[Any], bounds: Sequence[tuple[int, int]]
) -> list[list[Any]]:
    """A flat run's results split by user message (``ScenarioContent.turn_bounds``); a result
    past the last bound belongs to the last message."""
    split = [list(results[start:end]) for start, end in bounds]
    if split and len(results) > bounds[-1][1]:
        split[-1] += list(results[bounds[-1][1] :])
    return split
