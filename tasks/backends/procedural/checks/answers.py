"""What the agent must say, as data for envmill's judge (DESIGN §3.3): the typed value an answer
scenario asks for, and the rule a refusal rests on. No check reads the reply.

The generator knows the value and its type (it ran the query), the rivals an agent could guess
(another record's value of the field, every value of an enum, a neighbouring count, the
unfiltered total) and the values the question itself names; for a refusal, what the rule's error
quotes of this state (the status the record has, the limit or balance, the date).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from envmill.schemas.answers import AnswerType, ExpectedAnswer, Refusal, RefusalRule

ValueKind = Literal["number", "date", "datetime", "text"]
MAX_RIVALS = 30
KIND_TYPES: dict[str, AnswerType] = {"number": "number", "date": "date", "datetime": "datetime"}
# rule words any refusal could say ("only a manager can …"): no reason on their own
GENERIC_REASONS = frozenset({"only", "own", "staff", "rule", "rules", "policy", "allowed"})


@dataclass(frozen=True)
class RefusalEvidence:
    """What a refusal must name to show it read this state: one of ``named`` (the status the
    record has), ``amounts`` (a limit, a balance, a count) or ``days``; ``rivals`` are the other
    values of the named field (a guess), ``known`` further numbers a reply may repeat (the
    request's own)."""

    named: tuple[str, ...] = ()
    amounts: tuple[float, ...] = ()
    days: tuple[str, ...] = ()
    rivals: tuple[str, ...] = ()
    known: tuple[float, ...] = ()
    allowed: tuple[str, ...] = ()  # the values the rule asks for ("only from scheduled")


def expected_answer(
    value: Any,
    kind: ValueKind,
    *,
    answer_type: AnswerType | None = None,
    competing: list[Any] = (),  # type: ignore[assignment]
    exempt: list[Any] = (),  # type: ignore[assignment]
) -> ExpectedAnswer:
    """The typed answer to a question: ``value`` read as ``kind`` (or as ``answer_type`` when
    the generator knows better: a count, money, an enum), its rivals and its context."""
    typed: AnswerType = answer_type or KIND_TYPES.get(kind, "text")
    shown = _as(typed, value)
    rivals = [_as(typed, v) for v in competing if _differs(_as(typed, v), shown)]
    return ExpectedAnswer(
        type=typed,
        value=shown,
        rivals=list(dict.fromkeys(rivals))[:MAX_RIVALS],
        context=[_as(typed, v) for v in exempt if v is not None],
    )


def refusal_record(
    rule_id: str,
    condition: str,
    evidence: RefusalEvidence,
    reasons: list[str],
    *,
    action: str,
    targets: list[str],
    subject: str,
    policy: str = "",
) -> Refusal:
    """The rule a refusal rests on: what of this state triggers it (else the rule's words that
    say more than any refusal would)."""
    specific = [r for r in reasons if r.casefold() not in GENERIC_REASONS]
    triggers: list[Any] = [*evidence.named, *evidence.amounts, *evidence.days]
    triggers = triggers or specific or list(reasons)
    rule = RefusalRule(
        rule_id=rule_id,
        condition=condition,
        triggers=triggers,
        allowed=list(evidence.allowed),
        rivals=list(evidence.rivals),
        policy=policy,
    )
    return Refusal(rules=[rule], action=action, targets=targets, subject=subject)


def _as(kind: str, value: Any) -> Any:
    if kind in ("count", "number", "money"):
        number = float(value)
        return int(number) if kind == "count" or number.is_integer() else round(number, 6)
    if kind == "date":
        return str(value)[:10]
    if kind == "datetime":
        return str(value)[:16]
    return str(value)


def _differs(value: Any, target: Any) -> bool:
    if isinstance(value, int | float) and isinstance(target, int | float):
        return abs(value - target) >= 0.005
    shown, wanted = str(value).casefold(), str(target).casefold()
    return bool(shown) and shown not in wanted and wanted not in shown
