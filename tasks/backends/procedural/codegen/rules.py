"""Preconditions: one small function per kind writes the check, another its business-rule text.

Every check is an ``if <violated>: return {"success": False, "error": ...}`` whose message says
what was required and what the state holds, so an agent (and a checking judge) can tell why.
"""

from __future__ import annotations

import re
from typing import Any

from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.codegen.roles import owned_words, pre_owned
from envmill.tasks.backends.procedural.codegen.scope import OpScope, to_single_quotes
from envmill.tasks.backends.procedural.codegen.text import error_return, human_list, lit
from envmill.tasks.backends.procedural.phrasing.words import article_for as article
from envmill.tasks.backends.procedural.spec.paths import resolve_operand, resolve_path
from envmill.tasks.core.field_words import singular
from envmill.tasks.core.instructions import past_participle

NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
OP_WORDS = {
    "<": "less than",
    "<=": "at most",
    ">": "more than",
    ">=": "at least",
    "==": "equal to",
    "!=": "different from",
}
TIME_OP_WORDS = OP_WORDS | {
    "<": "before",
    "<=": "no later than",
    ">": "after",
    ">=": "no earlier than",
}


def fail_if(test: str, text: str) -> list[str]:
    """``if test: return error`` with ``text`` as an f-string (first letter capitalized)."""
    text = text[:1].upper() + text[1:]
    prefix = "f" if "{" in text else ""
    return [f"if {test}:", f"    {error_return(prefix + lit(text))}"]


def pre_field_in(scope: OpScope, pre: Any) -> list[str]:
    expr = scope.path(pre.path)
    field = resolve_path(scope.spec, scope.op, pre.path).field
    who = scope.describe(scope.path_owner(pre.path))
    allowed = human_list(pre.values)
    negated = "" if pre.kind == "field_in" else " not"
    word = "not in" if pre.kind == "field_in" else "in"
    field = field.replace("_", " ")
    current = f"{{{to_single_quotes(expr)}}}"
    text = f"{who} has {field} '{current}'; this needs {field}{negated} {allowed}"
    return fail_if(f"{expr} {word} {lit(tuple(pre.values))}", text)


def pre_compare(scope: OpScope, pre: Any) -> list[str]:
    """Numbers compare as they are; two times as parsed moments (a delay must move later)."""
    left, right = scope.operand(pre.left), scope.operand(pre.right)
    left_text, right_text = scope.operand_text(pre.left), scope.operand_text(pre.right)
    words = OP_WORDS
    if resolve_operand(scope.spec, scope.op, pre.left).spec.type in ("date", "datetime"):
        left, right = f"self._parse_time({left})", f"self._parse_time({right})"
        words = TIME_OP_WORDS
    text = f"{left_text} must be {words[pre.op]} {right_text}"
    return fail_if(f"{left} {NEGATE[pre.op]} {right}", text)


def pre_count_below(scope: OpScope, pre: Any) -> list[str]:
    counted = scope.plan.entity(pre.entity)
    tests = [f'item["{pre.via}"] == {scope.operand(pre.of)}']
    tests += [f'item["{name}"] in {lit(tuple(values))}' for name, values in pre.where.items()]
    limit = scope.operand(pre.limit)
    states = (
        " with "
        + " and ".join(
            f"{name} {' or '.join(map(str, values))}" for name, values in pre.where.items()
        )
        if pre.where
        else ""
    )
    owner = to_single_quotes(scope.operand(pre.of))
    shown = limit if limit[:1].isdigit() else f"{{{to_single_quotes(limit)}}}"
    text = (
        f"{pre.via.removesuffix('_id')} {{{owner}}} already has {{count}} "
        f"{counted.plural.replace('_', ' ')}{states}; "
        f"the limit is {shown}"
    )
    return [
        f"count = sum(1 for item in self.{counted.plural}.values() if {' and '.join(tests)})",
        *fail_if(f"count >= {limit}", text),
    ]


def pre_unique(scope: OpScope, pre: Any) -> list[str]:
    entity = scope.plan.entity(pre.entity)
    test = (
        f'any(str(item["{pre.field}"]).lower() == str({pre.arg}).lower() '
        f"for item in self.{entity.plural}.values())"
    )
    return fail_if(test, f"A {entity.title} with {pre.field} '{{{pre.arg}}}' already exists")


def pre_distinct(scope: OpScope, pre: Any) -> list[str]:
    text = f"The same value was given for {pre.left} and {pre.right}; they must differ"
    return fail_if(f"{pre.left} == {pre.right}", text)


def time_read(scope: OpScope, value: str) -> tuple[list[str], str, bool]:
    """Lines parsing a time operand into ``moment``, its description, and whether it is a date."""
    ref = resolve_operand(scope.spec, scope.op, value)
    expr = scope.operand(value)
    scope.now()
    name = (
        value.replace("_", " ")
        if ref.kind == "arg"
        else (f"the {ref.at.field.replace('_', ' ')} of {scope.describe(ref.at.handle)}")
    )
    text = f"{name} ({{{to_single_quotes(expr)}}})"
    return [f"moment = self._parse_time({expr})"], text, ref.spec.type == "date"


def pre_time_side(scope: OpScope, pre: Any) -> list[str]:
    if pre.hours is not None:
        return pre_early_allowance(scope, pre)
    lines, text, is_date = time_read(scope, pre.value)
    left, right = ("moment.date()", "now.date()") if is_date else ("moment", "now")
    if pre.kind == "in_future":
        test, need = f"{left} <= {right}", "must be in the future"
    else:
        test, need = f"{left} > {right}", "has not been reached yet"
    message = f"{text} {need} (current time {{self.current_time}})"
    return [*lines, *fail_if(f"moment is None or {test}", message)]


def pre_early_allowance(scope: OpScope, pre: Any) -> list[str]:
    """``in_past`` with ``hours``: refused while the moment is more than ``hours`` away (a
    check-in that opens an hour before the appointment)."""
    return _hours_rule(
        scope, pre.value, pre.hours, "Too early: this is possible at most", "moment - {td} > now"
    )


def pre_hours_before(scope: OpScope, pre: Any) -> list[str]:
    return _hours_rule(
        scope, pre.path, pre.hours, "Too late: this must be done at least", "now > moment - {td}"
    )


def _hours_rule(scope: OpScope, at: Any, hours: Any, lead: str, late: str) -> list[str]:
    """A rule on the hours between now and a moment: refused when ``late`` holds."""
    lines, text, _ = time_read(scope, at)
    hours = scope.operand(hours)
    message = (
        f"{lead} {{{to_single_quotes(hours)}}} hours before {text}; current time "
        "{self.current_time}"
    )
    test = "moment is None or " + late.format(td=f"timedelta(hours={hours})")
    return [*lines, *fail_if(test, message)]


def pre_within_days(scope: OpScope, pre: Any) -> list[str]:
    lines, text, _ = time_read(scope, pre.path)
    days = scope.operand(pre.days)
    message = (
        f"Too late: this is only possible within {{{to_single_quotes(days)}}} days after "
        f"{text}; current time {{self.current_time}}"
    )
    test = f"moment is None or now > moment + timedelta(days={days})"
    return [*lines, *fail_if(test, message)]


PRECONDITION_CODE = {
    "exists": lambda scope, pre: [],  # every id argument is looked up with its own error
    "owned": pre_owned,
    "field_in": pre_field_in,
    "field_not_in": pre_field_in,
    "compare": pre_compare,
    "count_below": pre_count_below,
    "unique": pre_unique,
    "distinct": pre_distinct,
    "hours_before": pre_hours_before,
    "within_days": pre_within_days,
    "in_future": pre_time_side,
    "in_past": pre_time_side,
}


def precondition_lines(scope: OpScope, pre: Any) -> list[str]:
    return PRECONDITION_CODE[pre.kind](scope, pre)


# -- business-rule texts -------------------------------------------------------------------------


def operand_words(scope: OpScope, value: Any) -> str:
    ref = resolve_operand(scope.spec, scope.op, value)
    if ref.kind == "const":
        return lit(ref.value)
    if ref.kind == "limit":
        return str(scope.plan.limits[str(ref.value)])
    if ref.kind == "arg":
        return f"the requested {words_of(str(ref.value))}"
    field = words_of(ref.at.field)
    return f"the {field} of the {scope.plan.entity(ref.at.entity).title}"


def rule_text(scope: OpScope, pre: Any) -> str | None:
    """The business rule a precondition enforces, as a person states a policy (None for plain
    existence): what one may do and when, with no attribute or tool names."""
    if pre.rule is not None:
        return one_of_each(as_dollars(pre.rule.format(**scope.plan.limits)))
    if pre.kind == "exists":
        return None
    return one_of_each(RULE_WORDS[pre.kind](scope, pre)) + "."


def action_words(scope: OpScope) -> str:
    """The operation as a person names it: ``delay_flight`` -> "delay a flight"."""
    words = words_of(scope.op.name)
    title = scope.plan.entity(scope.op.entity).title if scope.op.entity else ""
    if title and re.search(rf"\b{re.escape(title)}\b", words):
        return re.sub(rf"\b{re.escape(title)}\b", f"{article(title)} {title}", words, count=1)
    verb, _, thing = words.partition(" ")  # "reserve book" of a member: "reserve a book"
    titles = {entity.title for entity in scope.spec.entities.values()}
    if thing in titles:
        return f"{verb} {article(thing)} {thing}"
    first = thing.split(" ", 1)[0]
    if thing and first not in NOT_AN_OBJECT and not thing.endswith("s"):
        return f"{verb} the {thing}"  # "change the cabin", "increase the capacity" (a breaker)
    return words


# words after a verb that do not start its object ("add to watchlist", "check in")
NOT_AN_OBJECT = frozenset("to in on off out up down from for with into a an the".split())


def as_dollars(text: str) -> str:
    """ "at most 30000 dollars" reads "at most $30,000", as a policy is written."""

    def dollars(match: re.Match[str]) -> str:
        amount = float(match.group(1).replace(",", ""))
        return f"${amount:,.0f}" if amount.is_integer() else f"${amount:,.2f}"

    return re.sub(r"(?<![\d,.$])(\d[\d,]*(?:\.\d+)?) dollars\b", dollars, text)


def one_of_each(text: str) -> str:
    """ "at most 1 open work orders" reads "at most one open work order"."""
    found = r"\b1 ((?:[a-z]+ )?)([a-z]+s)\b"  # "1 batches" reads "one batch", not "one batche"
    return re.sub(found, lambda m: f"one {m.group(1)}{singular(m.group(2))}", text)


def _field_words(scope: OpScope, pre: Any) -> str:
    resolved = resolve_path(scope.spec, scope.op, pre.path)
    title = scope.plan.entity(resolved.entity).title
    if resolved.hops:
        title = words_of(resolved.hops[-1].removesuffix("_id"))
    elif resolved.subject not in ("target", "new"):
        title = words_of(resolved.subject.removesuffix("_id"))
    values = " or ".join(words_of(str(v)) for v in pre.values)
    field = words_of(resolved.field)
    passive = _passive(scope, title, values, pre.kind == "field_in") if field == "status" else None
    if passive:
        return passive
    # "only while the booking is confirmed", not "when the booking's status is confirmed"
    which = f"the {title} is" if field == "status" else f"the {title}'s {field} is"
    if pre.kind == "field_in":
        return f"You can {action_words(scope)} only while {which} {values}"
    return f"You cannot {action_words(scope)} while {which} {values}"


def _passive(scope: OpScope, title: str, values: str, only: bool) -> str | None:
    """ "An event can be rescheduled only while it is draft or on sale", as a policy is written
    (round 25 read "you can reschedule an event only when the event's status is draft or on
    sale" as a rule recited); None when the action is not a verb and its object ("check in a
    guest")."""
    verb, _, thing = action_words(scope).partition(" ")
    counted = re.match(r"(?:a|an|the) [a-z]", thing) or re.fullmatch(r"[a-z ]+s", thing)
    if not counted or len(thing.split()) > MAX_THING_WORDS:  # "tickets", "an event"
        return None
    own = singular(thing.split()[-1]) == title.split()[-1]  # the record the action is on
    plural = not re.match(r"(?:a|an|the) ", thing)  # "tickets", not "a class"
    subject = ("they are" if plural else "it is") if own else f"the {title} is"
    done = past_participle(verb)
    said = f"can be {done} only while" if only else f"cannot be {done} while"
    return f"{thing[:1].upper()}{thing[1:]} {said} {subject} {values}"


MAX_THING_WORDS = 4


def _compare_words(scope: OpScope, pre: Any) -> str:
    left, right = operand_words(scope, pre.left), operand_words(scope, pre.right)
    return f"You can {action_words(scope)} only when {left} is {OP_WORDS[pre.op]} {right}"


def _count_words(scope: OpScope, pre: Any) -> str:
    plural = words_of(scope.plan.entity(pre.entity).plural)
    limit = operand_words(scope, pre.limit)
    per = words_of(pre.via.removesuffix("_id"))
    return (
        f"You can {action_words(scope)} only while there are fewer than {limit} {plural} per {per}"
    )


def _time_words(scope: OpScope, pre: Any) -> str:
    value = getattr(pre, "path", None) or pre.value
    ref = resolve_operand(scope.spec, scope.op, value)
    what = (
        f"the requested {words_of(value)}" if ref.kind == "arg" else f"the {words_of(ref.at.field)}"
    )
    act = action_words(scope)
    if pre.kind == "hours_before":
        return f"You can {act} only at least {operand_words(scope, pre.hours)} hours before {what}"
    if pre.kind == "within_days":
        return f"You can {act} only within {operand_words(scope, pre.days)} days after {what}"
    if pre.kind == "in_past" and pre.hours is not None:
        return f"You can {act} at most {operand_words(scope, pre.hours)} hours before {what}"
    when = "is still in the future" if pre.kind == "in_future" else "has passed"
    return f"You can {act} only when {what} {when}"


RULE_WORDS = {
    "owned": owned_words,
    "field_in": _field_words,
    "field_not_in": _field_words,
    "compare": _compare_words,
    "count_below": _count_words,
    "unique": lambda scope, pre: (
        f"Each {words_of(pre.entity)} needs {article(words_of(pre.field))} {words_of(pre.field)} "
        f"no other {words_of(pre.entity)} uses"
    ),
    "distinct": lambda scope, pre: (
        f"You can {action_words(scope)} only when the {words_of(pre.left)} and the "
        f"{words_of(pre.right)} differ"
    ),
    "hours_before": _time_words,
    "within_days": _time_words,
    "in_future": _time_words,
    "in_past": _time_words,
}
