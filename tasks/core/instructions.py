"""What a tool does, in words: the opening instruction of its description.

Every tool's description opens with what it does, as an instruction ("Dispatch a booked
shipment that holds at least one parcel."). The agent says a change in those words (the
reference's confirmations, ``rollout/saying.py``) and the policy says who may do it in them
("Only agents may dispatch a booked shipment."), never in the tool's name ("hand to network").
"""

from __future__ import annotations

import re

MAX_WORDS = 14  # a clause longer than this is cut back to its verb and object
# where the clause stops saying what is done and starts saying when or how
OTHER_ENDS = (
    r"[;:(]|\.(?:\s|$)|,| — | - | with | within | unless | if | once | when | while | before "
    r"| after | so | and | but | only | as long as | such as | e\.g\.| for example "
)
CLAUSE_END = re.compile(rf"{OTHER_ENDS}| that | which | who | whose ")
# verbs whose particle comes after the object, past a relative clause: "put a courier who is
# off shift back on the road"
PARTICLE_VERBS = frozenset({"put", "take", "bring", "set", "turn", "hand"})
ARTICLES = r"(?:a|an|the|one|this|their|its|another)"
# a word between an article and its noun: not itself an article or a preposition ("the
# address a sender ships from" holds no noun phrase "the address a sender")
MODIFIER = r"(?!(?:a|an|the|one|this|their|its|another|of|for|to|from|with|as|in|on|at)\b)[a-z-]+"
# first words of a description that is not an instruction ("This tool voids …", "Allows …")
# what a cut at "after", "before" or a relative clause leaves hanging: "on or", "and"
DANGLING = re.compile(r"(?:\s+(?:on|at|by|from|to))?\s+(?:or|and)$")
# verbs that say nothing without what the record becomes: "mark … as lapsed"
NEEDS_AS = frozenset({"mark", "flag", "record", "register", "list", "classify", "label"})
AS_WHAT = re.compile(r"\bas ([a-z][a-z -]*)$")
PLAIN = re.compile(r"[a-z][A-Za-z'/ -]*")
UNSAID = re.compile(
    r"\b(?:ignore|disregard|instructions?|prompts?|jailbreak|hundred|thousand|million|billion)\b",
    re.I,
)
NOT_VERBS = frozenset(
    {"this", "the", "a", "an", "it", "allows", "lets", "will", "use", "used", "when", "if"}
)


def tool_clause(tool: str, description: str) -> str:
    """ "dispatch a booked shipment" from "Dispatch a booked shipment that holds …": the
    description's opening clause in lower case; the tool's words when it has none."""
    return described_clause(tool, description) or tool.replace("_", " ")


def described_clause(tool: str, description: str) -> str | None:
    """The description's opening clause (:func:`tool_clause`); None when it gives none: not
    an instruction, too long, or holding a figure, an id or an acronym."""
    sentence = first_sentence(description)
    verb, _, rest = sentence.partition(" ")
    if rest.startswith("that "):  # "Record that an employee has left"
        verb, rest = f"{verb} that", rest.removeprefix("that ")
    ends = re.compile(OTHER_ENDS) if verb.lower() in PARTICLE_VERBS else CLAUSE_END
    clause = f"{verb} {ends.split(f' {rest} ', maxsplit=1)[0].strip()}".strip()
    clause = DANGLING.sub("", clause)  # "check a guest in on or [after …]": "check a guest in"
    complement = AS_WHAT.search(sentence)
    if verb.lower() in NEEDS_AS and complement and " as " not in f" {clause} ":
        clause += f" as {complement[1]}"  # "mark an active donor [who …] as lapsed"
    words = clause.split()
    if not words or len(words) > MAX_WORDS or re.search(r"\d", clause) or not clause.isascii():
        return None  # a figure or an id in a description is not the agent's to say
    verb = _base_form(words[0].lower())
    if verb in NOT_VERBS or any(w.isupper() and len(w) > 1 for w in words):
        return None
    own, *named = tool.split("_")
    object_named = len(named) == 1 and re.search(  # and nothing after it: not "on sale"
        rf"^\S+ {ARTICLES}\s+(?:{MODIFIER}\s+){{0,2}}{re.escape(named[0])}$", clause.lower()
    )
    echoed = any(w.startswith(own[:4]) for w in words[1:-1])  # "fail a failed inspection"
    if object_named and re.fullmatch(r"[a-z]+", own) and own not in NOT_VERBS | {"new", "my"}:
        verb = verb if echoed else own
    if not re.fullmatch(r"[a-z]+", verb) or verb.endswith(("ing", "ed")) and verb != own:
        return None
    clause = " ".join([verb, *words[1:]])
    # an LLM-written description is untrusted and its clause reaches a training reply: plain
    # words only, no markup, no figure in words, nothing that talks to a model
    return clause if PLAIN.fullmatch(clause) and not UNSAID.search(clause) else None


def _base_form(verb: str) -> str:
    """ "cancel" of "Cancels", "apply" of "Applies", "dispatch" of "Dispatches"."""
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "xes", "zes", "sses")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") and not verb.endswith(("ss", "us", "is")) else verb


def first_sentence(description: str) -> str:
    """Up to its first full stop, and before an example ("e.g. ORD-1", "such as …")."""
    first = description.strip().split("\n")[0]
    first = re.split(r"\s(?:e\.g\.|i\.e\.|such as|for example)", first, maxsplit=1)[0]
    return re.split(r"[.;](?:\s|$)", first, maxsplit=1)[0].strip()


# the verbs of tool descriptions whose participle is not made by rule ("sold", "taken")
IRREGULAR_PARTICIPLES = {
    "begin": "begun", "bring": "brought", "buy": "bought", "choose": "chosen", "cut": "cut",
    "draw": "drawn", "forgive": "forgiven", "freeze": "frozen", "get": "got", "give": "given",
    "hold": "held", "keep": "kept", "lay": "laid", "leave": "left", "lend": "lent",
    "let": "let", "make": "made", "pay": "paid", "put": "put", "read": "read",
    "rebuild": "rebuilt", "repay": "repaid", "reset": "reset", "resend": "resent",
    "retake": "retaken", "sell": "sold", "send": "sent", "set": "set", "shut": "shut",
    "spend": "spent", "take": "taken", "tell": "told", "undo": "undone", "upset": "upset",
    "wind": "wound", "withdraw": "withdrawn", "withhold": "withheld", "write": "written",
    "bid": "bid", "broadcast": "broadcast", "build": "built", "cast": "cast", "do": "done",
    "equip": "equipped", "find": "found", "go": "gone", "hit": "hit", "lead": "led",
    "meet": "met", "overdraw": "overdrawn", "override": "overridden", "overpay": "overpaid",
    "prepay": "prepaid", "quiz": "quizzed", "quit": "quit", "redo": "redone", "rerun": "rerun",
    "rewrite": "rewritten", "run": "run", "split": "split", "spin": "spun", "stand": "stood",
    "teach": "taught", "win": "won", "format": "formatted", "dial": "dialled",
    "fuel": "fuelled", "refuel": "refuelled", "say": "said", "lose": "lost", "see": "seen",
    "show": "shown", "break": "broken", "catch": "caught", "deal": "dealt", "feed": "fed",
    "fly": "flown", "drive": "driven", "hear": "heard", "hang": "hung", "know": "known",
    "mean": "meant", "seek": "sought", "shoot": "shot", "speak": "spoken", "steal": "stolen",
    "stick": "stuck", "strike": "struck", "think": "thought", "throw": "thrown", "wear": "worn",
    "bind": "bound", "dig": "dug", "forget": "forgotten", "hide": "hidden", "ride": "ridden",
    "come": "come", "become": "become", "understand": "understood", "rebind": "rebound",
}  # fmt: skip
PARTICLES = frozenset({"in", "up", "out", "off", "on", "down", "over", "back"})
# stressed first, so nothing doubles though the ending says it might: "offered", "limited"
FIRST_STRESSED = frozenset(
    {"offer", "differ", "suffer", "proffer", "limit", "vomit", "prohibit", "inhibit", "exhibit"}
)
# endings stressed last, whose consonant doubles: "admitted", "transferred", "controlled"
STRESSED_LAST = ("mit", "fer", "cur", "trol", "pel", "gret", "bid")


def past_participle(clause: str) -> str:
    """ "sold 1 ticket" of "sell 1 ticket": the clause's first word as a participle, the rest
    as it is, in British spelling as the rest of the corpus ("cancelled", "enrolled")."""
    verb, space, rest = clause.partition(" ")
    return f"{_participle(verb.lower())}{space}{rest}"


def _participle(verb: str) -> str:
    head, _, last = verb.partition("-")
    if last in PARTICLES:  # "check-in": "checked in"
        return f"{_participle(head)} {last}"
    if "-" in verb:  # "re-open"
        head, _, last = verb.rpartition("-")
        return f"{head}-{_participle(last)}"
    if verb in IRREGULAR_PARTICIPLES:
        return IRREGULAR_PARTICIPLES[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("c"):
        return verb + "ked"  # "panicked"
    if verb in FIRST_STRESSED:
        return verb + "ed"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ied"
    single = re.search(r"[^aeiou][aeiou]([^aeiouwxy])$", verb)
    one_syllable = len(re.findall(r"[aeiouy]+", verb)) == 1
    if single and (one_syllable or verb.endswith(STRESSED_LAST) or single.group(1) == "l"):
        return verb + single.group(1) + "ed"  # "dropped", "admitted", "cancelled"
    return verb + "ed"
