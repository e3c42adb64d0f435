"""The report's corpus figures, worked example, comparison and template diversity, on a warehouse
written row by row in-process, with every expected number worked out by hand below."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from envmill.schemas.ids import content_id
from envmill.schemas.scenario import GATES
from envmill.schemas.tables import derive_call_id
from envmill.warehouse.report.build import build_report, flatten_charts, render_report
from envmill.warehouse.report.corpus import RESULT_CHARS
from envmill.warehouse.report.frames import cross_domain_line_share, frame_share, sentence_frames
from envmill.warehouse.report.model import Section
from envmill.warehouse.report.published import NOT_FOUND, PUBLISHED
from envmill.warehouse.report.svg import BarChart, BarRow, flat_summary
from envmill.warehouse.store import Warehouse

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
RUN = "run-corpus"
HOSTILE = "<script>alert('x')</script> Renew card 9 for Bob Stone."
LIBRARY_SOURCE = "def renew(self, card_id):\n    self.cards[card_id] = 'renewed'\n    return True\n"
CLINIC_SOURCE = "def renew(self, card_id):\n    self.patients[card_id] = 42  # a note\n"


def env_row(name: str, domain: str, source: str, backend: str = "procedural") -> dict:
    return {
        "env_id": content_id(name), "run_id": RUN, "domain": domain, "backend": backend,
        "class_name": name, "topic": name, "introduction": "", "business_rules_json": [],
        "source": source, "tools_json": [], "state_schema_json": {"type": "object"},
        "n_tools": 1, "n_query_tools": 0, "n_state_change_tools": 1, "checked_json": {},
        "seed": 1, "created_at": NOW,
    }  # fmt: skip


def tool_row(env: str, name: str) -> dict:
    return {"env_id": content_id(env), "name": name, "kind": "state_change", "description": "d",
            "parameters_json": {"type": "object", "properties": {}}, "n_params": 0}  # fmt: skip


def scenario_row(n: int, env: str, task: str, tools: list[str], **kw) -> dict:
    rejected = kw.get("rejected")
    return {
        "scenario_id": content_id(["s", n]), "env_id": content_id(env), "run_id": RUN,
        "backend": kw.get("backend", "procedural"), "mode": kw.get("mode", "non_conversational"),
        "task": task, "user_facts_json": {}, "initial_state_json": {},
        "reference_solution_json": [{"tool": t, "arguments": {}} for t in tools],
        "checks_json": [], "kind": kw.get("kind"), "n_checks": 0, "n_steps": len(tools),
        "status": "rejected" if rejected else "certified", "rejected_gate": rejected,
        "gates_json": [{"gate": g, "passed": g != rejected, "reason": ""} for g in GATES],
        "repairs": 0, "created_at": NOW,
    }  # fmt: skip


def call(name: str, arguments: dict) -> dict:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": function}]}  # fmt: skip


SHORT = [  # 17 words: 2 + 6 + (renew_card) 1 + (card_id, 7) 2 + (ok, true) 2 + 4
    {"role": "system", "content": "Be kind."},
    {"role": "user", "content": "Renew card 7 for Ann Lee."},
    call("renew_card", {"card_id": "7"}),
    {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
    {"role": "assistant", "content": "Done: card 7 renewed."},
]
EXAMPLE = [
    {"role": "system", "content": "Be kind."},
    {"role": "user", "content": HOSTILE},
    call("renew_card", {"card_id": "9", "note": "<b>now</b>"}),
    {"role": "tool", "tool_call_id": "c1", "content": "x" * 1000},
    {"role": "assistant", "content": "Card 9 is renewed until June."},
]


def trajectory_row(n: int, scenario: int, policy: str, reward: float, messages: list) -> dict:
    return {
        "trajectory_id": content_id(["t", n]), "scenario_id": content_id(["s", scenario]),
        "env_id": content_id("lib-a"), "run_id": RUN, "policy": policy,
        "messages_json": messages, "check_results_json": [], "reward": reward,
        "success": reward == 1.0, "steps": 1, "termination": "finished", "usage_json": {},
        "timings_json": {}, "created_at": NOW,
    }  # fmt: skip


def llm_call_row(n: int, stage: str, tokens: int) -> dict:
    return {
        "call_id": derive_call_id(RUN, f"r{n}", "item", NOW.isoformat()), "run_id": RUN,
        "stage": stage, "item": "item", "model": "local", "prompt_hash": "p",
        "request_hash": f"r{n}", "sample": 0, "prompt_tokens": tokens, "completion_tokens": 5,
        "latency_seconds": 0.1, "queue_seconds": 0.0, "cache_hit": False, "attempts": 1,
        "outcome": "ok", "error_class": "", "error": "", "cost_usd": 0.0, "created_at": NOW,
    }  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    wh = Warehouse(Path(tmp_path_factory.mktemp("corpus")) / "data")
    wh.write("environments", [env_row("lib-a", "library", LIBRARY_SOURCE),
                              env_row("clinic-b", "clinic", CLINIC_SOURCE),
                              env_row("lib-c", "library", LIBRARY_SOURCE, "llm")])  # fmt: skip
    wh.write("tools", [tool_row("lib-a", "renew_card"), tool_row("lib-a", "get_card"),
                       tool_row("clinic-b", "close"), tool_row("lib-c", "book")])  # fmt: skip
    wh.write("scenarios", [
        scenario_row(1, "lib-a", "Renew card 7 for Ann Lee.",
                     ["get_card", "renew_card", "get_card"], kind="change"),
        scenario_row(2, "lib-a", "Renew card 9 for Bob Stone.", ["renew_card"], kind="refusal",
                     mode="conversational"),
        scenario_row(3, "clinic-b", "Close the account now. Thanks a lot.", ["close", "close"],
                     kind="change"),
        scenario_row(4, "lib-c", "Book a room. Thanks a lot.", ["book"], backend="llm",
                     mode="conversational"),
        scenario_row(5, "clinic-b", "Never certified.", ["close"], kind="change",
                     rejected="checks_pass"),
    ])  # fmt: skip
    wh.write("trajectories", [
        trajectory_row(1, 1, "reference", 1.0, SHORT),
        trajectory_row(2, 1, "model", 0.0, SHORT),
        trajectory_row(3, 1, "model", 0.6, SHORT),
        trajectory_row(4, 1, "model", 1.0, SHORT),
        trajectory_row(5, 2, "reference", 1.0, EXAMPLE),
    ])  # fmt: skip
    wh.write("llm_calls", [llm_call_row(1, "skeleton", 100), llm_call_row(2, "scenarios", 300)])
    return build_report(wh.root, now=NOW)


def records(section: Section, caption: str) -> list[dict]:
    return next(t for t in section.tables if t.caption.startswith(caption)).records()


# --- the corpus section ---------------------------------------------------------------------


def test_kinds_and_modes_are_shares_of_certified_scenarios_per_backend(report):
    corpus = report.section("corpus")
    kinds = {(r["backend"], r["kind"]): (r["scenarios"], r["share"])
             for r in records(corpus, "Kinds")}  # fmt: skip
    assert kinds == {("procedural", "change"): (2, "66.7%"),  # the rejected one not counted
                     ("procedural", "refusal"): (1, "33.3%"),
                     ("llm", "(none)"): (1, "100.0%")}  # fmt: skip
    modes = {(r["backend"], r["mode"]): r["scenarios"] for r in records(corpus, "Modes")}
    assert modes == {("procedural", "non_conversational"): 2,
                     ("procedural", "conversational"): 1, ("llm", "conversational"): 1}  # fmt: skip
    chart = corpus.chart("Certified scenarios by kind")
    assert chart.values("procedural") == {"change": 2, "refusal": 1, "(none)": 0}


def test_sizes_of_tasks_references_and_trajectories(report):
    rows = {(r["measure"], r["group"]): r for r in records(report.section("corpus"), "Sizes")}
    words = rows[("task words", "backend procedural")]  # 6, 6, 7
    assert (words["n"], words["min"], words["max"], words["mean"]) == (3, 6, 7, 6.33)
    steps = rows[("reference steps", "backend procedural")]
    assert (steps["mean"], steps["median"], steps["max"]) == (2.0, 2, 3)
    tools = rows[("reference tools", "backend procedural")]  # 2 of 3 calls, 1, 1 of 2 calls
    assert (tools["min"], tools["max"], tools["mean"]) == (1, 2, 1.33)
    model = "policy model"
    assert rows[("turns per trajectory", model)]["mean"] == 2
    assert rows[("tool calls per trajectory", model)]["max"] == 1
    tokens = rows[("tokens (≈ words × 1.3) per trajectory", model)]
    assert (tokens["n"], tokens["mean"]) == (3, round(17 * 1.3))


def test_rewards_are_binned_by_policy(report):
    rewards = {r["policy"]: r for r in records(report.section("corpus"), "Reward")}
    assert rewards["model"]["trajectories"] == 3
    assert rewards["model"]["mean reward"] == pytest.approx(1.6 / 3, abs=1e-4)
    assert [rewards["model"][b] for b in ("0", "(0, 0.5)", "[0.5, 1)", "1")] == [
        "33.3%", "0.0%", "33.3%", "33.3%"]  # fmt: skip
    assert rewards["reference"]["1"] == "100.0%"
    chart = report.section("corpus").chart("Trajectories by reward")
    assert chart.values("model") == {"0": 1, "(0, 0.5)": 0, "[0.5, 1)": 1, "1": 1}


def test_one_row_per_domain(report):
    domains = {r["domain"]: r for r in records(report.section("corpus"), "Per domain")}
    assert domains["library"] == {"domain": "library", "environments": 2, "tools": 3,
                                  "scenarios": 3, "certified": 3, "trajectories": 5}  # fmt: skip
    assert domains["clinic"] == {"domain": "clinic", "environments": 1, "tools": 1,
                                 "scenarios": 2, "certified": 1, "trajectories": 0}  # fmt: skip


# --- the worked example and the page ------------------------------------------------------------


def test_the_worked_example_is_the_conversational_reference(report):
    turns = report.section("example").transcript
    assert [t.role for t in turns] == ["system", "user", "assistant · tool call", "tool result",
                                       "assistant"]  # fmt: skip
    assert turns[1].text == HOSTILE
    assert turns[2].text == 'renew_card(card_id="9", note="<b>now</b>")'
    assert turns[3].text.startswith("x" * (RESULT_CHARS - 1) + "…") and "1,000" in turns[3].text
    assert "Domain library, conversational, kind refusal" in report.section("example").text


def test_the_page_escapes_the_example_and_names_no_address(report):
    html = render_report(report)
    assert "<script" not in html and "<b>now</b>" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert "note=&#34;&lt;b&gt;now&lt;/b&gt;&#34;" in html
    assert "http://" not in html and "https://" not in html


def test_the_comparison_cites_every_published_figure(report):
    rows = {r["corpus"]: r for r in records(report.section("comparison"), "Corpus figures")}
    ours = rows["this corpus (the runs covered)"]
    assert ours["environments"] == "3 in 2 domains"
    assert ours["tools per environment"] == "1.3 (mean)"  # 4 tools
    assert ours["tasks / scenarios"] == "4 certified scenarios" and ours["trajectories"] == "5"
    assert rows["EnvScaler"]["environments"] == "191"
    assert rows["EnvScaler"]["tools per environment"].startswith("about 18.5")
    assert rows["AWM (Agent World Model)"]["trajectories"] == NOT_FOUND  # no source states it
    for corpus in PUBLISHED:
        assert corpus.sources and all("arxiv" in s or "." in s for s in corpus.sources)
        assert rows[corpus.name]["sources"] == "; ".join(corpus.sources)


# --- template diversity -------------------------------------------------------------------------


def test_template_measures_on_the_warehouse(report):
    diversity = report.section("diversity")
    # frames: "renew card # for #." twice (tasks 1 and 2); "thanks a lot." in tasks 3 and 4
    assert diversity.metric("shared_task_frames").value == pytest.approx(2 / 4)
    assert diversity.metric("shared_sentence_frames").value == pytest.approx(4 / 6)
    # lines: "def renew ( self , card_id ) :" in both domains (3 of 6 environment lines)
    assert diversity.metric("shared_code_lines").value == pytest.approx(3 / 6)


def test_frames_mask_values_names_and_quotes():
    text = 'Hi! Book "Yoga Flow" for 2025-05-23 at 14:30, $74. Ask Mary Ann.'
    assert sentence_frames(text) == ["hi!", "book # for # at #.", "ask #."]  # "#, #": one run
    assert sentence_frames("I'd like room B-12 for Ann.") == ["i'd like room # for #."]
    share = frame_share(["Renew card 7.", "Close it. Close it.", "Renew card 9."])
    assert (share.tasks_shared, share.sentences_shared, share.sentences) == (2, 2, 4)  # in 1 task


def test_code_lines_need_another_domain_to_count_as_shared():
    same_domain = cross_domain_line_share([("a", LIBRARY_SOURCE), ("a", LIBRARY_SOURCE)])
    assert same_domain.share is None and same_domain.lines == 4  # one domain: n/a
    two = cross_domain_line_share([("a", LIBRARY_SOURCE), ("b", LIBRARY_SOURCE.upper())])
    assert two.shared == 0 and two.share == 0.0  # other names: no line alike
    unreadable = cross_domain_line_share([("a", "x = (1,\n"), ("b", "x = (2,\n")])
    assert unreadable.share == 1.0  # masked line by line: "x = ( N ," in both


# --- charts that carry no information -----------------------------------------------------------


def test_a_chart_with_nothing_to_show_becomes_one_line():
    funnel = BarChart("Scenarios reaching each gate", ("passed", "rejected here"),
                      tuple(BarRow(g, (285.0, 0.0)) for g in GATES))  # fmt: skip
    line = flat_summary(funnel)
    assert line is not None and "passed 285, rejected here 0" in line and str(len(GATES)) in line
    cost = BarChart("Cost by stage", ("cost",), (BarRow("a", (0.0,)), BarRow("b", (0.0,))),
                    unit=" USD")  # fmt: skip
    assert flat_summary(cost) == "Cost by stage: every bar is 0 USD (2 rows: a, b)."
    varied = BarChart("t", ("x",), (BarRow("a", (1.0,)), BarRow("b", (2.0,))))
    assert flat_summary(varied) is None
    section = flatten_charts(Section("s", "S", charts=[funnel, varied, cost]))
    assert section.charts == [varied] and len(section.flat_charts) == 2


def test_an_empty_cost_box_is_printed_as_text(report):
    llm = report.section("llm")
    assert [c.title for c in llm.charts] == ["Tokens by stage"]
    assert llm.flat_charts == ["Cost by stage: every bar is 0 USD (2 rows: scenarios, skeleton)."]
    html = render_report(report)
    assert 'aria-label="Cost by stage"' not in html and llm.flat_charts[0] in html
