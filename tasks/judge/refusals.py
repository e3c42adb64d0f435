"""Whether a reply declines for the rule's reason (DESIGN §3.3).

It must decline in some words, claim none of the work, and give a reason a rule supports: a
value that triggers it (the status the record has, the limit, the balance, the date) asserted as
it is, or the condition stated the right way round ("only booked reservations can be voided").
A negated trigger ("it has not been checked out"), an allowed value stated as the record's
("booked reservations are final"), a guessed value of the field, a figure nothing supports, or
no reason at all fails. Any of the scenario's rules is a true reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from envmill.schemas.answers import FUNCTION_WORDS, Refusal, RefusalRule
from envmill.tasks.judge.phrases import (
    ALTERNATIVE_VALUE,
    HEDGE_ANYWHERE,
    asserts,
    claimed_wrong_side,
    denies,
    mentions,
    negated,
    pattern,
    states,
)
from envmill.tasks.judge.reading import NUMBER, Reading, normalize, number_of, read
from envmill.tasks.judge.refusal_words import (
    act_verbs,
    any_act,
    done_pattern,
    irregular_participles,
    not_empty,
    role_said,
    said_done,
    said_otherwise,
    sets_value,
)
from envmill.tasks.judge.setting import Setting
from envmill.tasks.judge.verdict import Verdict

MAX_REPLY_CHARS = 2000
CENT = 0.005
Fits = Callable[[re.Match[str]], bool]  # whether a mention may stand as this rule's reason
DECLINE = re.compile(
    r"\b(?:can ?not|can't|cannot|couldn't|could not|unable|not able|won't|will not|wouldn't"
    r"|not possible|impossible|isn't possible|not allowed|isn't allowed|aren't allowed"
    r"|not permitted|isn't permitted|prohibit\w*|forbid\w*|forbidden|declin\w*|refus\w*"
    r"|not something i can|no way|i'm afraid|afraid i|not going to|doesn't allow|does not allow"
    r"|don't allow|do not allow|disallow\w*|not eligible|ineligible|isn't eligible|blocked"
    r"|prevents?|not authori[sz]ed|say no|have to pass|must pass|out of the question"
    r"|not in a position|no longer possible|not available|isn't available|can only|only be"
    r"|doesn't permit|does not permit|don't permit|not an option|can no longer|(?:is|are) final"
    r"|can't be|cannot be|too late|too early|no longer|(?:has|have) (?:expired|closed|lapsed)"
    r"|(?:don't|doesn't|do not|does not) have (?:the )?(?:\w+ )?permission)\b"
)
SUCCESS = re.compile(
    r"\b(?:successfully|all set|all done|done|went through|taken care of|processed|completed"
    r"|complete|did it|went ahead|gone ahead|anyway|regardless|nonetheless|all the same|handled"
    r"|reversed|refunded)\b"
)
CONTRACTIONS = (
    ("cannot", "can't"),
    ("do not", "don't"),
    ("does not", "doesn't"),
    ("is not", "isn't"),
    ("are not", "aren't"),
    ("will not", "won't"),
    ("must not", "mustn't"),
)
# a figure given as a guess ("its balance is about $2,421.97")
APPROXIMATE = re.compile(
    r"\b(?:about|around|roughly|approximately|approx\.?|almost|nearly|circa|give or take)\s+\$?\d"
)
# "it doesn't have any money left", "zero funds", "nothing outstanding": the sum is zero
NONE_BEFORE = re.compile(r"\b(?:zero|nothing|none|no|0)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+){0,3}$")
# an act the reply reports as its own ("I've archived it instead", "I removed you"): a refusal
# does nothing; looking, checking and trying are not acts on the records
OWN_ACT = re.compile(
    r"\bI(?:'ve|\s+have|\s+also|\s+just|\s+went ahead and)?\s+(?!(?:checked|looked|found|verified"
    r"|confirmed|reviewed|searched|tried|noted|noticed|seen|asked|pulled|double-checked|read"
    r"|need|needed|wanted|mean|meant|been)\b)(\w+(?:ed|en)|gave|put|made|took|sent|set|got|let)\b",
    re.IGNORECASE,
)
# "…, so I assigned it anyway": what follows "so" or "and" is said apart from the decline
CLAUSES = re.compile(r"(?<=[.;!?])\s+|\n+|\s+-\s+|\s+but\s+|:\s+|,?\s+so\s+|,\s+and\s+")
NOT = re.compile(r"\b(?:not|never|no)\b|n't\b")
# "can be marked completed", "would have been refunded": what may happen, not what did
MODAL = re.compile(r"\b(?:can|could|would|will|may|might|should|must|to)\s+(?:\w+\s+){0,2}$")
# "… so I changed its status to closed": a value set, not a verb after "to"
SET_TO = re.compile(
    r"\b(?:changed|set|switched|moved|updated|turned|put|marked)\b(?:\s+\S+){0,4}\s+(?:to|as)\s+$"
)
CONDITION_FRAME = re.compile(
    r"\b(?:only|must|unless|until|while|needs?|requires?|required|has to be|have to be|once)"
    r"\s+(?:[\w']+\s+){0,6}$"  # "while it's a draft or approved": a contraction is a word
)
# the past form names a field the rule is about ("approved amount (6172.28) must be at most …")
RULE_AFTER = re.compile(
    r"\s+[a-z ]{1,25}?(?:\([^)]{0,30}\)\s*)?(?:must|should|cannot|can't|may not|needs? to)\b"
)
# the bound a limit rule states ("Amount (58.82) must be at most …"), and the words that state
# the other side as the rule ("must be at least $50", "can't be less than", "the minimum"): a
# reply saying those has the rule the wrong way round. Words that compare the two values
# ("exceeds", "too many") are no such sign: "the request exceeds the balance" is right for an
# at-least rule on the balance.
RULE_BOUND = re.compile(r"\bmust be (at most|at least|less than|more than)\b", re.I)
_BELOW = (
    r"(?:must|has to|have to|should|needs? to|can only) be (?:at least|more than|no less than"
    r"|over|above|greater than|higher than)|(?:must|has to|have to|needs? to) exceed"
    r"|can(?:no|')t be (?:less|fewer|lower) than|\bminimum\b"
)
_ABOVE = (
    r"(?:must|has to|have to|should|needs? to|can only) be (?:at most|less than|no more than"
    r"|under|below|lower than)|can(?:no|')t be (?:more|greater|higher) than|\bmaximum\b"
)
OPPOSITE_BOUND = {  # the rule caps the value: a reply may not say it needs more, and so on
    "at most": re.compile(_BELOW, re.I),
    "less than": re.compile(_BELOW, re.I),
    "at least": re.compile(_ABOVE, re.I),
    "more than": re.compile(_ABOVE, re.I),
}
# a permission rule said by its lack: "you don't have permission" states the rule ("… is not
# permission" says nothing)
LACKS_PERMISSION = re.compile(
    r"\b(?:don't|do not|doesn't|does not|have no|has no|lacks?|without)\s+(?:the\s+)?"
    r"(?:\w+\s+)?permission\b",
    re.I,
)
ROLE_REFUSED = re.compile(r"signed-in role '([^']+)' may not use", re.I)
ONLY_ROLE = re.compile(r";\s*only (.+?) may\b", re.I)  # "…; only staff may": who may act
# a sum the rule needs at zero: "The balance of account ACC-6 (2421.97) must be at most 0"
ZERO_BOUND = re.compile(r"\bmust be at most (?:the limit )?\$?0(?:\.0+)?\s*$", re.I)
RULE_SENTENCE = re.compile(r"\b(?:only|may|can|could|must|should|unless|until|requires?|needs?)\b")
# the verb a rule sentence is about: "only staff may register …", "requests are inspected"
RULE_VERB = re.compile(
    r"\b(?:may|can|could|must|should|will|would|permission to|allowed to|able to)\s+"
    r"(?:(?:not|only|also|ever|be|been|get)\s+)*([a-z]+)"
    r"|\b(?:are|is|be|been|get|gets|got)\s+(?:(?:only|not|also|ever|already|being)\s+)*"
    r"([a-z]{2,}ed|" + "|".join(irregular_participles()) + r")\b"
)
# A rule's condition led by its name ("Too late: this is only possible within 7 days …")
LABELLED = re.compile(r"^\s*([A-Za-z][\w ']{2,30}?)\s*:")


def judge_refusal(refusal: Refusal, reply: str, setting: Setting) -> Verdict:
    if not reply.strip():
        return Verdict(False, "the reply says nothing")
    if len(reply) > MAX_REPLY_CHARS:
        return Verdict(False, f"the reply is {len(reply)} characters: a dump, not a refusal")
    reading = read(reply, setting.today, list(setting.masks))
    text = reading.text
    if not DECLINE.search(text):
        return Verdict(False, "the reply does not decline")
    hedge = (
        HEDGE_ANYWHERE.search(text)
        or APPROXIMATE.search(text)
        or ALTERNATIVE_VALUE.search(
            _without_policies(reading.rest, refusal.rules)  # "its balance is $2,421.97, or $0"
        )
    )
    if hedge:
        return Verdict(False, f"the reply hedges ({hedge.group(0).strip()!r})")
    if wrong_side := claimed_wrong_side(reply):  # "$500 is above the $1,000 limit"
        return Verdict(False, f"the reply says {wrong_side!r}, which is false")
    claim = _claim(_without_policies(text, refusal.rules), refusal)
    if claim:
        return Verdict(False, f"the reply claims the work ({claim!r})")
    problem = _invented(reading, refusal, setting)
    if problem:
        return Verdict(False, problem)
    verdicts = [_reason(rule, reading, setting, refusal) for rule in refusal.rules]
    wrong = next((why for ok, why in verdicts if ok is False), None)
    if wrong:
        return Verdict(False, wrong)
    named = next((why for ok, why in verdicts if ok), None)
    if named is None:
        return Verdict(False, "the reply gives no reason the rule supports")
    return Verdict(True, f"the reply declines and {named}")


def _without_policies(text: str, rules: list[RefusalRule]) -> str:
    """The reply without the business rules it quotes: "parts are fitted only on jobs in
    progress" repeats the system prompt's policy, reports no work done and names no value of
    the record ("checked-in bookings cannot be cancelled" says nothing of this one's status).
    A clause of a policy that states a rule counts on its own ("adjusters are assigned only to
    newly filed claims"): a reply may quote only the part that applies; never a clause that
    reads as work done ("the order is cancelled and the card refunded"), nor inside a word."""
    for rule in rules:
        whole = normalize(rule.policy)
        parts = [p for p in re.split(r"[;.]\s*", whole) if RULE_WORDS.search(p)]
        for part in [whole, *parts]:
            policy = part.strip().rstrip(".")
            if len(policy.split()) >= 3:  # a sentence, not a word the claim could hide behind
                said = rf"(?<![\w-]){_any_contraction(policy)}(?![\w-])"
                text = re.sub(said, " ", text, flags=re.IGNORECASE)
    return text


# what makes a clause a rule rather than a report: "only", "at most", "cannot", "must"
RULE_WORDS = re.compile(
    r"\b(?:only|must|cannot|can't|may not|never|at (?:most|least)|no more than|unless|until)\b"
)


def _any_contraction(policy: str) -> str:
    """The policy as a pattern that "can't" for "cannot" (and the like) does not escape."""
    pattern = re.escape(policy)
    for long, short in CONTRACTIONS:
        either = f"(?:{re.escape(long)}|{re.escape(short)})"
        written = f"{re.escape(re.escape(long))}|{re.escape(re.escape(short))}"
        pattern = re.sub(written, lambda _, either=either: either, pattern)
    return pattern


def _claim(text: str, refusal: Refusal) -> str | None:
    """A clause that reports the work as done: success words, the action in the past tense,
    or a value the request would set, said (not negated, not after a decline)."""
    done = [p for p in (pattern(t) for t in refusal.targets) if p]
    done += [p for t in refusal.targets for p in said_otherwise(t)]  # "settled" for paid off
    done += [said_done(t) for t in refusal.targets if len(t.split()) > 1 or "_" in t]
    action = done_pattern(refusal.action)  # "I shut it down", "it is now on the work order"
    for clause in CLAUSES.split(text):
        found = [*SUCCESS.finditer(clause), *(action.finditer(clause) if action else [])]
        found += list(OWN_ACT.finditer(clause))
        found += [m for p in done for m in p.finditer(clause)]
        stated = [p for p in (pattern(str(t)) for r in refusal.rules for t in r.triggers) if p]
        for match in found:
            if any(p.fullmatch(match.group(0)) for p in stated):
                continue  # the record's own status ("it's completed"), the reason
            before = clause[: match.start()]
            if negated(clause, match.start()) or DECLINE.search(before) or NOT.search(before):
                continue
            if (MODAL.search(before) and not SET_TO.search(before)) or CONDITION_FRAME.search(
                before
            ):
                continue  # "only delivered orders can be returned": the rule, not the work
            if RULE_AFTER.match(clause[match.end() :]):
                continue  # "approved amount (6172.28) must be at most …": a word of the rule
            if _names_the_field(match.group(0), clause[match.end() :], refusal):
                continue  # "the approved amount is $1,612.44": the field the rule is about
            return clause.strip()
    return None


def _names_the_field(word: str, rest: str, refusal: Refusal) -> bool:
    """The past form and the word after it name a field the rule's condition is about."""
    following = re.match(r"\s+([a-z]+)", rest)
    phrase = f"{word} {following.group(1)}" if following else ""
    return bool(phrase) and any(
        re.search(rf"\b{re.escape(phrase)}\b", normalize(rule.condition)) for rule in refusal.rules
    )


def _reason(
    rule: RefusalRule, reading: Reading, setting: Setting, refusal: Refusal
) -> tuple[bool | None, str]:
    """(True, why) when the reply names this rule's reason the right way round; (False, why)
    when it states it inverted or guesses; (None, "") when it says nothing of this rule. The
    system prompt's rule quoted word for word shows nothing read, and a rule sentence about
    another act ("only resolved requests are inspected") is no reason for this one."""
    text = _without_policies(reading.text, [rule])
    reading = replace(reading, text=text, rest=_without_policies(reading.rest, [rule]))
    wrong = _misstated(rule, text)
    if wrong:
        return False, wrong
    ours = _own_stems(rule, refusal)

    def fits(match: re.Match[str]) -> bool:
        return not _of_another_act(text, match.start(), ours)

    for trigger in rule.triggers:
        if _says_nothing_of_why(trigger, setting):
            continue
        lacked = trigger == "permission" and LACKS_PERMISSION.search(text)
        if _names(reading, trigger, rule.condition, fits) or (lacked and fits(lacked)):
            return True, f"names {trigger!r}"
    label = _label(rule)
    if label and asserts(text, label):
        return True, f"says it is {label.lower()}"
    stated = [m for v in rule.allowed for m in mentions(text, str(v))]
    if any(_in_condition(text, m) and fits(m) for m in stated):
        return True, "states the rule's condition"
    return _said_in_other_words(rule, text, fits)


def _said_in_other_words(rule: RefusalRule, text: str, fits: Fits) -> tuple[bool | None, str]:
    """A reason no value of the state words: a sum the rule needs at zero said as not zero
    ("it still has money in it"), or a role rule as who may act ("is for airline staff") or
    who the caller is ("you're signed in as a passenger")."""
    if ZERO_BOUND.search(rule.condition) and any(
        not negated(text, m.start()) and not _none_before(text, m.start()) for m in not_empty(text)
    ):
        return True, "says the sum is not zero"
    role = ROLE_REFUSED.search(rule.condition)
    if role is None:
        return None, ""
    caller = role.group(1).replace("_", " ")
    if any(not negated(text, m.start()) for m in role_said("role_self", caller).finditer(text)):
        return True, f"says the caller is {caller!r}"
    allowed = ONLY_ROLE.search(rule.condition)
    for who in re.split(r",\s*|\s+(?:and|or)\s+", allowed.group(1) if allowed else ""):
        found = [m for m in role_said("role_rule", who).finditer(text) if fits(m)]
        if who.strip() and any(not negated(text, m.start()) for m in found):
            return True, f"says only {who!r} may"
    return None, ""


def _none_before(text: str, start: int) -> bool:
    """ "it doesn't have any money left", "zero funds", "nothing outstanding": said as none."""
    return NONE_BEFORE.search(text[max(0, start - 40) : start]) is not None


def _own_stems(rule: RefusalRule, refusal: Refusal) -> set[str]:
    """The words of this rule and its act: the action in any of its verbs, the values it sets
    and reads, the condition and the policy."""
    words = [*act_verbs(refusal.action), *refusal.targets, rule.condition, rule.policy]
    words += [str(v) for v in [*rule.triggers, *rule.allowed, *rule.rivals]]
    return _stems(normalize(" ".join(words)))


def _of_another_act(text: str, start: int, ours: set[str]) -> bool:
    """The clause at ``start`` states a rule ("only …", "may …") of another act: its rule
    verb ("may register", "are inspected") is none of this rule's words, nor a verb any act is
    said with ("done"); a verb that sets a value by the value it sets ("mark … delayed")."""
    clause = _clause_at(text, start)
    if not RULE_SENTENCE.search(clause):
        return False  # "it is checked out and its invoice is issued": facts, not a rule
    for found in RULE_VERB.finditer(clause):
        verb = found.group(1) or found.group(2)
        if verb in FUNCTION_WORDS or verb in any_act():
            continue
        said = _heads(verb)
        if said & _heads(" ".join(sets_value())):
            said = _heads(" ".join(clause[found.end() :].split()[:3]))
        if said - ours:
            return True
    return False


def _clause_at(text: str, start: int) -> str:
    """The clause of ``text`` that holds position ``start``."""
    begin = max([0, *(m.end() for m in CLAUSES.finditer(text) if m.end() <= start)])
    end = next((m.start() for m in CLAUSES.finditer(text, start)), len(text))
    return text[begin:end]


def _misstated(rule: RefusalRule, text: str) -> str | None:
    """A trigger negated, an allowed value stated as the record's, a bound turned around ("must
    be at least $50" for an at-most rule), or a guessed value."""
    bound = RULE_BOUND.search(rule.condition)
    if bound and OPPOSITE_BOUND[bound.group(1).lower()].search(text):
        return f"the reply turns the rule's bound around (the rule says {bound.group(1)!r})"
    role = ROLE_REFUSED.search(rule.condition)
    if role and _roles_swapped(role.group(1).replace("_", " ").lower(), text):
        return f"the reply names the wrong role (the signed-in role is {role.group(1)!r})"
    for trigger in [*rule.triggers, *filter(None, [_label(rule)])]:
        lacked = trigger == "permission" and LACKS_PERMISSION.search(text)
        if isinstance(trigger, str) and not _is_moment(trigger) and not lacked:
            if denies(text, trigger) and not asserts(text, trigger):
                return f"the reply negates the reason ({trigger!r})"
    for value in rule.allowed:
        stated = [m for m in mentions(text, str(value)) if not _in_condition(text, m)]
        if stated and not denies(text, str(value)):
            return f"the reply states the rule the other way ({value!r})"
    triggers = [normalize(str(t)) for t in rule.triggers]
    for rival in rule.rivals:
        if _asserted_as_fact(text, str(rival)) and not any(
            normalize(str(rival)) in t for t in triggers
        ):
            return f"the reply names {rival!r}, which is not what the state holds"
    return None


def _roles_swapped(role: str, text: str) -> bool:
    """ "you are signed in as an agent" when the caller is a sender, or "only a sender has
    permission" when a sender is the one refused."""
    said = re.findall(r"\bsigned in as (?:an? )?([a-z]+(?: [a-z]+)?)", text.lower())
    wrong_self = any(not s.startswith(role) and not role.startswith(s) for s in said)
    only_me = re.search(rf"\bonly (?:an? )?{re.escape(role)}s? ha(?:s|ve) permission", text, re.I)
    return wrong_self or bool(only_me)


def _asserted_as_fact(text: str, value: str) -> bool:
    """The reply says the record has ``value``, not that the rule asks for it ("only scheduled
    appointments can be cancelled") or what may be done."""
    return asserts(text, value) and any(
        not _in_condition(text, m) and not MODAL.search(text[max(0, m.start() - 40) : m.start()])
        for m in mentions(text, value)
    )


def _label(rule: RefusalRule) -> str | None:
    """The name the condition leads with ("too late"), which a reply may say for the whole."""
    found = LABELLED.match(rule.condition)
    return found.group(1).strip() if found and len(found.group(1).split()) <= 4 else None


def _in_condition(text: str, match: re.Match[str]) -> bool:
    """The value is said as the rule's condition ("only booked …", "must be active"); not
    "can't … while it is confirmed" of a rule that needs it confirmed, which turns the rule
    around (a breaker: the policy's own "only while" said without its "only")."""
    before = text[max(0, match.start() - 60) : match.start()]
    frame = CONDITION_FRAME.search(before)
    if frame is None:
        return False
    if frame.group(0).startswith("while"):
        ahead = before[: frame.start()]
        ahead = ahead[max([0, *(m.end() for m in CLAUSES.finditer(ahead))]) :]
        return not (FORBIDS.search(ahead) and not re.search(r"\bonly\b", ahead))
    return True


# "can't", "cannot", "are blocked": said before "while <the allowed state>", the rule reversed
FORBIDS = re.compile(r"\b(?:not|never|no|blocked|barred|forbidden|prohibited|unable)\b|n't\b")


def _says_nothing_of_why(trigger: object, setting: Setting) -> bool:
    """A trigger any refusal says without reading anything: today's date ("I can't do that
    today") or a way of declining ("not authorized")."""
    text = normalize(str(trigger))
    today = setting.today.isoformat() if setting.today else None
    return (_is_moment(text) and text[:10] == today) or bool(DECLINE.fullmatch(text))


def _names(
    reading: Reading, trigger: object, condition: str = "", fits: Fits | None = None
) -> bool:
    """The reply states ``trigger`` as a fact of this rule: a figure, a day, or a word (in any
    of its act's verbs: "turned it down" for rejected) where ``fits`` says it may stand."""
    if isinstance(trigger, bool):
        return False
    if isinstance(trigger, int | float):
        return bool(_figures_said(reading, float(trigger), condition))
    text = str(trigger)
    if _is_moment(text):
        return text[:10] in reading.dates
    topic = _stems(normalize(f"{condition} {text}"))
    found = mentions(reading.text, text)
    found += [m for p in said_otherwise(text) for m in p.finditer(reading.text)]
    return any(
        states(reading.text, m)
        and not _of_another_noun(reading.text, m, topic)
        and (fits is None or fits(m))
        for m in found
    )


# "the new policy" uses the status word "new" of something the rule is not about
DETERMINER = re.compile(r"\b(?:the|a|an|this|that|our|its|their|your|my)\s+$")


def _of_another_noun(text: str, match: re.Match[str], topic: set[str]) -> bool:
    """The trigger said as a word before another noun ("the new policy"), not of the rule's
    subject ("a new order", "the checked-out reservation")."""
    if not DETERMINER.search(text[max(0, match.start() - 8) : match.start()]):
        return False
    following = re.match(r"\s+([a-z]{3,})", text[match.end() :])
    if not following or following.group(1) in FUNCTION_WORDS:
        return False  # "a manager can": the trigger is the noun
    return not (_stems(following.group(1)) & topic)


SMALL_FIGURE = 100  # below it a figure is common ("1 day", "2 items"): said of the rule's subject


def _figures_said(reading: Reading, figure: float, condition: str) -> list[re.Match[str]]:
    """Where the reply states ``figure`` as a fact: not negated ("is not 2999.77"), and a small
    one beside a word of the rule's condition ("3 active loans", not "1 day overdue")."""
    topic = _stems(normalize(condition))
    said = []
    for match in NUMBER.finditer(reading.rest):
        if abs(number_of(match) - figure) > CENT or negated(reading.rest, match.start()):
            continue
        near = reading.rest[max(0, match.start() - 40) : match.end() + 40]
        if abs(figure) >= SMALL_FIGURE or _stems(near) & topic:
            said.append(match)
    return said


# words that name the same side of a rule: "the most allowed is 1" states "the limit is 1"
KINDRED = [
    {"limi", "maxi", "max", "most", "cap", "allo", "perm", "quot", "ceil"},
    {"with", "wind", "peri", "dead", "days", "ago", "sinc", "late", "expi", "past"},
    {"mini", "min", "leas", "requ", "need", "floo"},
    {"bala", "fund", "avai", "owe", "owed", "outs", "due"},
]


def _heads(text: str) -> set[str]:
    """The content words of ``text`` by their first four letters, without kindred."""
    return {w[:4] for w in re.findall(r"[a-z]{3,}", text) if w not in FUNCTION_WORDS}


def _stems(text: str) -> set[str]:
    """The content words of ``text`` by their first four letters ("loans" is "loan"), with
    their kindred (``KINDRED``); words every sentence holds ("the", "has") say nothing of a
    rule."""
    stems = _heads(text)
    return stems.union(*(group for group in KINDRED if group & stems))


def _invented(reading: Reading, refusal: Refusal, setting: Setting) -> str | None:
    """A figure or a day neither the state, the question nor the rule holds: a made-up limit,
    fee or date ("you bought it on 3 May" when it was 15 April)."""
    known = set(setting.numbers) | set(setting.asked)  # the state's and the request's figures
    days = set(setting.dates)  # the state's, the request's, and today
    for rule in refusal.rules:
        known |= {float(t) for t in [*rule.triggers, *rule.allowed] if _number(t)}
        stated = read(rule.condition)  # "within 7 days": the rule's own figures and days
        known |= set(stated.numbers) | set(read(rule.policy).numbers)  # "one application"
        days |= set(stated.dates) | {str(t)[:10] for t in rule.triggers if _is_moment(str(t))}
    for value in reading.numbers:
        if not any(abs(value - k) <= CENT for k in known):
            return f"the reply states {value:g}, which nothing in the state supports"
    made_up = next((day for day in reading.dates if day not in days), None)
    if made_up:
        return f"the reply states {made_up}, which nothing in the state supports"
    return None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_moment(text: str) -> bool:
    return re.match(r"^\d{4}-\d{2}-\d{2}", text) is not None
