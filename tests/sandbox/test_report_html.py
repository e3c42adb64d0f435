"""``envmill report``: the figures match SQL over the same folder, ``--run`` narrows them, warehouse
text is escaped, and the page needs nothing from outside."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from envmill.schemas.ids import content_id
from envmill.schemas.scenario import GATES
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.tables import derive_call_id, derive_failure_id
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.warehouse.report.build import build_report, render_report
from envmill.warehouse.report.diversity import distinct_n, pairwise_similarity, tokenize
from envmill.warehouse.report.svg import BarChart, BarRow, histogram_rows, layout
from envmill.warehouse.rows import write_batch
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query
from tests.conftest import TEST_LIMITS
from tests.timing import scaled

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
HOSTILE_TASK = "<script>alert('task')</script> Please renew card C-1 & tell me."
HOSTILE_DOMAIN = '<img src=x onerror="alert(1)">'
HOSTILE_MESSAGE = "</title></text><script>alert('failure')</script>"
LLM_RUN = "run-llm"
PROCEDURAL_RUNS = {"run-a": (3, ["library", "banking"]), "run-b": (4, ["clinic"])}


# --- a small warehouse: two real procedural runs, one hand-written run with LLM calls ----------


def _record_run(wh: Warehouse, run_id: str, settings: EnvmillSettings) -> None:
    wh.write(
        "runs",
        [
            {
                "run_id": run_id,
                "started_at": NOW,
                "finished_at": NOW,
                "status": "finished",
                "backend": settings.backend,
                "seed": settings.seed,
                "settings_json": settings.model_dump(mode="json"),
                "versions_json": {"envmill": "0.1.0", "python": "3.11"},
                "counts_json": {},
                "timings_json": {},
                "isolation": "rlimits",
            }
        ],
        key=run_id,
    )


def _gates(rejected_at: str | None) -> list[dict]:
    gates = [{"gate": g, "passed": True, "reason": "ok"} for g in GATES]
    if rejected_at:
        for gate in gates[GATES.index(rejected_at) :]:
            gate["passed"] = gate["gate"] in ("deterministic",)  # later gates may fail too
    return gates


def _scenario(env_id: str, n: int, task: str, rejected_at: str | None = None) -> dict:
    return {
        "scenario_id": content_id([env_id, n]),
        "env_id": env_id,
        "run_id": LLM_RUN,
        "backend": "llm",
        "mode": "non_conversational",
        "task": task,
        "user_facts_json": {},
        "initial_state_json": {},
        "reference_solution_json": [{"tool": "renew_card", "arguments": {"card_id": "C-1"}}],
        "checks_json": [{"description": "Has x", "code": "def check(i, f):\n    return True"}],
        "n_checks": 1,
        "n_steps": 1,
        "status": "rejected" if rejected_at else "certified",
        "rejected_gate": rejected_at,
        "gates_json": _gates(rejected_at),
        "repairs": 1 if rejected_at else 0,
        "created_at": NOW,
    }


def _hostile_environment(wh: Warehouse) -> None:
    env_id = content_id("hostile")
    state = {
        "type": "object",
        "properties": {
            "<b>cards</b>": {"type": "object", "additionalProperties": {"type": "object"}},
            "stock": {"type": "object", "additionalProperties": {"type": "integer"}},
            "current_time": {"type": "string"},
            "next_card_number": {"type": "integer"},
            "loans": {"type": "array"},
        },
    }
    wh.write("environments", [{
        "env_id": env_id, "run_id": LLM_RUN, "domain": HOSTILE_DOMAIN, "backend": "llm",
        "class_name": "Hostile", "topic": "<i>topic</i>", "introduction": "", "source": "x",
        "business_rules_json": [], "tools_json": [], "state_schema_json": state, "n_tools": 2,
        "n_query_tools": 1, "n_state_change_tools": 1, "checked_json": {}, "seed": None,
        "created_at": NOW,
    }])  # fmt: skip
    wh.write("tools", [
        {"env_id": env_id, "name": "get_card", "kind": "query", "description": "<u>d</u>",
         "parameters_json": {"type": "object", "properties": {"card_id": {}}}, "n_params": 1},
        {"env_id": env_id, "name": "renew_card", "kind": "state_change", "description": "d",
         "parameters_json": {"type": "object", "properties": {"card_id": {}}}, "n_params": 1},
    ])  # fmt: skip
    scenarios = [
        _scenario(env_id, 1, HOSTILE_TASK),
        _scenario(env_id, 2, f"  {HOSTILE_TASK.upper()} "),  # the same task, spelled otherwise
        _scenario(env_id, 3, HOSTILE_TASK.replace(" ", "   ")),
        _scenario(env_id, 4, "broken", rejected_at="checks_pass"),
        _scenario(env_id, 5, "broken too", rejected_at="loads"),
    ]
    wh.write("scenarios", scenarios)


def _failures_and_calls(wh: Warehouse) -> None:
    failures = [
        ("environments", "item-1", "EnvironmentRejected", "policy.import", HOSTILE_MESSAGE),
        ("environments", "item-2", "EnvironmentRejected", "policy.import", "another"),
        ("scenarios", "item-3", "ValueError", "", "no state"),
    ]
    wh.write("failures", [
        {"failure_id": derive_failure_id(LLM_RUN, stage, item), "run_id": LLM_RUN,
         "stage": stage, "item": item, "error_class": cls, "code": code, "message": message,
         "details_json": [], "attempts": 1, "created_at": NOW}
        for stage, item, cls, code, message in failures
    ])  # fmt: skip
    calls = [("skeleton", 100, 20, 0.002, False), ("skeleton", 50, 10, 0.0, True),
             ("scenarios", 300, 120, 0.01, False)]  # fmt: skip
    wh.write("llm_calls", [
        {"call_id": derive_call_id(LLM_RUN, f"r{i}", "item", NOW.isoformat()), "run_id": LLM_RUN,
         "stage": stage, "item": "item", "model": "<model>", "prompt_hash": "p",
         "request_hash": f"r{i}", "sample": 0, "prompt_tokens": prompt,
         "completion_tokens": completion, "latency_seconds": 0.1, "queue_seconds": 0.0,
         "cache_hit": hit, "attempts": 1, "outcome": "ok", "error_class": "", "error": "",
         "cost_usd": cost, "created_at": NOW}
        for i, (stage, prompt, completion, cost, hit) in enumerate(calls)
    ])  # fmt: skip


@pytest.fixture(scope="module")
def root(tmp_path_factory, sandbox) -> Path:
    wh = Warehouse(tmp_path_factory.mktemp("report") / "data")
    for run_id, (seed, domains) in PROCEDURAL_RUNS.items():
        settings = EnvmillSettings(envs=2, scenarios_per_env=3, batch_size=100, seed=seed,
                                   domains=domains, sandbox=TEST_LIMITS)  # fmt: skip
        for batch in plan_batches(settings):
            write_batch(wh, synthesize_batch(batch, settings, sandbox), run_id)
        _record_run(wh, run_id, settings)
    _record_run(wh, LLM_RUN, EnvmillSettings(backend="llm", envs=1, seed=9))
    _hostile_environment(wh)
    _failures_and_calls(wh)
    return wh.root


@pytest.fixture(scope="module")
def whole(root):
    return build_report(root)


@pytest.fixture(scope="module")
def run_a(root):
    return build_report(root, "run-a")


def sql(root: Path, text: str, params: list | None = None) -> list[dict]:
    return query(root, text, params).to_pylist()


def histogram(chart: BarChart, series: str) -> dict[int, int]:
    """Non-zero bars of a histogram chart as value → count (its rows are single values here)."""
    return {int(k): int(v) for k, v in chart.values(series).items() if v}


# --- the figures are the SQL's numbers ----------------------------------------------------------


def test_overview_and_tool_histogram_match_sql(root, whole):
    counts = sql(root, "SELECT (SELECT count(*) FROM environments) AS environments, "
                       "(SELECT count(*) FROM tools) AS tools, "
                       "(SELECT count(*) FROM scenarios) AS scenarios")[0]  # fmt: skip
    assert {k: whole.overview[k] for k in counts} == counts
    chart = whole.section("tools").chart("Environments by number of tools")
    for kind, column in (("query", "n_query_tools"), ("state_change", "n_state_change_tools")):
        expected = sql(root, f"SELECT {column} AS k, count(*) AS n FROM environments GROUP BY 1")
        assert histogram(chart, kind) == {r["k"]: r["n"] for r in expected}


def test_state_categories_match_the_state_schemas(root, whole):
    schemas = sql(root, "SELECT env_id, state_schema_json FROM environments")
    properties = {r["env_id"]: json.loads(r["state_schema_json"])["properties"] for r in schemas}
    chart = whole.section("state").chart("Environments by number of top-level")
    assert histogram(chart, "state attributes") == Counter(len(p) for p in properties.values())
    table = {r["category"]: r for r in whole.section("state").tables[0].records()}
    assert sum(r["attributes"] for r in table.values()) == sum(map(len, properties.values()))
    assert table["mapping"]["attributes"] == 1  # the hostile env's stock by SKU
    assert table["clock"]["environments with one"] == len(properties)
    common = whole.section("state").chart("Most common entity").values("environments")
    assert common["<b>cards</b>"] == 1 and common["patients"] == 2  # two clinic environments


def test_scenarios_and_funnel_match_sql(root, whole):
    per_env = sql(root, "SELECT e.env_id, count(s.scenario_id) AS n FROM environments e "
                        "LEFT JOIN scenarios s USING (env_id) GROUP BY 1")  # fmt: skip
    chart = whole.section("scenarios").chart("Environments by number of scenarios")
    assert histogram(chart, "all scenarios") == Counter(r["n"] for r in per_env)

    rows = sql(root, "SELECT status, rejected_gate, gates_json FROM scenarios")
    funnel = whole.section("funnel")
    rejected = funnel.chart("Scenarios reaching").values("rejected here")
    passed = funnel.chart("Scenarios reaching").values("passed")
    for i, gate in enumerate(GATES):
        assert rejected[gate] == sum(r["rejected_gate"] == gate for r in rows)
        later = {g for g in GATES[i + 1 :]}
        assert passed[gate] == sum(r["status"] == "certified" or r["rejected_gate"] in later
                                   for r in rows)  # fmt: skip
    assert passed["certified"] == sum(r["status"] == "certified" for r in rows)
    failed = Counter(
        g["gate"] for r in rows for g in json.loads(r["gates_json"]) if not g["passed"]
    )
    table = {r["gate"]: r["failed at all"] for r in funnel.tables[0].records()}
    assert {g: n for g, n in table.items() if n} == dict(failed)
    assert table["partial_fails"] == 2 > rejected["partial_fails"]  # failed, but not first


def test_failures_and_llm_usage_match_sql(root, whole):
    expected = sql(root, "SELECT stage, CASE WHEN code = '' THEN error_class ELSE code END AS r, "
                         "count(*) AS n FROM failures GROUP BY ALL")  # fmt: skip
    values = whole.section("failures").chart("Failures by stage").values("failures")
    assert values == {f"{r['stage']} · {r['r']}": r["n"] for r in expected}
    llm = sql(root, "SELECT stage, sum(prompt_tokens) AS p, sum(completion_tokens) AS c, "
                    "sum(cost_usd) AS usd FROM llm_calls GROUP BY stage")  # fmt: skip
    section = whole.section("llm")
    assert section.note == ""
    assert section.chart("Tokens").values("prompt") == {r["stage"]: r["p"] for r in llm}
    assert section.chart("Tokens").values("completion") == {r["stage"]: r["c"] for r in llm}
    assert section.chart("Cost").values("cost") == pytest.approx(
        {r["stage"]: r["usd"] for r in llm}
    )


def test_diversity_metrics_follow_their_definitions(root, whole):
    section = whole.section("diversity")
    domains = sql(root, "SELECT count(DISTINCT domain) AS n FROM environments")[0]["n"]
    assert section.metric("domains").value == domains
    tools = sql(root, "SELECT name, parameters_json FROM tools")
    signatures = {(t["name"], tuple(sorted(json.loads(t["parameters_json"])["properties"])))
                  for t in tools}  # fmt: skip
    assert section.metric("tool_signatures").value == len(signatures)
    tasks = sql(root, "SELECT task FROM scenarios WHERE status = 'certified' ORDER BY scenario_id")
    texts = [r["task"] for r in tasks]
    normal = {" ".join(t.lower().split()) for t in texts}
    assert section.metric("duplicate_share").value == pytest.approx(1 - len(normal) / len(texts))
    assert section.metric("duplicate_share").value > 0  # three spellings of one request
    assert section.metric("distinct_2").value == pytest.approx(distinct_n(texts).ratios[2])
    assert "only" in section.metric("distinct_1").definition  # a small corpus: below budget
    similarity = pairwise_similarity(texts)
    assert section.metric("mean_similarity").value == pytest.approx(similarity.mean)


# --- one run only -------------------------------------------------------------------------------


def test_run_filter_restricts_every_figure(root, run_a):
    expected = sql(root, "SELECT count(*) AS envs, sum(n_tools) AS tools "
                         "FROM environments WHERE run_id = 'run-a'")[0]  # fmt: skip
    assert run_a.overview["environments"] == expected["envs"] == 2
    assert run_a.overview["tools"] == expected["tools"]
    assert [r.run_id for r in run_a.runs] == ["run-a"]
    scenarios = sql(root, "SELECT count(*) AS n FROM scenarios WHERE run_id = 'run-a'")[0]["n"]
    funnel = {r["gate"]: r for r in run_a.section("funnel").tables[0].records()}
    assert funnel["loads"]["passed"] == scenarios
    assert {d for d, _ in run_a.section("scenarios").examples} == {"library", "banking"}
    assert run_a.section("failures").note and run_a.section("failures").charts == []
    assert run_a.section("diversity").metric("domains").value == 2


def test_without_llm_calls_the_section_is_a_note(run_a):
    html = render_report(run_a)
    section = run_a.section("llm")
    assert section.charts == [] and section.tables == []
    assert "No LLM calls were recorded" in section.note and section.note in html.replace(
        "&#39;", "'"
    )
    assert "run-b" not in html and LLM_RUN not in html


def test_an_unknown_run_is_refused(root):
    from envmill.warehouse.report.build import UnknownRun

    with pytest.raises(UnknownRun, match="run-zz"):
        build_report(root, "run-zz")


# --- the page -----------------------------------------------------------------------------------


def test_warehouse_text_is_escaped(whole):
    html = render_report(whole)
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#39;task&#39;)&lt;/script&gt;" in html.lower()  # an example
    assert "<img" not in html and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html
    assert "<b>cards</b>" not in html and "&lt;b&gt;cards&lt;/b&gt;" in html
    assert "&lt;/title&gt;&lt;/text&gt;&lt;script&gt;" in html
    assert "&lt;model&gt;" in html  # a model name in the LLM table


def test_the_page_is_self_contained(whole):
    html = render_report(whole)
    assert not re.search(r"""(src|href|xlink:href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert not re.search(r"https?://", html)
    for tag in ("<script", "<link", "<iframe", "<object", "<embed", "@import", "url("):
        assert tag not in html.lower()
    assert html.count("<svg") >= 8 and "<style>" in html
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_an_empty_folder_gives_a_page_of_notes(tmp_path):
    report = build_report(Warehouse(tmp_path / "data").root)
    html = render_report(report)
    assert report.overview["environments"] == 0 and report.runs == []
    assert "No run is recorded" in html and "No LLM calls were recorded" in html
    assert report.section("diversity").metric("mean_similarity").shown == "n/a"


# --- the command --------------------------------------------------------------------------------


def envmill(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from envmill.flows.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=scaled(120))


def test_cli_writes_the_page_of_one_run(root, tmp_path):
    target = tmp_path / "report.html"
    done = envmill("report", "--out", str(root), "--run", LLM_RUN, "--to", str(target))
    assert done.returncode == 0, done.stderr
    html = target.read_text(encoding="utf-8")
    assert f"Run <b>{LLM_RUN}</b> only" in html and "run-a" not in html
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left


def test_cli_refuses_an_unknown_run_in_one_line(root, tmp_path):
    target = tmp_path / "report.html"
    done = envmill("report", "--out", str(root), "--run", "run-zz", "--to", str(target))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "run-zz" in lines[0] and "envmill sql" in lines[0]
    assert "FROM runs" in lines[0] and not target.exists()


# --- parts --------------------------------------------------------------------------------------


def test_distinct_n_reads_a_fixed_token_budget():
    result = distinct_n(["a b a b", "a b c"], budget=6)
    assert result.tokens == 6 and not result.below_budget  # "c" is past the budget
    assert result.ratios[1] == pytest.approx(2 / 6)
    assert result.ratios[2] == pytest.approx(2 / 4)  # (a b) (b a) (a b) | (a b): no cross bigram
    assert tokenize("Hi, Bob!") == ["hi", ",", "bob", "!"]


def test_pairwise_similarity_and_near_duplicates():
    result = pairwise_similarity(["renew my card now", "renew my card now", "close the account"])
    assert result.pairs == 3 and result.mean == pytest.approx(1 / 3)
    assert result.near_duplicate_share == pytest.approx(2 / 3)


def test_histograms_fill_gaps_and_bin_wide_ranges():
    rows = histogram_rows({"a": {1: 2, 3: 1}}, ("a",))
    assert [(r.label, r.values) for r in rows] == [("1", (2.0,)), ("2", (0.0,)), ("3", (1.0,))]
    wide = histogram_rows({"a": {0: 1, 99: 1}}, ("a",))
    assert len(wide) <= 25 and sum(r.values[0] for r in wide) == 2


def test_layout_scales_bars_to_the_axis():
    chart = BarChart("t", ("x", "y"), (BarRow("r1", (3.0, 1.0)), BarRow("r2", (8.0, 0.0))))
    plot = layout(chart)
    widths = [b.width for b in plot.bars]
    assert widths[0] * 8 == pytest.approx(widths[2] * 3) and widths[3] == 0
    assert plot.ticks[0].text == "0" and plot.ticks[-1].text == "8"


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@pytest.mark.skipif(not any(map(shutil.which, BROWSERS)), reason="no headless browser here")
def test_a_browser_renders_the_page(whole, tmp_path):
    browser = next(filter(None, map(shutil.which, BROWSERS)))
    page, png = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(render_report(whole), encoding="utf-8")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--screenshot={png}", "--window-size=1100,4000", page.as_uri()]  # fmt: skip
    subprocess.run(command, capture_output=True, timeout=scaled(90), check=True)
    assert png.stat().st_size > 10_000


def test_long_lists_are_cut_and_say_so():
    from envmill.warehouse.report.model import MAX_TABLE_ROWS, Table
    from envmill.warehouse.report.sections import TOP_ROWS, _domain_means, _examples

    table = Table.of([{"n": i} for i in range(MAX_TABLE_ROWS + 5)], ("n",), "Rows")
    assert len(table.rows) == MAX_TABLE_ROWS and f"of {MAX_TABLE_ROWS + 5} rows" in table.caption
    domains = [{"domain": f"d{i}", "environments": 1 + (i == TOP_ROWS), "avg_query": float(i),
                "avg_state_change": 1.0} for i in range(TOP_ROWS + 2)]  # fmt: skip
    rows = _domain_means(domains)
    assert len(rows) == TOP_ROWS + 1 and rows[-1].label == "other (2 domains)"
    assert rows[-1].values == (round((2 * TOP_ROWS + TOP_ROWS + 1) / 3, 2), 1.0)  # weighted
    shown = _examples((str(i), "x " * 500) for i in range(TOP_ROWS + 3))
    assert shown[-1] == ("…", "3 more not shown") and len(shown[0][1]) <= 400
