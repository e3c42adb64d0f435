"""The first user message of an episode, from its task (DESIGN §3.4).

A conversational task may be an instruction to a simulated user, τ-bench style ("You are Alice
Moreno. You cannot make your appointment … When the agent asks, you give …"). The agent must not
see the instruction: the opening keeps what the user wants, in the first person, and leaves out
the self-introduction (the name is asked for like any fact) and the lines about conduct. Text in
quotes is the user's own words and stays as written.
"""

from __future__ import annotations

import re
import zlib

from envmill.schemas.scenario import ScenarioSpec

FALLBACK_OPENING = "Hi, I need some help."
GREETINGS = ("Hi!", "Hello.", "Hi there,", "Hey,", "Hi,", "", "Hello,")
# {name}: the first name a colleague goes by; the full name stays a fact asked for
PLACE_GREETINGS = (
    "Hi, it's {name} from the {place}.",
    "Hello, this is {name} at the {place}.",
    "Hi, {name} from the {place} here.",
)
ROLE_GREETINGS = (
    "Hi, it's {name}, {a} {role} here.",
    "Hello, this is {name}.",  # not "{name} here, one of the service advisers" (round 30)
    "Hi, this is {name}; I'm {a} {role} here.",
)
# staff say where they work: Ann Lee works at the box office, Tim Pope is a loan officer at
# the lender; a student at the university is a customer
STAFF = re.compile(
    r"^You are (?P<name>[^(.]+?)\s*\((?:you work (?:at|on|in) the (?P<place>[^()]+?)|"
    r"you are an? (?P<role>[a-z ]*?(?:officer|clerk|agent|adviser|handler|planner|dispatcher|"
    r"manager|coordinator|receptionist|recruiter|teller|pharmacist|librarian|administrator|technician|nurse))"
    r" (?:at|in|on|with|for) the (?P<where>[^()]+?))\)"
)
WANT_TO_KNOW = re.compile(r"^I(?:'d like| want) to know (.+?)\.((?:\s.*)?)$", re.S)
ASKING = (
    "I want to know {}.",
    "Could you tell me {}?",
    "Can you check {} for me?",
    "I'd like to know {}.",
)
TITLES = ("Dr.", "Mr.", "Mrs.", "Ms.", "Mx.", "Prof.", "St.", "Jr.", "Sr.")
# lower-case words inside a name: "Maria de la Cruz", "Estate of Harold Jensen" (a donor that
# is an estate or a firm introduces itself no more than a person does; round 50: "Hi, I am
# Estate of Harold Jensen (I am a donor to the charity)")
PARTICLES = frozenset(
    "de da del della di du la le van von der den ter bin ibn al el of and for the &".split()
)
INTRODUCTION = re.compile(r"^(?:You are|You're|Your name is)\s+(.+?)\s*([.!])$", re.S)
# "a guest named Ann Lee", not "my trip was called off" (round 26: "My trip was; please …")
NAMED = re.compile(r"\s+(?:named|called)\s+(?=[A-Z\"“'])[^,.;!?]+")
# lines about how the user behaves, not what they want
CONDUCT = re.compile(
    r"^(?:When the agent asks|If the agent|Once the agent|The agent\b|If asked\b|"
    r"You are fine with either|You only want the information|You just want to know|"
    r"You are reactive|You answer the agent|You share a detail only|"
    r"You (?:will not|won't|do not|don't|never) (?:say|give|reveal|volunteer)|"
    r"(?:Do not|Don't|Never) (?:reveal|give|say|volunteer|mention|offer|share))\b"
)
# the user's details and which namesake they mean, at the end of a procedural persona
DETAILS = re.compile(
    r"\s*\b(?:If asked, these are your details:|If the agent finds more than one \w[\w ]* by "
    r"that name, you mean\b).*$",
    re.S,
)
QUOTED = re.compile(r"(\"[^\"]*\"|“[^”]*”)")
# "you" as an object: what follows it is not the verb of a sentence it starts
OBJECT_FOLLOWERS = (
    r"(?=\s*(?:[.,;:!?)]|$|\s+(?:a|an|the|my|your|some|more|less|to|for|about|that|this|what|how|"
    r"if|when|back|out|in|up|off|down|again|with|on|at|from|by|any|all|one|and|or)\b))"
)
SECOND_PERSON = (
    (r"\byou want the agent to\b", "please"),
    (r"\byou are\b", "I am"),
    (r"\byou were\b", "I was"),
    (r"\byou're\b", "I'm"),
    (r"\byou've\b", "I've"),
    (r"\byou'll\b", "I'll"),
    (r"\byou'd\b", "I'd"),
    (r"\byourself\b", "myself"),
    (r"\byours\b", "mine"),
    (r"\byour\b", "my"),
    (r"\blet you\b", "let me"),
    (r"(?<!\bthank )\byou\b" + OBJECT_FOLLOWERS, "me"),
    (r"(?<!\bthank )\byou\b", "I"),
)


def opening_message(scenario: ScenarioSpec) -> str:
    """The first user message: the task as it is, or, for an instruction to a conversational
    user, its request in the user's own voice."""
    task = scenario.task.strip()
    if scenario.mode != "conversational" or not re.match(r"(?:You|Your)\b", task):
        return task
    task = DETAILS.sub("", task)  # before sentences: a value may hold "." ("Apt. 270")
    spoken, choice = [], zlib.crc32(task.encode())
    for sentence in sentences_of(task):
        if not CONDUCT.match(sentence):
            quoted = _quoted_speech(sentence)
            spoken.append(quoted if quoted is not None else _voiced(_without_name(sentence)))
    text = _asked(" ".join(s for s in spoken if s), choice)
    if text:
        greeting = _greeting(task, choice)
        if greeting.endswith(",") and not re.match(r"I\b", text):  # "Hi, I …" but "Hi! The …"
            greeting = greeting[:-1] + "!"
        text = f"{greeting} {text}".strip()
    text = re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
    text = ONE_PLEASE.sub(r"\1\2", text)  # "Please cancel my appointment, please."
    return text.strip() or FALLBACK_OPENING


# a second "please" at the end of a sentence that already has one (the phrasing's tidy too)
ONE_PLEASE = re.compile(r"(\bplease\b[^.?!]*?),? please([.?!])", re.I)


def _greeting(task: str, choice: int) -> str:
    """How the user says hello: a member of staff says where they work ("Hi, this is the box
    office."), which tells the agent what "a session" is; a customer just says hello."""
    found = STAFF.match(task)
    if found is None:
        return GREETINGS[choice % len(GREETINGS)]
    place = found.group("place") or (found.group("role") == "agent" and found.group("where"))
    name = _first_name(found.group("name"))
    if place:  # "an agent at the reservations desk" says where, not "agent here"; a colleague
        # says "the community desk", not "… of the coworking space" (round 51)
        place = re.sub(r" of the [^,;]+$", "", place)
        return PLACE_GREETINGS[choice % len(PLACE_GREETINGS)].format(name=name, place=place)
    role = found.group("role")
    a = "an" if role[:1] in "aeiou" else "a"
    return ROLE_GREETINGS[choice % len(ROLE_GREETINGS)].format(name=name, a=a, role=role)


def _first_name(name: str) -> str:
    """ "Lisa" of "Lisa Conner", "Ruth" of "Dr. Ruth Ames": what a colleague says on the phone."""
    words = [w for w in name.split() if w not in TITLES]
    return words[0] if words else name.strip()


def _asked(text: str, choice: int) -> str:
    """ "I want to know the fare of a flight." said as one of the ways people ask."""
    found = WANT_TO_KNOW.match(text)
    if found is None:
        return text
    if found.group(1).startswith("this: "):  # the persona's "You want to know this: …": the
        asked = found.group(1).removeprefix("this: ")  # question as the user asks it (round 59)
        return f"{asked[:1].upper()}{asked[1:]}?{found.group(2)}"
    way = choice // len(GREETINGS) % len(ASKING)  # not tied to the greeting drawn
    return ASKING[way].format(found.group(1)) + found.group(2)


def sentences_of(text: str) -> list[str]:
    """Sentences, not split after a title ("Dr. Moreno") and split where a space is missing
    ("Moreno.You want")."""
    text = re.sub(r"(?<=[a-z][.!?])(?=[A-Z])", " ", text)
    pieces: list[str] = []
    for piece in re.split(r"(?<=[.!?])\s+", text):
        if pieces and pieces[-1].endswith(TITLES):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces


def in_first_person(text: str) -> str:
    for pattern, replacement in SECOND_PERSON:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    return text


def _quoted_speech(sentence: str) -> str | None:
    """'Tell the agent "I lost my card"' is what the user says: the quoted words, or None."""
    found = re.match(r'^(?:Tell|Say to|Ask) the agent[:,]?\s*(?:that\s*)?["“](.+?)["”]', sentence)
    return found.group(1) if found else None


def _voiced(sentence: str) -> str:
    """The sentence in the first person, text in quotes as written."""
    parts = QUOTED.split(sentence)
    return "".join(p if QUOTED.fullmatch(p) else in_first_person(p) for p in parts)


def _without_name(sentence: str) -> str:
    """The sentence without the user's name: "You are Alice Moreno." goes, "You are Alice
    Moreno, a premium patient." becomes "You are a premium patient.", "a teacher named Alice
    Moreno" becomes "a teacher"."""
    found = INTRODUCTION.match(sentence)
    if found is None:
        return NAMED.sub("", sentence)
    said, end = found.group(1), found.group(2)
    name, _, rest = said.partition(",")
    if not _is_name(re.sub(r"\s*\(.*\)$", "", name)):
        return NAMED.sub("", sentence)
    return f"You are {rest.strip()}{end}" if rest.strip() else ""


def _is_name(text: str) -> bool:
    """A person's name: one to five words, capitalised but for particles ("Maria de la Cruz"),
    maybe after a title."""
    words = text.split()
    if words and words[0] in TITLES:
        words = words[1:]
    if not 1 <= len(words) <= 5 or not words[0][:1].isupper():
        return False
    return all(w[:1].isupper() or w in PARTICLES for w in words)
