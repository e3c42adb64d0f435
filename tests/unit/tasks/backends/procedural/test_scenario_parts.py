"""The procedural scenario generator's parts: derived checks, phrasing, chain sampling, end to end.

A small library environment is written here as a plain class and run in-process by a fake executor
with the sandbox episode's interface (``call`` / ``state`` / ``load_state``); the generated checks
are our own code, so the tests exec them directly.
"""

from __future__ import annotations

import copy
import json
import random
from contextlib import contextmanager
from dataclasses import replace

import pytest
from faker import Faker

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.checks.derive import derive_checks
from envmill.tasks.backends.procedural.manifest import (
    ArgManifest,
    CompiledEnvironment,
    ToolManifest,
)
from envmill.tasks.backends.procedural.phrasing.task import phrase_task
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep, sample_chain
from envmill.tasks.backends.procedural.scenarios.generate import generate_scenario_batch
from envmill.tasks.certify.guard import GUARD_DESCRIPTION
from envmill.tasks.sandbox import LoadOutcome, ReplayOutcome, ToolOutcome


class LibraryEnv:
    """A tiny library: books with copies, members, and loans."""

    def __init__(self):
        self.books: dict = {}
        self.members: dict = {}
        self.loans: dict = {}
        self.next_loan_number: int = 1
        self.current_time: str = "2025-03-03T09:00:00"

    def find_book(self, title: str) -> dict:
        hits = [b for b in self.books.values() if b["title"].lower() == title.lower()]
        return {"success": True, "data": hits} if hits else {"success": False, "error": "no book"}

    def get_book(self, book_id: str) -> dict:
        if book_id not in self.books:
            return {"success": False, "error": "unknown book"}
        return {"success": True, "data": self.books[book_id]}

    def borrow_book(self, book_id: str, member_id: str, due_date: str) -> dict:
        book, member = self.books.get(book_id), self.members.get(member_id)
        if not book or not member or member["status"] != "active" or book["copies"] < 1:
            return {"success": False, "error": "cannot borrow"}
        loan_id = f"LN-{self.next_loan_number:04d}"
        self.next_loan_number += 1
        self.loans[loan_id] = {
            "loan_id": loan_id,
            "book_id": book_id,
            "member_id": member_id,
            "due_date": due_date,
            "status": "active",
        }
        book["copies"] -= 1
        book["status"] = "available" if book["copies"] else "unavailable"
        return {"success": True, "message": "borrowed", "data": {"loan_id": loan_id}}

    def return_loan(self, loan_id: str) -> dict:
        loan = self.loans.get(loan_id)
        if not loan or loan["status"] != "active":
            return {"success": False, "error": "no active loan"}
        loan["status"] = "returned"
        book = self.books[loan["book_id"]]
        book["copies"] += 1
        book["status"] = "available"
        return {"success": True, "message": "returned"}

    def set_member_phone(self, member_id: str, phone: str) -> dict:
        if member_id not in self.members:
            return {"success": False, "error": "unknown member"}
        self.members[member_id]["phone"] = phone
        return {"success": True, "message": "updated"}

    def set_copies(self, book_id: str, copies: int) -> dict:
        if book_id not in self.books or copies == self.books[book_id]["copies"]:
            return {"success": False, "error": "nothing to change"}
        self.books[book_id]["copies"] = copies
        return {"success": True, "message": "updated"}

    def remove_member(self, member_id: str) -> dict:
        if any(
            loan["member_id"] == member_id and loan["status"] == "active"
            for loan in self.loans.values()
        ):
            return {"success": False, "error": "member has loans"}
        if self.members.pop(member_id, None) is None:
            return {"success": False, "error": "unknown member"}
        return {"success": True, "message": "removed"}


def library_state(seed: int = 0) -> dict:
    titles = ["Dune", "Emma", "Ulysses", "Dune"]  # the duplicate title cannot be named by label
    books = {
        f"B-{i}": {
            "book_id": f"B-{i}",
            "title": t,
            "copies": 1 + (i + seed) % 3,
            "status": "available",
        }
        for i, t in enumerate(titles, 1)
    }
    members = {
        f"M-{i}": {
            "member_id": f"M-{i}",
            "name": n,
            "phone": "555-0100",
            "status": "active" if i != 3 else "suspended",
        }
        for i, n in enumerate(["Ada Park", "Ben Ruiz", "Cy Moss"], 1)
    }
    loan = {
        "loan_id": "LN-0001",
        "book_id": "B-3",
        "member_id": "M-2",
        "due_date": "2025-03-10",
        "status": "active",
    }
    return {
        "books": books,
        "members": members,
        "loans": {"LN-0001": loan},
        "next_loan_number": 2,
        "current_time": "2025-03-03T09:00:00",
    }


def _book_arg(**extra) -> ArgManifest:
    return ArgManifest(
        name="book_id",
        source="entity_id",
        entity="book",
        state_attr="books",
        label_field="title",
        lookup_tool="find_book",
        lookup_arg="title",
        **extra,
    )


def _member_arg() -> ArgManifest:
    return ArgManifest(
        name="member_id",
        source="entity_id",
        entity="member",
        state_attr="members",
        prefer={"status": ["active"]},
    )


def library_manifest() -> CompiledEnvironment:
    tools = [
        ToolManifest(
            tool="find_book",
            kind="query",
            entity="book",
            args=[ArgManifest(name="title", source="str")],
        ),
        ToolManifest(tool="get_book", kind="query", entity="book", args=[_book_arg()]),
        ToolManifest(
            tool="borrow_book",
            kind="state_change",
            entity="loan",
            args=[
                _book_arg(prefer={"status": ["available"]}),
                _member_arg(),
                ArgManifest(name="due_date", source="date"),
            ],
            phrases=[
                "borrow {book_id.label} for member {member_id} until {due_date}",
                "I'd like to check out {book_id.label} for {member_id}, due {due_date}",
            ],
        ),
        ToolManifest(
            tool="return_loan",
            kind="state_change",
            entity="loan",
            args=[
                ArgManifest(
                    name="loan_id",
                    source="entity_id",
                    entity="loan",
                    state_attr="loans",
                    prefer={"status": ["active"]},
                )
            ],
            phrases=["return loan {loan_id}"],
        ),
        ToolManifest(
            tool="set_member_phone",
            kind="state_change",
            entity="member",
            args=[_member_arg(), ArgManifest(name="phone", source="str", faker="phone_number")],
            phrases=["update the phone number of member {member_id} to {phone}"],
        ),
        ToolManifest(
            tool="set_copies",
            kind="state_change",
            entity="book",
            args=[_book_arg(), ArgManifest(name="copies", source="int", minimum=1, maximum=9)],
            phrases=["set the number of copies of {book_id.label} to {copies}"],
        ),
        ToolManifest(
            tool="remove_member", kind="state_change", entity="member", args=[_member_arg()]
        ),
    ]
    return CompiledEnvironment(
        spec=load_domain("library"),
        domain="library",
        seed=0,
        class_name="LibraryEnv",
        source="# fake: run in-process",
        topic="library",
        introduction="A library.",
        business_rules=[],
        tools=tools,
        entity_attrs={"book": "books", "member": "members", "loan": "loans"},
        label_fields={"book": "title", "member": "name"},
    )


TOOL_NAMES = [t.tool for t in library_manifest().tools]


class FakeEpisode:
    """A ``ToolEpisode`` over an in-process instance, JSON round-tripped like a host's replies."""

    def __init__(self, env_cls, state):
        self.env_cls, self.env = env_cls, env_cls()
        self.load_outcome = self.load_state(state or {})

    @property
    def loaded(self) -> bool:
        return self.load_outcome.ok

    def call(self, tool, arguments) -> ToolOutcome:
        try:
            result = getattr(self.env, tool)(**copy.deepcopy(arguments))
        except Exception as error:  # the real host reports a raising tool the same way
            result = {"success": False, "error": f"{type(error).__name__}: {error}"}
        return ToolOutcome(result=json.loads(json.dumps(result)), state=self.state())

    def state(self):
        return json.loads(json.dumps(vars(self.env)))

    def load_state(self, state) -> LoadOutcome:
        unknown = sorted(key for key in state if key not in vars(self.env_cls()))
        if unknown:  # like the host: refused, and the instance it had stays
            return LoadOutcome(error=f"state key {unknown[0]!r} is unknown", error_class="host")
        self.env = self.env_cls()  # like the sandbox: a fresh instance, then each key
        for key, value in state.items():
            setattr(self.env, key, copy.deepcopy(value))
        return LoadOutcome(state=self.state())

    def replay(self, state, steps) -> ReplayOutcome:
        self.load_state(state)
        succeeded = [self.call(tool, arguments).succeeded for tool, arguments in steps]
        return ReplayOutcome(succeeded=succeeded, state=self.state())


class FakeSandbox:
    def __init__(self, env_cls=LibraryEnv):
        self.env_cls = env_cls

    @contextmanager
    def episode(self, source, class_name, state=None, reuse=False):
        yield FakeEpisode(self.env_cls, state)


def run_check(code: str, initial: dict, final: dict) -> bool:
    namespace: dict = {}
    exec(code, namespace)  # our own generated code, in a test
    return namespace["check"](initial, final)


def replay(solution, initial: dict) -> tuple[dict, list[bool]]:
    episode = FakeEpisode(LibraryEnv, initial)
    ok = [episode.call(step.tool, step.arguments).result["success"] for step in solution]
    return episode.state(), ok


def assert_checks_discriminate(checks, initial: dict, final: dict) -> None:
    for check in checks:
        assert run_check(check.code, initial, final) is True, check.code
        assert run_check(check.code, initial, initial) is False, check.code


# --- derived checks ---------------------------------------------------------------------------


def test_changed_field_gives_one_readable_check():
    initial = library_state()
    final = copy.deepcopy(initial)
    final["loans"]["LN-0001"]["status"] = "returned"
    final["current_time"] = "2025-03-04T09:00:00"
    checks = derive_checks(initial, final, entity_names={"loans": "loan"})
    assert len(checks) == 1
    assert checks[0].description.startswith("Has set the status of loan LN-0001")
    assert "== 'returned'" in checks[0].code and "# was 'active'" in checks[0].code
    assert_checks_discriminate(checks, initial, final)


def test_added_entity_is_found_by_its_content_not_its_id():
    initial = library_state()
    final = copy.deepcopy(initial)
    final["loans"]["LN-0002"] = {
        "loan_id": "LN-0002",
        "book_id": "B-1",
        "member_id": "M-1",
        "due_date": "2025-03-08",
        "status": "active",
    }
    final["next_loan_number"] = 3
    checks = derive_checks(initial, final)
    assert len(checks) == 1
    assert "LN-0002" not in checks[0].code, "a generated id is never pinned"
    assert "'status') == 'active'" in checks[0].code
    assert_checks_discriminate(checks, initial, final)
    assert run_check(checks[0].code, initial, {}) is False  # missing keys: False, not KeyError
    other_id = copy.deepcopy(final)
    other_id["loans"]["LN-0007"] = other_id["loans"].pop("LN-0002")
    assert run_check(checks[0].code, initial, other_id) is True


def test_a_field_that_points_at_a_created_record_accepts_any_new_id():
    initial = library_state()
    final = copy.deepcopy(initial)
    final["loans"]["LN-0002"] = {"loan_id": "LN-0002", "book_id": "B-1", "status": "active"}
    final["members"]["M-1"]["last_loan"] = "LN-0002"
    checks = derive_checks(initial, final)
    assert all("LN-0002" not in check.code for check in checks)
    swapped = copy.deepcopy(final)
    swapped["loans"]["LN-0005"] = swapped["loans"].pop("LN-0002")
    swapped["members"]["M-1"]["last_loan"] = "LN-0005"
    assert all(run_check(check.code, initial, swapped) for check in checks)
    stale = copy.deepcopy(final)
    stale["members"]["M-1"]["last_loan"] = "LN-0001"
    assert not all(run_check(check.code, initial, stale) for check in checks)


def test_removed_entity_and_numbers():
    initial = library_state()
    final = copy.deepcopy(initial)
    del final["members"]["M-3"]
    final["books"]["B-1"]["copies"] = 7
    checks = derive_checks(
        initial,
        final,
        label_fields={"book": "title"},
        entity_names={"books": "book", "members": "member"},
    )
    codes = "\n".join(c.code for c in checks)
    assert "'M-3' not in final_state.get('members', {})" in codes
    assert "== 7  # was 2" in codes
    assert any("from 2 to 7" in c.description and "'Dune'" in c.description for c in checks)
    assert_checks_discriminate(checks, initial, final)


def test_lists_and_none_values_are_checked_safely():
    initial = {"carts": {"C-1": {"items": [1, 2], "coupon": "X"}}}
    final = {"carts": {"C-1": {"items": [1, 3], "coupon": None}}}
    checks = derive_checks(initial, final)
    assert len(checks) == 2
    assert_checks_discriminate(checks, initial, final)
    assert run_check(checks[0].code, initial, {"carts": {}}) is False


def test_checks_are_capped_by_merging_per_entity():
    initial = {"items": {f"I-{i}": {"qty": i, "note": "a"} for i in range(12)}}
    final = {"items": {f"I-{i}": {"qty": i + 1, "note": "b"} for i in range(12)}}
    checks = derive_checks(initial, final, cap=8)
    assert len(checks) == 8
    assert all(" and " in c.description for c in checks)
    assert_checks_discriminate(checks, initial, final)
    for name in ["I-0", "I-11"]:  # each changed fact still breaks some check
        partial = copy.deepcopy(final)
        partial["items"][name]["note"] = "a"
        assert not all(run_check(c.code, initial, partial) for c in checks)


def test_fields_a_later_step_touched_are_always_compared():
    record = {f"f{i}": i for i in range(9)}
    initial, final = {"things": {}}, {"things": {"T-1": {**record, "f8": 99}}}
    step_changes = [
        [{"path": ["things", "T-1"], "op": "add", "old": None, "new": record}],
        [{"path": ["things", "T-1", "f8"], "op": "change", "old": 8, "new": 99}],
    ]
    checks = derive_checks(initial, final, step_changes=step_changes)
    assert "get('f8') == 99" in checks[0].code
    assert run_check(checks[0].code, initial, {"things": {"T-1": record}}) is False


# --- phrasing -------------------------------------------------------------------------------


def _borrow_step(by_label: bool = True) -> ChainStep:
    manifest = next(t for t in library_manifest().tools if t.tool == "borrow_book")
    mentions = [
        ArgMention("book_id", "B-2", "entity_id", "book", "Emma", "title", by_label=by_label),
        ArgMention("member_id", "M-1", "entity_id", "member", "Ada Park", "name"),
        ArgMention("due_date", "2025-03-09", "date"),
    ]
    return ChainStep(
        manifest, {"book_id": "B-2", "member_id": "M-1", "due_date": "2025-03-09"}, mentions, []
    )


def _remove_step() -> ChainStep:
    manifest = next(t for t in library_manifest().tools if t.tool == "remove_member")
    mention = ArgMention("member_id", "M-3", "entity_id", "member", "Cy Moss", "name")
    return ChainStep(manifest, {"member_id": "M-3"}, [mention], [])


@pytest.mark.parametrize("seed", range(8))
def test_phrasing_fills_labels_and_never_names_tools(seed):
    task, facts = phrase_task(
        [_borrow_step(), _remove_step()], random.Random(seed), "non_conversational", TOOL_NAMES
    )
    assert facts == {}
    assert "Emma" in task and "B-2" not in task and "9 Mar 2025" in task and "M-3" in task
    assert "2025-03-09" not in task  # dates read the way people write them
    assert "{" not in task
    assert not any(name in task for name in TOOL_NAMES)


def test_phrasing_mentions_the_id_when_no_lookup_was_possible():
    task, _ = phrase_task(
        [_borrow_step(by_label=False)], random.Random(1), "non_conversational", TOOL_NAMES
    )
    assert "Emma (B-2)" in task


def test_conversational_variant_keeps_details_in_user_facts():
    task, facts = phrase_task(
        [_borrow_step(), _remove_step()], random.Random(3), "conversational", TOOL_NAMES
    )
    assert facts["book title"] == "Emma" and facts["due date"] == "2025-03-09"
    assert facts["member id"] == "M-1" and facts["member id 2"] == "M-3"
    assert "full request" not in facts and "I have in mind" not in task
    # the goal names what it is about (round 53: "Please book some tickets." read as staged);
    # the details wait for the agent's questions
    assert "Emma" in task and "Cy Moss" not in task
    assert "2025-03-09" not in task and "9 Mar" not in task
    assert not any(name in task for name in TOOL_NAMES)


@pytest.mark.parametrize(("domain", "count"), [("airline", "seats"), ("events", "quantity")])
def test_a_goal_that_says_a_count_of_one_leaves_it_out_of_what_is_asked(domain, count):
    """ "reserve a seat", "buy a ticket" already say how many: "how many?" is not asked (round
    53; a breaker found "quantity" still asked); a count of two is."""
    from envmill.tasks.backends.procedural.codegen.compiler import compile_environment

    plural = {"seats": "seats", "quantity": "tickets"}[count]
    manifest = next(  # a tool whose name says the plural ("reserve_seats", "book_tickets")
        t
        for seed in range(40)
        for t in compile_environment(load_domain(domain), seed).tools
        if t.tool.endswith(plural) and t.tool.split("_")[0] in ("buy", "purchase", "reserve")
    )
    ids = [a for a in manifest.args if a.source == "entity_id"]
    for value, asked in ((1, False), (2, True)):
        mentions = [ArgMention(a.name, f"X-{i}", "entity_id", a.entity) for i, a in enumerate(ids)]
        mentions.append(ArgMention(count, value, "int"))
        step = ChainStep(manifest, {m.name: m.value for m in mentions}, mentions, [])
        task, facts = phrase_task([step], random.Random(1), "conversational", TOOL_NAMES)
        assert (count.replace("_", " ") in facts) == asked, (task, facts)


# --- chain sampling ---------------------------------------------------------------------------


def _sample(seed: int, target: int = 4):
    episode = FakeEpisode(LibraryEnv, library_state(seed))
    faker = Faker("en_US")
    faker.seed_instance(seed)
    return sample_chain(library_manifest(), episode, random.Random(seed), faker, target)


@pytest.mark.parametrize("seed", range(6))
def test_chain_keeps_only_successful_calls_that_replay(seed):
    chain = _sample(seed)
    assert chain is not None and chain.steps
    final, ok = replay(chain.solution, chain.initial_state)
    assert all(ok)
    assert final == chain.final_state
    assert chain.solution[-1].tool == chain.steps[-1].manifest.tool
    assert all(step.changes for step in chain.steps)


def test_chain_uses_a_lookup_when_a_label_is_known():
    chains = [_sample(seed, 6) for seed in range(12)]
    lookups = [s for c in chains for s in c.solution if s.tool == "find_book"]
    assert lookups
    assert all(s.arguments["title"] in {"Emma", "Ulysses"} for s in lookups)  # never the duplicate


def test_chain_is_deterministic_for_a_seed():
    first, second = _sample(5, 8), _sample(5, 8)
    assert [s.model_dump() for s in first.solution] == [s.model_dump() for s in second.solution]
    assert first.final_state == second.final_state


def test_chain_without_any_possible_change_is_none():
    episode = FakeEpisode(LibraryEnv, {})
    assert (
        sample_chain(library_manifest(), episode, random.Random(0), Faker(), 3, max_attempts=5)
        is None
    )


# --- end to end -------------------------------------------------------------------------------


def _generate(n=8, seed=7, share=0.3):
    return generate_scenario_batch(
        library_manifest(),
        "env0123456789abc",
        n,
        seed,
        FakeSandbox(),
        conversational_share=share,
        state_builder=lambda compiled, s: library_state(s % 5),
        kind_shares={"change": 1.0},  # replayed in-process here; questions have their own tests
    ).scenarios


def _without_last_change(spec) -> list:
    tools = [s.tool for s in spec.reference_solution]
    changers = {t.tool for t in library_manifest().tools if t.kind == "state_change"}
    last = max(i for i, tool in enumerate(tools) if tool in changers)
    return spec.reference_solution[:last] + spec.reference_solution[last + 1 :]


def test_generated_scenarios_meet_the_certification_gates():
    specs = _generate()
    # five states for eight scenarios: the same words twice are dropped (round 49)
    assert 6 <= len(specs) == len({spec.task for spec in specs})
    for spec in specs:
        final, ok = replay(spec.reference_solution, spec.initial_state)
        assert all(ok) and 2 <= len(spec.checks) <= 9  # positive checks, then the guard
        assert spec.checks[-1].description == GUARD_DESCRIPTION
        assert all(run_check(c.code, spec.initial_state, final) for c in spec.checks)
        assert not all(
            run_check(c.code, spec.initial_state, spec.initial_state) for c in spec.checks
        )
        partial, _ = replay(_without_last_change(spec), spec.initial_state)
        assert not all(run_check(c.code, spec.initial_state, partial) for c in spec.checks)
        assert not any(name in spec.task for name in TOOL_NAMES)


def test_the_same_calls_for_the_same_kind_are_one_scenario():
    """Round 60: three conditionals on work order WO-00001, each approving its $95 estimate in
    other words, read as one scenario three times."""
    specs = _generate(n=30)  # five states: the same calls come back
    solutions = [
        (spec.kind, json.dumps([s.model_dump() for s in spec.reference_solution])) for spec in specs
    ]
    assert len(solutions) == len(set(solutions)) >= 6


def test_generation_is_deterministic_and_modes_follow_the_share():
    assert [s.model_dump() for s in _generate()] == [s.model_dump() for s in _generate()]
    assert {s.scenario_id for s in _generate(seed=8)} != {s.scenario_id for s in _generate()}
    conversational = _generate(n=4, share=1.0)
    assert all(s.mode == "conversational" and s.user_facts for s in conversational)
    assert all(
        s.mode == "non_conversational" and not s.user_facts for s in _generate(n=4, share=0.0)
    )


def test_unbuildable_scenarios_are_skipped_with_a_reason():
    batch = generate_scenario_batch(
        library_manifest(), "env0", 3, 1, FakeSandbox(), state_builder=lambda compiled, s: {}
    )
    assert batch.scenarios == []
    assert [skip.message for skip in batch.skipped] == ["no state-changing call succeeded"] * 3
    assert {skip.code for skip in batch.skipped} == {"no_successful_change"}


def test_a_created_record_s_free_text_is_compared_by_its_words():
    """An address written with a comma instead of a space is still the address (issue 31); a
    changed word, digit or a date is not."""
    from envmill.tasks.backends.procedural.checks.derive import derive_checks

    initial = {
        "customers": {"C1": {"customer_id": "C1", "address": "1 Old Lane", "since": "2020-01-01"}}
    }
    final = {
        "customers": {
            **initial["customers"],
            "C2": {"customer_id": "C2", "address": "12 Harbour Road, Leeds", "since": "2025-09-17"},
        }
    }
    (check,) = derive_checks(initial, final)
    other_words = {"address": "12 harbour road  Leeds", "since": "2025-09-17"}
    assert run_check(check.code, initial, final)
    assert run_check(check.code, initial, _with_c2(final, other_words))
    for wrong in ({"address": "13 Harbour Road, Leeds"}, {"address": "12 Harbour Rd, Leeds"},
                  {"address": "12 Harbour Road, Leeds-2"}, {"address": "-12 Harbour Road, Leeds"},
                  {"since": "2025-09-18"}, {"address": None}):  # fmt: skip
        assert not run_check(check.code, initial, _with_c2(final, wrong)), wrong


def _with_c2(state: dict, fields: dict) -> dict:
    customers = {**state["customers"], "C2": {**state["customers"]["C2"], **fields}}
    return {**state, "customers": customers}


@pytest.mark.parametrize("seed", range(6))
def test_staff_relay_and_a_member_speaks_for_themself(seed):
    """The signed-in role picks the template's voice where the manifest offers both."""
    step = _remove_step()
    first = "I'm moving away; please close my membership. I'm {member_id.label}."
    relay = "Remove member {member_id.label} from the library."
    manifest = step.manifest.model_copy(update={"phrases": [first, relay]})
    step = ChainStep(manifest, step.arguments, step.mentions, [])
    staff, _ = phrase_task([step], random.Random(seed), "non_conversational", [], "staff")
    member, _ = phrase_task([step], random.Random(seed), "non_conversational", [], "self")
    assert "Remove member Cy Moss" in staff and "my membership" not in staff
    assert "my membership" in member


@pytest.mark.parametrize("seed", range(6))
def test_a_branch_of_a_condition_is_the_bare_request(seed):
    """Inside "if …, A; otherwise, B" a branch is one clause, not a story around it."""
    from envmill.tasks.backends.procedural.phrasing.task import phrase_step

    step = _remove_step()
    story = "Cy is moving away, so please remove member {member_id.label}."
    bare = "Remove member {member_id.label}."
    manifest = step.manifest.model_copy(update={"phrases": [story, bare]})
    step = ChainStep(manifest, step.arguments, step.mentions, [])
    body = phrase_step(step, random.Random(seed), plain=True).body
    assert body.startswith("Remove member Cy Moss") and "moving" not in body


@pytest.mark.parametrize("seed", range(6))
def test_someone_else_s_record_is_not_asked_for_in_the_first_person(seed):
    """ "I changed my mind, please cancel Amanda Miller's order" mixes two people: a record
    described by its owner's name takes a phrase without "I" or "my" where one exists."""
    from envmill.tasks.backends.procedural.phrasing.task import phrase_step

    step = _remove_step()
    mine = "I'm moving away; please close my membership {member_id}."
    plain = "Remove member {member_id} from the library."
    manifest = step.manifest.model_copy(update={"phrases": [mine, plain]})
    described = replace(step.mentions[0], described="Cy Moss's oldest membership")
    body = phrase_step(ChainStep(manifest, step.arguments, [described], []), random.Random(seed))
    assert "Cy Moss's oldest membership" in body.body and "my " not in body.body


@pytest.mark.parametrize("seed", range(6))
def test_a_vague_goal_does_not_open_with_a_story_about_a_record_not_yet_named(seed):
    """ "The member is moving away; please remove them": which member? A conversational goal
    takes a phrase whose values sit in one clause."""
    from envmill.tasks.backends.procedural.phrasing.task import phrase_step

    step = _remove_step()
    story = "{member_id.label} is moving away; please remove member {member_id}."
    plain = "Remove member {member_id.label} from the library."
    manifest = step.manifest.model_copy(update={"phrases": [story, plain]})
    step = ChainStep(manifest, step.arguments, step.mentions, [])
    assert "moving" not in phrase_step(step, random.Random(seed), vague=True).body


@pytest.mark.parametrize("seed", range(4))
def test_staff_enrol_someone_else(seed):
    """A registrar says "enroll a student in a course", not "I'd like to enroll in a course"."""
    from envmill.tasks.backends.procedural.phrasing.task import create_goal

    step = _remove_step()
    manifest = step.manifest.model_copy(update={"tool": "enroll_in_course", "entity": "enrolment"})
    mentions = [
        ArgMention("student_id", "S-1", "entity_id", "student", "Cy Moss", "name"),
        ArgMention("course_id", "CRS-2", "entity_id", "course", "Cell Biology", "title"),
    ]
    step = ChainStep(manifest, {"student_id": "S-1", "course_id": "CRS-2"}, mentions, [])
    assert "enroll a student in a course" in create_goal(step, random.Random(seed), "staff").body
    assert "enroll in a course" in create_goal(step, random.Random(seed), "self").body


def test_a_type_word_the_name_already_says_is_not_repeated():
    from envmill.tasks.backends.procedural.phrasing.task import without_repeated_type

    crew = ArgMention("crew_id", "CR-1", "entity_id", "crew", label="Signals Crew", by_label=True)
    part = ArgMention("part_id", "P-1", "entity_id", "part", label="Brake Rotor", by_label=True)
    assert without_repeated_type("Take crew Signals Crew off duty.", [crew]) == (
        "Take Signals Crew off duty."
    )
    assert without_repeated_type("Restock part Brake Rotor.", [part]) == "Restock part Brake Rotor."


def test_after_a_record_is_made_no_step_acts_on_an_older_one_of_its_kind():
    """ "Take in a lot, and then reprice the harvest lot" reads as the new lot: a later step may
    not act on another lot."""
    from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
    from envmill.tasks.backends.procedural.scenarios.chains import Chain, _ChainSampler

    compiled = compile_environment(load_domain("farm_coop"), 1)
    lots = compiled.entity_attrs["harvest_lot"]
    farmers = compiled.entity_attrs["farmer"]
    changers = [t for t in compiled.tools if t.kind == "state_change"]

    def acting(entity: str, on_one: bool):  # a tool of ``entity``: on one of them, or a create
        return next(
            t for t in changers
            if t.entity == entity and any(a.entity == entity for a in t.args) == on_one
        )  # fmt: skip

    maker, on_lot, on_farmer = (
        acting("harvest_lot", False),
        acting("harvest_lot", True),
        acting("farmer", True),
    )
    state = {
        farmers: {"F-1": {"farmer_id": "F-1"}},
        lots: {"L-1": {"lot_id": "L-1", "farmer_id": "F-1"}, "L-2": {"farmer_id": "F-1"}},
    }
    made = ChainStep(
        maker,
        {"farmer_id": "F-1"},
        [],
        [{"op": "add", "path": [lots, "L-2"], "old": None, "new": state[lots]["L-2"]}],
    )
    sampler = object.__new__(_ChainSampler)
    sampler.compiled, sampler.state = compiled, state
    sampler.chain = Chain(initial_state=state, final_state=state, steps=[made])

    def call(tool, record):
        arg = next(a.name for a in tool.args if a.entity == tool.entity)
        return sampler._related(tool, {arg: record})

    assert not call(on_lot, "L-1")  # another lot, read as the new one
    # nor on the farmer the first step named: "take in Ann's lot, then suspend Ann" has no goal
    assert not call(on_farmer, "F-1")


@pytest.mark.parametrize(
    ("branch", "said"),
    [
        ("record payment for fine FN-000004", "record payment for it"),
        ("close out order OR-000004", "close it out"),
        ("cancel my unpaid order OR-000004", "cancel it"),
        ("please check me in, my booking is OR-000004", "please check me in"),
        ("add $47.84 to the balance of order OR-000004", "add $47.84 to its balance"),
        ("void order OR-000005", "void order OR-000005"),  # another record keeps its name
        ("mark order OR-000004 as paid", "mark it as paid"),
        ("move order OR-000004 to Main Hall", "move it to Main Hall"),
    ],
)
def test_a_branch_says_the_record_its_condition_named_as_it(branch, said):
    """ "If the amount of fine FN-4 is below $19, pay it; otherwise, appeal it", not the id
    three times in one sentence."""
    from envmill.tasks.backends.procedural.phrasing.task import as_it

    record = ArgMention("id", "OR-000004", "entity_id", entity="order")
    fine = ArgMention("id", "FN-000004", "entity_id", entity="fine")
    assert as_it(branch, fine if "FN-" in branch else record) == said


def test_a_person_is_them_in_a_branch():
    from envmill.tasks.backends.procedural.phrasing.task import as_it

    client = ArgMention("id", "C-1", "entity_id", entity="client", label="Kelly Lewis")
    assert (
        as_it("return $20 of client Kelly Lewis's retainer", client)
        == "return $20 of their retainer"
    )
    assert as_it("pause client Kelly Lewis", client) == "pause them"
    # the record is already "their": no ", for them" tacked on after it
    assert (
        as_it("add $500 to their retainer, for Kelly Lewis", client) == "add $500 to their retainer"
    )
    assert as_it("pause the plan, for Kelly Lewis", client) == "pause the plan, for them"


@pytest.mark.parametrize(
    ("how", "field", "entity", "key", "done"),
    [
        ("latest", "placed_at", "order", "latest_done", "placed"),
        ("earliest", "hired_on", "employee", "earliest_done", "hired"),
        ("earliest", "booked_at", "booking", "earliest_own", ""),  # not "earliest-booked booking"
        ("latest", "enrolled_at", "enrolment", "latest_own", ""),
        ("latest", "starts_at", "class", "latest", ""),  # no participle: by the field's words
        ("earliest", "incident_on", "claim", "earliest", ""),
        ("earliest_any", "starts_at", "appointment", "earliest_own", ""),  # first by every time
    ],
)
def test_the_latest_record_is_named_by_what_its_time_stamps(how, field, entity, key, done):
    """ "Amanda Miller's most recently placed order", "my latest booking", never "… with the
    most recent order time" where a participle says it."""
    from envmill.tasks.backends.procedural.phrasing.lookup_words import say
    from envmill.tasks.backends.procedural.scenarios.lookups import _phrase_key

    assert _phrase_key(how, field, entity, named=False, anywhere=False) == (key, done)
    text = say(key, random.Random(1), whose="my", entity=entity, field="x", value="", done=done)
    assert entity in text and "{" not in text and (" x" not in text) == bool(done or "own" in key)


def test_a_refused_amount_is_a_near_miss():
    """ "$188.42 against $0.15 of fines" is no one's mistake: the refused amount is redrawn just
    past the limit, and kept only if the same rule still refuses it."""
    from envmill.tasks.backends.procedural.scenarios.refusals import _near_miss

    class Episode:
        def __init__(self):
            self.tried = []

        def call(self, tool, arguments):
            self.tried.append(arguments["amount"])
            refused = arguments["amount"] > 0.15
            error = f"Amount ({arguments['amount']}) must be at most the fines due of M (0.15)"
            result = {"success": not refused, **({"error": error} if refused else {})}
            return ToolOutcome(result=result, state={})

        def load_state(self, state):
            pass

    episode = Episode()
    error = "Amount (188.42) must be at most the fines due of M (0.15)"
    arguments, said = _near_miss(
        episode, "pay", {"amount": 188.42, "member_id": "M"}, error, {}, random.Random(3)
    )
    assert 0.15 < arguments["amount"] <= 0.21 and arguments["member_id"] == "M"
    assert f"({arguments['amount']})" in said


def test_one_of_a_thing_is_singular_before_a_preposition():
    from envmill.tasks.backends.procedural.phrasing.words import tidy_text

    assert tidy_text("Please sell 1 tickets for event X.") == "Please sell 1 ticket for event X."
    assert tidy_text("Add 1 premium seats.") == "Add 1 premium seat."
    assert tidy_text("It left, 1 hours parked.") == "It left, 1 hour parked."  # a participle after


def test_a_user_introduces_themself_once():
    from envmill.tasks.backends.procedural.phrasing.task import once_introduced

    said = once_introduced("Top up my wallet. I'm Ann Lee. Also, book 4 tickets. I'm Ann Lee.")
    assert said == "Top up my wallet. I'm Ann Lee. Also, book 4 tickets."


def test_a_refusal_quotes_only_amounts_the_agent_saw():
    from envmill.tasks.backends.procedural.scenarios.refusals import _reason_shown

    error = "Retainer balance of client C-6 (1153.48) must be at least the amount (2108.97)"
    invoice = {"data": {"invoice_id": "LI-4", "amount": 2108.97}}
    client = {"data": {"client_id": "C-6", "retainer_balance": 1153.48}}
    assert not _reason_shown(error, [invoice], {"invoice_id": "LI-4"})
    assert _reason_shown(error, [invoice, client], {"invoice_id": "LI-4"})
    assert _reason_shown("Hours (56) must be at most 15", [invoice], {"hours": 56})


def test_a_time_without_a_participle_names_the_latest_only_when_every_time_agrees():
    """ "Gabriel Nelson's earliest appointment" only when it is first by start and by booking
    time alike; otherwise that appointment is not named by a time at all."""
    from envmill.tasks.backends.procedural.scenarios.lookups import _extreme_options

    first = {"appointment_id": "A1", "starts_at": "2025-02-01T09:00:00", "note": "x"}
    later = {"appointment_id": "A2", "starts_at": "2025-02-03T09:00:00", "note": "y"}
    assert _extreme_options(first, {"A1": first, "A2": later}, "A1") == [
        ("earliest_any", "starts_at")
    ]
    booked_late = {**first, "booked_at": "2025-01-20T10:00:00"}
    booked_early = {**later, "booked_at": "2025-01-02T10:00:00"}
    options = _extreme_options(booked_late, {"A1": booked_late, "A2": booked_early}, "A1")
    assert options == [("latest", "booked_at")]  # "most recently booked", not "earliest"


def test_a_person_tells_themself_apart_in_their_own_words():
    """ "I'm Katie Ramirez (the one whose phone is 333)" reads as a database; a person says
    "I'm Katie Ramirez (my phone is 333)"."""
    from envmill.tasks.backends.procedural.phrasing.task import phrase_step

    step = _remove_step()
    phrase = "Close my membership. I'm {member_id}."
    manifest = step.manifest.model_copy(update={"phrases": [phrase]})
    me = replace(step.mentions[0], hint="Cy Moss (the one whose phone is 555-0101)")
    body = phrase_step(ChainStep(manifest, step.arguments, [me], []), random.Random(0)).body
    assert body.endswith("I'm Cy Moss (my phone is 555-0101)"), body
    named = manifest.model_copy(
        update={"phrases": ["Close my membership. My name is {member_id}."]}
    )
    body = phrase_step(ChainStep(named, step.arguments, [me], []), random.Random(0)).body
    assert body.endswith("My name is Cy Moss (my phone is 555-0101)"), body


def test_one_of_a_thing_ending_in_ches_or_xes_reads_right_and_no_possessive_follows_a_note():
    """ "1 completed batche" and "resident Zachary Adams (whose email is …)'s phone" (red team)."""
    from envmill.tasks.backends.procedural.phrasing.task import NAMED_AFTER_NOTE, OWNED_AFTER_NOTE
    from envmill.tasks.backends.procedural.phrasing.words import tidy_text

    assert tidy_text("There is 1 completed batches.") == "There is 1 completed batch."
    assert tidy_text("It has 1 boxes.") == "It has 1 box."
    noted = "Update resident Zachary Adams (whose email is z@x.org)'s phone to 555."
    assert OWNED_AFTER_NOTE.sub(r"the \2 of \1", noted) == (
        "Update the phone of resident Zachary Adams (whose email is z@x.org) to 555."
    )
    # a name with no noun before it (round 33: "complained the last lots of about April Woods")
    about = "Buyers complained about April Woods (the one whose phone is 555)'s last lots; stop."
    about = NAMED_AFTER_NOTE.sub(r"the \2 of \1", OWNED_AFTER_NOTE.sub(r"the \2 of \1", about))
    assert about == (
        "Buyers complained about the last lots of April Woods (the one whose phone is 555); stop."
    )


def test_a_story_goes_the_way_the_number_moves():
    """ "our rates went up; bill $342.74 an hour" on a $425 rate (raters): a phrase that says
    a number rose is not used for one that fell, nor the other way round."""
    from envmill.tasks.backends.procedural.phrasing.task import _same_way

    up, down, plain = "Our rates went up; bill {rate}.", "Drop it to {rate}.", "Set it to {rate}."
    step = _remove_step()
    fell = replace(step, changes=[{"path": ["m", "M1", "rate"], "old": 425.0, "new": 342.74}])
    rose = replace(step, changes=[{"path": ["m", "M1", "rate"], "old": 0.55, "new": 0.65}])
    assert _same_way([up, down, plain], fell) == [down, plain]
    assert _same_way([up, down, plain], rose) == [up, plain]
    assert _same_way([up, down, plain], step) == [up, down, plain]  # no number moved
