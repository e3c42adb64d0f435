"""What a user reads: task text generated for every catalog domain through the real sandbox reads
as plain sentences (capitals, one final mark, no raw ISO times, no tool names), free-text values
come from curated lists, and the seeded initial states are realistic (a flight does not land where
it took off, a booking fits its property, a ticket is resolved after it was opened)."""

from __future__ import annotations

import json
import random
import re

import pytest

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.manifest import ToolManifest
from envmill.tasks.backends.procedural.phrasing.task import Clause, choose_opening, compose_clauses
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep
from envmill.tasks.backends.procedural.scenarios.generate import generate_scenario_batch
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.envs.reading import compute_env_id

DOMAINS = list_domains()
SEEDS = (0, 1)
PER_ENV = 6
CONNECTOR = re.compile(
    r"(?:First,|Then,|\bthen|Also,|After that,|Next,|Finally,|Lastly,|and finally) (\S+)"
)
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:")
# a field's words used as a noun ("the placed at of order …"), not as English ("due on 3 May")
NOUN_USE = r"(?:the|its|their|a|an|my|your|whose)\s+"


@pytest.fixture(scope="module")
def generated(sandbox) -> list[tuple[str, object, list]]:
    """(domain, compiled, scenarios) for every domain and seed."""
    batches = []
    for domain in DOMAINS:
        for seed in SEEDS:
            compiled = compile_environment(load_domain(domain), seed)
            env_id = compute_env_id(compiled.source)
            batch = generate_scenario_batch(compiled, env_id, PER_ENV, seed, sandbox)
            batches.append((domain, compiled, batch.scenarios))
    return batches


def texts_of(scenario) -> list[str]:
    """What the user says up front: the task (a conversational user says the rest when asked)."""
    return [scenario.task]


def known_values(scenario) -> list[str]:
    """Strings a name or id may start with: state values and solution arguments."""
    values: list[str] = []
    for collection in scenario.initial_state.values():
        if isinstance(collection, dict):
            for record in collection.values():
                if isinstance(record, dict):
                    values += [v for v in record.values() if isinstance(v, str)]
    for step in scenario.reference_solution:
        values += [v for v in step.arguments.values() if isinstance(v, str)]
    return values


def test_every_domain_yields_scenarios(generated):
    for domain, _, scenarios in generated:
        assert len(scenarios) >= PER_ENV - 2, domain


def test_tasks_read_as_sentences(generated):
    for domain, compiled, scenarios in generated:
        tools = [t.tool for t in compiled.tools if "_" in t.tool]  # "deposit" is also a word
        for scenario in scenarios:
            for text in texts_of(scenario):
                assert text[:1].isupper(), (domain, text)
                assert text[-1] in ".?!", (domain, text)
                assert "  " not in text and "{" not in text, (domain, text)
                assert not ISO_TIME.search(text), (domain, text)
                assert not re.search(r"[.?!,;][.,;]| [,.;?!]", text), (domain, text)
                assert not any(re.search(rf"\b{t}\b", text, re.IGNORECASE) for t in tools), text
                assert not re.search(r"\b(?:my|a|an|the) the\b", text, re.IGNORECASE), text
                assert not re.search(r"(?:^|\s)'s\b", text), text  # "for 's doctor" (round 28)
                assert not re.search(r"\bplease\b[^.?!]*\bplease\b", text, re.I), text
                # round 41: "Can you the single room for me? There are 1 of us."
                assert not re.search(r"\b(?:can|could|would) you (?:the|my|an?)\b", text, re.I)
                assert "are 1 of us" not in text, text


def test_connectors_are_followed_by_lower_case_unless_a_name(generated):
    for domain, _, scenarios in generated:
        for scenario in scenarios:
            values = known_values(scenario)
            for text in texts_of(scenario):
                for word in CONNECTOR.findall(text):
                    if not word[:1].isupper() or word == "I" or word.startswith("I'"):
                        continue
                    bare = word.rstrip(".,;?!")
                    named = any(v.startswith(bare) for v in values) or bool(re.search(r"\d", bare))
                    assert named or bare.isupper(), (domain, word, text)


def test_free_text_arguments_come_from_curated_values(generated):
    for domain, compiled, scenarios in generated:
        args = {(t.tool, a.name): a for t in compiled.tools for a in t.args}
        changers = {t.tool for t in compiled.tools if t.kind == "state_change"}
        for scenario in scenarios:
            for step in scenario.reference_solution:
                if step.tool not in changers:  # lookups take a label from the state
                    continue
                for name, value in step.arguments.items():
                    arg = args[(step.tool, name)]
                    if arg.values:
                        assert value in arg.values, (domain, step.tool, name, value)
                    if arg.source == "str" and arg.faker is None:
                        pytest.fail(f"{domain}: free text {step.tool}.{name} = {value!r}")


def test_user_facts_keep_exact_values_while_the_text_is_friendly(generated):
    iso_facts = 0
    for _, _, scenarios in generated:
        for scenario in scenarios:
            assert "full request" not in scenario.user_facts  # details, never the whole
            for value in scenario.user_facts.values():
                if isinstance(value, str) and ISO_TIME.match(value):
                    iso_facts += 1
                    assert value not in scenario.task
    assert iso_facts  # some conversational scenario involved a time


def test_generation_is_deterministic(generated, sandbox):
    _, compiled, scenarios = next(g for g in generated if g[0] == "clinic")
    env_id = compute_env_id(compiled.source)
    again = generate_scenario_batch(compiled, env_id, PER_ENV, SEEDS[0], sandbox)
    assert [s.scenario_id for s in again.scenarios] == [s.scenario_id for s in scenarios]
    assert [s.task for s in again.scenarios] == [s.task for s in scenarios]


# --- joining and openings, without the sandbox ---------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_clauses_after_connectors_start_in_lower_case(seed):
    clauses = [
        Clause("Could you move appointment AP-00003 to 9 Feb 2025 at 16:00", "?"),
        Clause("I can't make it to appointment AP-00004; please cancel it"),
        Clause("The consultation for appointment AP-00005 is done"),
        Clause("Intro to Programming is full", keep_case=True),
    ]
    text = compose_clauses(clauses, random.Random(seed))
    assert "Could" not in text[1:] and "The consultation" not in text[1:]
    assert "I can't" in text and "Intro to Programming" in text
    assert text.endswith(".") and ".." not in text and "?." not in text


def _step(tool: str, entity: str, mention: ArgMention) -> ChainStep:
    manifest = ToolManifest(tool=tool, kind="state_change", entity=entity, phrases=[])
    return ChainStep(manifest, {mention.name: mention.value}, [mention], [])


def test_opening_names_the_entities_involved():
    doctor = ArgMention("doctor_id", "DR-1", "entity_id", "doctor")
    appointment = ArgMention("appointment_id", "AP-1", "entity_id", "appointment")
    leave = _step("start_doctor_leave", "doctor", doctor)
    cancel = _step("cancel_appointment", "appointment", appointment)
    for seed in range(8):
        opening = choose_opening([leave], random.Random(seed))
        assert "appointment" not in opening and "my doctor" not in opening and "doctor" in opening
        both = choose_opening([cancel, leave], random.Random(seed))
        assert "appointment" in both and "doctor" in both
        assert "my appointment" in choose_opening([cancel], random.Random(seed))


# --- realism of the seeded initial states ---------------------------------------------------------


STATE_SEEDS = range(6)


def states_of(domain: str):
    for seed in STATE_SEEDS:
        compiled = compile_environment(load_domain(domain), seed)
        yield build_initial_state(compiled, 100 + seed)


def test_flights_do_not_land_where_they_took_off():
    for state in states_of("airline"):
        assert all(f["origin"] != f["destination"] for f in state["flights"].values())


def test_rental_bookings_fit_their_property():
    for state in states_of("rentals"):
        for booking in state["bookings"].values():
            assert booking["guests"] <= state["properties"][booking["property_id"]]["max_guests"]


def test_tickets_are_resolved_after_they_were_opened_and_not_in_the_future():
    for state in states_of("support"):
        for ticket in state["tickets"].values():
            if ticket["resolved_at"] is not None:
                assert ticket["opened_at"] < ticket["resolved_at"] <= state["current_time"]


@pytest.mark.parametrize(
    ("domain", "attr", "start", "end"),
    [
        ("fleet", "trips", "started_at", "ended_at"),
        ("hr_leave", "leave_requests", "submitted_at", "decided_at"),
        ("library", "loans", "borrowed_on", "returned_on"),
        ("ecommerce", "orders", "placed_at", "delivered_on"),
    ],
)
def test_later_times_follow_earlier_ones(domain, attr, start, end):
    for state in states_of(domain):
        for record in state[attr].values():
            if record[end] is not None:
                assert record[start][:10] <= record[end][:10] <= state["current_time"][:10]
                assert len(record[end]) == 10 or record[start] < record[end]


def test_active_loans_are_not_past_due():
    for state in states_of("library"):
        today = state["current_time"][:10]
        for loan in state["loans"].values():
            if loan["status"] == "active":
                assert loan["due_on"] >= today


def _after(words: str, noun: str) -> str:
    """A pattern that the field's words are not followed by the rest of its noun."""
    rest = noun[len(words) :].strip() if noun.startswith(f"{words} ") else ""
    return rf"(?!\s+{re.escape(rest)}\b)" if rest else ""


def test_no_text_names_a_field_as_the_code_does(generated):
    """Tasks and replies say a field as people do: never its snake_case name, and never the
    bare words of a field the wording table names otherwise ("issued on" is "issue date")."""
    from envmill.tasks.core.field_words import field_nouns

    nouns = field_nouns()
    worded = {  # the field's bare words, and what may follow them ("phone" in "phone number")
        f.replace("_", " "): _after(f.replace("_", " "), noun.casefold())
        for f, noun in nouns.items()
        if noun.casefold() != f.replace("_", " ")
    }
    said = 0
    for domain, _, scenarios in generated:
        fields = {f for e in load_domain(domain).entities.values() for f in e.fields if "_" in f}
        for scenario in scenarios:
            for text in (scenario.task, scenario.reference_answer or ""):
                lowered = text.casefold()
                coded = [f for f in fields if re.search(rf"\b{re.escape(f)}\b", lowered)]
                bare = [
                    w
                    for w, rest in worded.items()
                    if re.search(rf"\b(?i:{NOUN_USE}){re.escape(w)}\b{rest}", text)  # not a Name
                ]
                assert coded == [] and bare == [], (domain, text)
                said += bool(text)
    assert said > 100


def ids_created_by(scenario) -> set[str]:
    """Ids of records the reference solution creates (absent from the initial state)."""
    existing = {
        str(key)
        for collection in scenario.initial_state.values()
        if isinstance(collection, dict)
        for key in collection
    }
    created: set[str] = set()
    for step in scenario.reference_solution:
        ids = {v for k, v in step.arguments.items() if k.endswith("_id") and isinstance(v, str)}
        created |= ids - existing
    return created


def test_no_task_or_fact_names_a_record_the_task_itself_creates(generated):
    """The user cannot know the id a record will get: "redirect SHP-0000008" where the task's
    own first step creates SHP-0000008 teaches agents to invent ids. The record is "the new
    shipment", and only a created chain says so."""
    for domain, _, scenarios in generated:
        for scenario in scenarios:
            said = scenario.task + " " + " ".join(map(str, scenario.user_facts.values()))
            leaked = [
                i for i in ids_created_by(scenario) if re.search(rf"\b{re.escape(i)}\b", said)
            ]
            assert leaked == [], (domain, scenario.task, leaked)


def acted_arguments(compiled) -> dict[str, str | None]:
    """State-changing tool -> its id argument of the tool's own entity (the record it acts on)."""
    return {
        t.tool: next(
            (a.name for a in t.args if a.source == "entity_id" and a.entity == t.entity), None
        )
        for t in compiled.tools
        if t.kind == "state_change"
    }


def test_one_request_acts_on_each_record_once(generated):
    """ "Dispatch the shipment, then return it", "move them to another team, then terminate
    them": no two state changes of one task act on the same record."""
    steps = 0
    for domain, compiled, scenarios in generated:
        own = acted_arguments(compiled)
        for scenario in scenarios:
            acted = [
                step.arguments.get(own[step.tool])
                for step in scenario.reference_solution
                if own.get(step.tool)
            ]
            steps += len(acted)
            assert len(acted) == len(set(map(str, acted))), (domain, scenario.task)
    assert steps > 100


def test_no_step_acts_on_another_record_of_a_kind_the_task_creates(generated):
    """ "Take in a lot, and then reprice the harvest lot" reads as the new lot; a reference that
    reprices an older one teaches the agent to read it otherwise."""
    for domain, compiled, scenarios in generated:
        own = acted_arguments(compiled)
        for scenario in scenarios:
            made = {i.split("-")[0] for i in ids_created_by(scenario) if "-" in i}
            for step in scenario.reference_solution:
                acted = step.arguments.get(own.get(step.tool) or "")
                if isinstance(acted, str) and acted not in ids_created_by(scenario):
                    assert acted.split("-")[0] not in made, (domain, scenario.task)


def test_conversational_tasks_are_personas(generated):
    """τ-bench style: who the user is, what they want, how they take the outcome; the opening
    the agent sees is the request in the first person."""
    from envmill.tasks.backends.procedural.phrasing.word_lists import load_wording
    from envmill.tasks.core.opening import opening_message

    talking = [s for _, _, scenarios in generated for s in scenarios if s.mode == "conversational"]
    assert len(talking) > 20
    for scenario in talking:
        assert re.match(r"You are [A-Z]", scenario.task), scenario.task
        assert any(line in scenario.task for line in load_wording("conduct")["knowledge"])
        opening = opening_message(scenario)
        asked = re.sub(r"\b(?:Could|Can) you\b", "", opening)  # the user asks the agent
        assert not re.search(r"\b(?:you|your)\b", asked, re.I), opening
        assert "volunteer" not in opening and opening[:1].isupper(), opening


def test_no_two_records_share_a_plate_an_email_or_a_phone(generated):
    """Namesakes share a name or a title, never what is one per record in life (two vehicles
    with one plate read as a broken state, not as a question to ask)."""
    from envmill.tasks.backends.procedural.scenarios.namesakes import UNIQUE_LABEL

    checked = 0
    for domain, compiled, scenarios in generated:
        labels = {
            compiled.entity_attrs[entity]: field
            for entity, field in compiled.label_fields.items()
            if UNIQUE_LABEL.search(field or "") and entity in compiled.entity_attrs
        }
        for scenario in scenarios:
            for attr, name in labels.items():
                records = scenario.initial_state.get(attr) or {}
                values = [r[name] for r in records.values() if r.get(name)]
                assert len(values) == len(set(values)), (domain, name, scenario.task)
                checked += 1
    assert checked > 20


def test_every_email_belongs_to_the_name_on_its_record(generated):
    """From the rating and the break-it review: "Hunter Gomez, vlevine@example.com", and the
    decoy of a name clash the only record whose email fits no name (a policy would learn to
    pick by that)."""
    checked = 0
    for domain, _, scenarios in generated:
        for scenario in scenarios:
            for records in scenario.initial_state.values():
                if not isinstance(records, dict):
                    continue
                for record in records.values():
                    if not isinstance(record, dict) or not isinstance(record.get("email"), str):
                        continue
                    name = record.get("name")
                    person = isinstance(name, str) and re.fullmatch(r"[A-Z][a-z]+ [A-Z]\S+", name)
                    if not person or re.search(r"\b(?:Ltd|Inc|LLC|PLC|Group|Sons)\b", name):
                        continue  # a company ("Anderson Ltd") has a company address
                    local = record["email"].split("@")[0]
                    last = re.sub(r"[^a-z]", "", name.split()[-1].lower())
                    assert last in local, (domain, name, record["email"])
                    checked += 1
    assert checked > 100


def test_records_keep_what_their_examples_tie_to_their_name_even_as_namesakes(generated):
    """A decoy that shares a part's name shares its category too ("Air Filter" never sits in
    brakes), so the task tells them apart by something else."""
    clashes = []
    for domain, compiled, scenarios in generated:
        for name, entity in compiled.spec.entities.items():
            attr = compiled.entity_attrs.get(name)
            tied = [e for e in entity.examples if entity.label in e]
            if not attr or not tied:
                continue
            for scenario in scenarios:
                for record in (scenario.initial_state.get(attr) or {}).values():
                    same = [e for e in tied if e[entity.label] == record.get(entity.label)]
                    if same and not any(
                        all(record.get(f) == v for f, v in e.items()) for e in same
                    ):
                        clashes.append((domain, scenario.kind, record.get(entity.label)))
    assert not clashes, clashes[:5]


# database words for a filter or a time: "whose status is enrolled", "with the earliest booking
# time", "the most recent order time" (raters' verbatim); "my latest booking" is how people say it
DATABASE_FILTERS = re.compile(
    r"\bwhose status (?:is|are)\b|\bwith the (?:latest|earliest|most recent) \w+ (?:time|date)\b"
)


def _tasks_saying(generated, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    return [
        (domain, scenario.task)
        for domain, _, scenarios in generated
        for scenario in scenarios
        if pattern.search(scenario.task)
    ]


def test_no_task_filters_records_in_database_words(generated):
    found = _tasks_saying(generated, DATABASE_FILTERS)
    assert not found, found[:5]


AGGREGATE = re.compile(r"\b(?:total|add up|altogether)\b", re.I)


def test_an_answer_about_a_closed_record_says_it_is_closed(generated):
    """ "the price is $169.00" of a cancelled booking leaves out what matters most."""
    missing = []
    for domain, compiled, scenarios in generated:
        for scenario in scenarios:
            if not scenario.kind.startswith("answer") or not scenario.reference_answer:
                continue
            expected = scenario.expected_answer
            if expected is None or expected.type == "count" or AGGREGATE.search(scenario.task):
                continue  # a count or total over a record's children, not a field of it
            for entity, attr in compiled.entity_attrs.items():
                machine = compiled.spec.entities[entity].status
                if machine is None:
                    continue
                leaving = {origin for step in machine.transitions for origin in step.from_}
                for rid, record in (scenario.initial_state.get(attr) or {}).items():
                    status = record.get(machine.field)
                    asked = re.search(rf"(?<![\w-]){re.escape(str(rid))}(?![\w-])", scenario.task)
                    answer = scenario.reference_answer
                    if asked and status not in leaving and status in machine.states:
                        if status.replace("_", " ") not in answer:
                            missing.append((domain, scenario.task, answer))
    assert not missing, missing[:5]


def test_no_reply_says_a_status_that_happened_without_its_verb(generated):
    """ "Inspection INS-2 is failed", "Deduction DED-8 is ended" (raters' verbatim): a status
    that happened is "marked as failed"; one the staff did "has been denied"."""
    wrong = re.compile(r"\b(?:is|are) (?:failed|ended|lapsed|expired|finished)\b")
    found = [
        (domain, scenario.reference_answer)
        for domain, _, scenarios in generated
        for scenario in scenarios
        if scenario.reference_answer and wrong.search(scenario.reference_answer)
    ]
    assert not found, found[:5]


def test_a_count_is_asked_how_many(generated):
    """ "Could you tell me the nights of a guest's reservation?" (raters' verbatim): a field
    that counts is asked "how many nights"."""
    counts = re.compile(r"\bthe (?:nights|seats|adults|visits|parcels|renewals|pauses) of\b")
    found = _tasks_saying(generated, counts)
    assert not found, found[:5]


def test_sums_the_user_picks_are_round(generated):
    """ "top up the wallet with $259.64" (raters' verbatim) reads as copied from a machine: a
    top-up, deposit or withdrawal is a round sum, unless its window holds none. (The user picks
    no sum in a conditional aimed at a mark: "add the difference" is the agent's to work out.)"""
    from envmill.tasks.backends.procedural.scenarios.round_numbers import grid_near

    sums = [
        value
        for _, _, scenarios in generated
        for scenario in scenarios
        if not re.search(r"\bthe (?:difference|excess)\b", scenario.task)
        for step in scenario.reference_solution
        for name, value in step.arguments.items()
        if re.fullmatch(r"amount|credits|.*_amount", name)
        and isinstance(value, int | float)
        and value > 0
        and value not in _amounts_on_record(scenario)  # paying off the $8.33 owed, exactly
    ]
    odd = [v for v in sums if v != int(v) and not any(abs(v - g) < 1e-6 for g in grid_near(v))]
    assert sums and len(odd) <= len(sums) // 10, odd


def _amounts_on_record(scenario) -> set[float]:
    return {
        value
        for table in scenario.initial_state.values()
        if isinstance(table, dict)
        for record in table.values()
        if isinstance(record, dict)
        for value in record.values()
        if isinstance(value, float)
    }


def test_staff_never_speak_as_the_customer(generated):
    """The box office does not say "refund my tickets": a staff sign-in relays the request."""
    from envmill.tasks.backends.procedural.phrasing.task import FIRST_PERSON, voice_of

    for domain, compiled, scenarios in generated:
        for scenario in scenarios:
            staff = voice_of(compiled, scenario.initial_state) == "staff"
            if staff and scenario.mode == "non_conversational" and scenario.kind == "change":
                body = re.sub(r"^[^.!?]*[.!?]\s+", "", scenario.task)  # past the greeting
                assert not re.search(r"\b[Mm]y\b", body), (domain, scenario.task)
    assert FIRST_PERSON.search("My plans changed")  # a capital "My" is the first person too


def test_a_change_acts_only_on_a_record_the_solution_looked_at(generated, sandbox):
    """Every state change names a record an earlier call showed (or the chain made): a careful
    agent reads the shipment before it dispatches it, and checks who is signed in first."""
    from envmill.tasks.backends.procedural.phrasing.task import voice_of

    checked = 0
    for domain, compiled, scenarios in generated:
        kinds = {t.tool: t.kind for t in compiled.tools}
        for scenario in scenarios:
            if compiled.session_tool and voice_of(compiled, scenario.initial_state):
                tools = [step.tool for step in scenario.reference_solution]
                assert tools[0] == compiled.session_tool, (domain, tools)
            if scenario.kind != "change":
                continue
            with sandbox.episode(compiled.source, compiled.class_name) as episode:
                episode.load_state(scenario.initial_state)
                seen = ""
                for step in scenario.reference_solution:
                    own = [str(v) for k, v in step.arguments.items() if k.endswith("_id") and v]
                    if kinds.get(step.tool) != "query" and own:
                        assert any(f'"{rid}"' in seen for rid in own), (domain, step)
                        checked += 1
                    seen += json.dumps(episode.call(step.tool, dict(step.arguments)).result)
    assert checked >= 40


def test_a_request_about_another_s_record_is_one_message(generated):
    """A persona told "your booking BKG-9" of a booking that is another's contradicts itself
    and has no other number to give when the agent asks (round 31): such a request, like one
    made in another's name, is the user's one message, never a conversation."""
    refused = [
        s
        for _, _, scenarios in generated
        for s in scenarios
        if re.search(r"isn't one of your own|You're signed in as", s.reference_answer or "")
    ]
    assert refused
    assert {s.mode for s in refused} == {"non_conversational"}, [s.task for s in refused]


def test_no_two_records_share_a_value_a_rule_keeps_distinct(generated):
    """Round 32: "send the client an invoice for Harmon Will and Trust (whose attorney is A.
    Whitman)" — two matters shared a title under the policy line "Each matter has a distinct
    title", so the agent learns that stated rules need not hold."""
    from envmill.tasks.backends.procedural.scenarios.namesakes import _declared_unique

    checked = 0
    for domain, compiled, scenarios in generated:
        for entity, field in _declared_unique(compiled):
            attr = compiled.entity_attrs.get(entity or "")
            for scenario in scenarios:
                records = (scenario.initial_state.get(attr) or {}).values()
                values = [r.get(field) for r in records if isinstance(r, dict) and r.get(field)]
                assert len(values) == len(set(values)), (domain, scenario.task)
                checked += 1
    assert checked


def test_a_status_answer_says_what_the_record_is(generated):
    """Rounds 74 and 75: "Folio charge CHG-000004 has been posted." said a status of nothing the
    asker knows; a status with nothing coming up names the record's kind and sum or start
    ("Folio charge CHG-000004 (parking, $25.00) has been posted")."""
    bare = re.compile(r"^(?:Right now )?(?:[Yy]our |[A-Z][a-z]+ )?[a-z ]*\b[A-Z]{2,4}-\d+ "
                      r"(?:has been|shows as|is)\b")  # fmt: skip
    described, plain = 0, []
    for domain, _, scenarios in generated:
        for scenario in scenarios:
            answer = scenario.reference_answer or ""
            if scenario.kind.startswith("answer") and re.search(r"[A-Z]{2,4}-\d+ \(", answer):
                described += 1
            elif scenario.kind.startswith("answer") and bare.search(answer) and "." == answer[-1]:
                plain.append((domain, answer))
    assert described >= 5, plain[:5]
