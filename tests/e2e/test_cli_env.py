"""``envmill env check`` / ``env call`` end to end, as a user runs them."""

from __future__ import annotations

import json

import pytest

from envmill.schemas.scenario import GATES
from tests.cli import envmill
from tests.conftest import FIXTURES

CLINIC = FIXTURES / "envs" / "clinic.py"
# The refusals run in-process (the `cli` fixture); the commands that work run as processes.
TIGHT = {"ENVMILL_SANDBOX__WALL_SECONDS": "2", "ENVMILL_SANDBOX__CPU_SECONDS": "1"}


def test_check_prints_schemas(tmp_path):
    done = envmill("env", "check", str(CLINIC), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    names = [t["function"]["name"] for t in report["tools"]]
    assert (
        "book_appointment" in names and report["tool_kinds"]["book_appointment"] == "state_change"
    )
    assert (
        report["state_schema"]["type"] == "object"
        and "current_time" in report["state_schema"]["properties"]
    )
    assert len(report["env_id"]) == 16


def test_call_prints_result_and_diff(tmp_path):
    state = {
        "patients": {
            "P1": {
                "patient_id": "P1",
                "name": "Ann Lee",
                "phone": "555-0100",
                "insurance_plan": "none",
                "date_of_birth": "1990-01-01",
            }
        }
    }
    done = envmill(
        "env",
        "call",
        str(CLINIC),
        "update_patient_phone",
        "--args",
        json.dumps({"patient_id": "P1", "phone": "555-0199"}),
        "--state",
        json.dumps(state),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["result"]["success"] is True
    assert out["diff"] == [
        {"path": ["patients", "P1", "phone"], "op": "change", "old": "555-0100", "new": "555-0199"}
    ]


BAD_MODULES = {
    "policy": "import os\nclass E:\n    def __init__(self):\n        self.x = 0\n",
    "syntax": "class E(:\n",
    "structure": "X = 1\n",
    "load": "class E:\n    def __init__(self):\n        self.x = 1 / 0\n",
}


@pytest.mark.parametrize("stage", BAD_MODULES)
def test_check_rejects_bad_modules_in_one_line(cli, tmp_path, stage):
    module = tmp_path / "bad.py"
    module.write_text(BAD_MODULES[stage])
    done = cli("env", "check", str(module), **TIGHT)
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "rejected at" in done.stderr
    assert json.loads(done.stdout)["ok"] is False


def test_call_that_loops_is_stopped(tmp_path):
    module = tmp_path / "loop.py"
    module.write_text(
        "class E:\n    def __init__(self):\n        self.x = 0\n"
        "    def spin(self) -> dict:\n        while True:\n            self.x += 1\n"
    )
    done = envmill("env", "call", str(module), "spin", cwd=tmp_path)
    assert done.returncode == 1 and "stopped" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["env", "check", "no/such/file.py"], "no such file"),
        (["env", "call", str(CLINIC), "get_patient", "--args", "{bad"], "--args is not valid JSON"),
        (["env", "call", str(CLINIC), "get_patient", "--args", "[1]"], "must be a JSON object"),
        (["env", "call", str(CLINIC), "no_such_tool"], "has no tool"),
        (["env", "call", str(CLINIC), "get_patient", "--state", '{"bogus": 1}'], "bogus"),
        (["env", "frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(cli, args, fragment):
    done = cli(*args, **TIGHT)
    assert done.returncode != 0
    assert fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_certifying_no_scenario_is_an_error_not_a_pass(cli, tmp_path):
    empty = tmp_path / "none.json"
    empty.write_text("[]")
    done = cli("env", "certify", str(CLINIC), str(empty), **TIGHT)
    assert done.returncode == 2 and "holds no scenario" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_bad_setting_is_one_line(cli):
    done = cli("env", "check", str(CLINIC), ENVMILL_SANDBOX__WALL_SECONDS="-1")
    assert done.returncode == 2 and "sandbox.wall_seconds" in done.stderr


def test_certify_command_prints_gates_and_fails_on_rejection(tmp_path, clinic_scenarios):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(clinic_scenarios["certified"][:2]))
    done = envmill("env", "certify", str(CLINIC), str(good), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r["status"] for r in json.loads(done.stdout)] == ["certified", "certified"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(clinic_scenarios["fail"]["not_trivial"]))
    done = envmill("env", "certify", str(CLINIC), str(bad), cwd=tmp_path)
    assert done.returncode == 1
    (report,) = json.loads(done.stdout)
    assert report["rejected_gate"] == "not_trivial" and len(report["gates"]) == len(GATES)


def test_a_malformed_scenario_is_rejected_in_one_line_and_the_others_are_certified(
    cli, tmp_path, clinic_scenarios
):
    """An unknown answer type, a value not of its type, a generated refusal's rule id the
    environment does not have, a record with no state: each is rejected naming the scenario and
    the field; the well-formed one beside them is still certified (issue 31, bad input)."""
    good = clinic_scenarios["certified"][0]
    rule = {"rule_id": "cancel_everything", "condition": "never", "triggers": ["P002"]}
    items = [
        {**good, "expected_answer": {"type": "colour", "value": "red"}},
        {**good, "expected_answer": {"type": "count", "value": "two"}},
        {**good, "backend": "procedural", "refusal": {"rules": [rule]}},
        {"task": "no state"},
        good,
        {**good, "expected_answer": {"type": "count", "value": 10**400}},
        {**good, "expected_answer": {"type": "money", "value": 200, "rivals": ["abc"]}},
        {**good, "expected_answer": {"type": "text", "value": "\ud800 Patel"}},
        {**good, "expected_answer": {"type": "count", "value": 2, "tolerence": 3}},
        ["not", "a", "scenario"],
    ]
    (tmp_path / "mixed.json").write_text(json.dumps(items))
    done = cli("env", "certify", str(CLINIC), "mixed.json", **TIGHT)
    assert done.returncode == 1, done.stderr
    verdicts = json.loads(done.stdout)
    assert [v["status"] for v in verdicts] == ["rejected"] * 4 + ["certified"] + ["rejected"] * 5
    reasons = [v["gates"][0]["reason"] for v in verdicts[:4]]
    assert [v["rejected_gate"] for v in verdicts[:4]] == ["loads"] * 4
    assert reasons[0].startswith("expected_answer.type: Input should be 'count'")
    assert reasons[1] == "expected_answer.value: 'two' is not a number"
    assert reasons[2].startswith("refusal.rules.0.rule_id: 'cancel_everything' is not a rule")
    assert reasons[3] == "initial_state: Field required"
    said = done.stderr.strip().splitlines()
    assert said[:3] == [
        f"envmill: error: mixed.json: scenario {n} rejected: {reasons[n - 1]}" for n in (1, 2, 4)
    ]
    assert [line.split(" rejected: ")[1].split(":")[0] for line in said[3:]] == [
        "expected_answer.value", "expected_answer.rivals.0", "UnicodeEncodeError",
        "expected_answer.tolerence", "TypeError",
    ]  # fmt: skip


def test_check_reports_probes_and_warnings(tmp_path):
    module = tmp_path / "notes.py"
    module.write_text(
        "class Notes:\n"
        "    def __init__(self):\n"
        "        self.notes: dict[str, str] = {}\n"
        "        self.draft: str\n\n"
        "    def add(self, key: str, text: str) -> dict:\n"
        '        """Add a note.\n\n        Args:\n            key: its key.\n'
        '            text: its text.\n        """\n'
        "        self.notes[key] = text\n"
        '        return {"success": True, "message": "added"}\n'
    )
    done = envmill("env", "check", str(module), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["checked"]["probes"]["calls"] >= 1
    (warning,) = report["warnings"]
    assert "draft" in warning and "line 4" in warning
