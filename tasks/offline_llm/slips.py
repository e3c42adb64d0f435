"""Slips the fake model makes in SkelBuilder's stages, set with ``/_config`` (``slips=[...]``).

Where a fault breaks the transport or the JSON, a slip is a mistake in what the answer *says*,
the kind a capable model makes: a method that does not parse, ids from ``uuid``, code that reaches
for the network, a loop that never ends, a set in the state, too few operations, an initial state
with an attribute the class lacks, a judge that fails everything or doubts one change, a tester
that plans every call as if it ran alone, a probe state that changes nothing or does not load.
A slip hits the first answer of its stage for the topics it names; the answer to a repair is
correct unless it is ``persistent``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

SlipKind = Literal[
    "syntax",  # a method whose signature lacks its colon
    "uuid_ids",  # a create method that makes its ids with uuid (an import the policy refuses)
    "hostile",  # a method that sends the API key to a remote host
    "runaway",  # a query that never returns
    "state_set",  # __init__ keeps a set in the state
    "few_operations",  # an operation list shorter than asked
    "bad_state",  # an initial state with an attribute the class does not create
    "judge_fails_all",  # the judge says fail to every probe
    "judge_warns",  # the judge warns on the first successful state change it sees (a domain doubt)
    "naive_tester",  # the testing agent plans each call as if alone on the initial state
    "useless_probe_state",  # a probe state that changes nothing, with the refused calls again
    "bad_probe_state",  # a probe state with an attribute the class does not create
    "contradictory_rules",  # the rules review finds rules 1 and 2 contradict (and drops rule 2)
    "trivial_checks",  # scenario checks that hold on any state (refused: not_trivial)
    "wrong_step",  # a scenario step that names a tool the environment does not have
    "counter_behind",  # a scenario state whose id counters are behind its ids (an invariant)
    "forgetful_checks",  # only the first check: a partial solution can keep full reward
    "vague_task",  # a task that names none of the values its steps use (refused: grounded)
]
METHOD_SLIPS = ("syntax", "uuid_ids", "hostile", "runaway")


@dataclass(frozen=True)
class Slip:
    kind: SlipKind
    topic: str | None = None  # topics containing this text (any case); None: every topic
    operation: str | None = None  # the method a method slip spoils; None: chosen by kind
    persistent: bool = False  # repairs and retries make the same slip

    def hits(self, topic: str) -> bool:
        return self.topic is None or self.topic.lower() in topic.lower()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def slips_problem(value: Any) -> str | None:
    """What is wrong with a ``slips`` setting, or None."""
    if not isinstance(value, list | tuple):
        return "slips: a list of slips"
    for item in value:
        try:
            parse_slip(item)
        except (TypeError, ValueError) as exc:
            return f"slips: {exc}"
    return None


def parse_slip(item: Any) -> Slip:
    """A slip from its JSON object; ValueError or TypeError says what is wrong."""
    if isinstance(item, Slip):
        return item
    if not isinstance(item, dict):
        raise ValueError("a slip is a JSON object")
    slip = Slip(**item)
    if slip.kind not in get_args(SlipKind):
        raise ValueError(
            f"unknown slip kind {slip.kind!r} (known: {', '.join(get_args(SlipKind))})"
        )
    for name in ("topic", "operation"):
        if not isinstance(getattr(slip, name), str | None):
            raise ValueError(f"{name}: a string or null")
    if not isinstance(slip.persistent, bool):
        raise ValueError("persistent: true or false")
    return slip


def find_slips(slips: Any, kinds: tuple[str, ...], topic: str) -> list[Slip]:
    """Every slip of one of ``kinds`` that hits ``topic``, in the order they were set."""
    found = [parse_slip(item) for item in slips or ()]
    return [slip for slip in found if slip.kind in kinds and slip.hits(topic)]
