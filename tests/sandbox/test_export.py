"""``envmill export`` (issue 14, item 3): selection, the three formats read back as trainers
read them, determinism, the split by environment, the folder policy and the command's errors.

One warehouse serves the module: two procedural environments with their real reference
trajectories (a conversational one among them), hand-built rollouts (parallel calls, text beside
calls, a failed episode, a user stop, malformed arguments, verdicts), ten cloned environments of
another backend for the split, and a trajectory whose environment is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from envmill.schemas.export import ExportSelection
from envmill.schemas.ids import content_id
from envmill.schemas.rollout import VerdictRecord
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.export import (
    MANIFEST,
    Unexportable,
    build_export,
    read_conversation,
    split_of,
)
from envmill.tasks.export.llamafactory import validate_dataset_info, validate_llamafactory
from envmill.tasks.export.openai import validate_openai
from envmill.tasks.export.parquet import render_parquet, validate_parquet
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.warehouse.export_rows import select_for_export
from envmill.warehouse.rows import (
    environment_row,
    scenario_row,
    trajectory_row,
    verdict_row,
    write_batch,
)
from envmill.warehouse.store import Warehouse
from tests.cli import envmill
from tests.conftest import TEST_LIMITS, call_main

CLONES = 10
FILES = {
    "openai": ["train.jsonl"],
    "llamafactory": ["train.json", "dataset_info.json"],
    "parquet": ["train.parquet"],
}


@dataclass
class Corpus:
    root: Path
    references: list[TrajectoryRecord] = field(default_factory=list)
    rollouts: dict[str, TrajectoryRecord] = field(default_factory=dict)
    clones: list[TrajectoryRecord] = field(default_factory=list)
    runs: dict[str, str] = field(default_factory=dict)  # trajectory_id -> run_id

    def ids(self, *names: str) -> set[str]:
        return {self.rollouts[name].trajectory_id for name in names}

    @property
    def exportable(self) -> set[str]:
        """Every trajectory an export with no filter and --include-dropped writes."""
        rollouts = self.ids("parallel", "text_and_calls", "failed", "user_stop", "dropped", "kept")
        return {t.trajectory_id for t in self.references + self.clones} | rollouts


def _trajectory(
    base: TrajectoryRecord, policy: str, body: list[dict], **fields
) -> TrajectoryRecord:
    """A rollout-like trajectory of ``base``'s scenario: its system and opening, then ``body``."""
    messages = [*base.messages[:2], *body]
    scenario_id = fields.pop("scenario_id", base.scenario_id)
    return TrajectoryRecord(
        trajectory_id=content_id(
            {"scenario_id": scenario_id, "policy": policy, "messages": messages}
        ),
        scenario_id=scenario_id,
        env_id=fields.pop("env_id", base.env_id),
        policy=policy,
        messages=messages,
        check_results=[fields.get("success", True)],
        reward=fields.pop("reward", 1.0),
        success=fields.pop("success", True),
        steps=sum(len(m.get("tool_calls") or []) for m in body),
        termination=fields.pop("termination", "finished"),
    )


def _rollouts(base: TrajectoryRecord) -> dict[str, TrajectoryRecord]:
    """One of each shape a rollout can have, built on a real reference's first call."""
    first = next(m for m in base.messages if m.get("tool_calls"))["tool_calls"][0]["function"]
    result = next(m for m in base.messages if m["role"] == "tool")["content"]

    def call(call_id: str, arguments: str | None = None) -> dict:
        args = first["arguments"] if arguments is None else arguments
        return {"id": call_id, "type": "function", "function": {**first, "arguments": args}}

    def tool(call_id: str) -> dict:
        return {"role": "tool", "tool_call_id": call_id, "content": result}

    def said(text: str | None, *calls: dict) -> dict:
        return {
            "role": "assistant",
            "content": text,
            **({"tool_calls": list(calls)} if calls else {}),
        }

    user = {"role": "user", "content": "No, thanks. ###STOP###"}
    shapes = {
        "parallel": ("model-a", [said(None, call("p1"), call("p2")), tool("p2"), tool("p1"),
                                 said("All done.")], {}),
        "text_and_calls": ("model-a", [said("Let me look.", call("t1")), tool("t1"),
                                       said("Here it is.")], {"reward": 0.5, "success": False}),
        "failed": ("model-b", [said(None, call("f1")), tool("f1")],
                   {"reward": 0.0, "success": False, "termination": "max_steps"}),
        "user_stop": ("model-b", [{"role": "user", "content": "And quickly, one more thing."},
                                  said(None, call("u1")), tool("u1"), said("Anything else?"), user],
                      {"termination": "user_stop"}),
        "bad_arguments": ("model-a", [said(None, call("b1", "{not json")), tool("b1"),
                                      said("Done.")], {}),
        "dropped": ("model-c", [said(None, call("d1")), tool("d1"), said("Dropped.")], {}),
        "kept": ("model-b", [said(None, call("k1")), tool("k1"), said("Kept.")], {}),
        "orphan": ("model-a", [said(None, call("o1")), tool("o1"), said("Lost.")],
                   {"env_id": "f" * 16, "scenario_id": "e" * 16}),
    }  # fmt: skip
    return {
        name: _trajectory(base, p, body, **fields) for name, (p, body, fields) in shapes.items()
    }


def _clone_rows(output, index: int) -> tuple[dict, dict, TrajectoryRecord]:
    """An environment of the llm backend copied from a procedural one, with one scenario and
    its reference trajectory."""
    env, scenario = output.environments[0], output.scenarios[0]
    env_id = content_id({"clone": index})
    env_copy = env.model_copy(update={"env_id": env_id, "backend": "llm", "domain": "clones"})
    scenario_copy = scenario.model_copy(
        update={"scenario_id": content_id({"clone": index, "s": 0}), "env_id": env_id}
    )
    base = next(t for t in output.trajectories if t.scenario_id == scenario.scenario_id)
    trajectory = _trajectory(
        base, "reference", base.messages[2:], env_id=env_id, scenario_id=scenario_copy.scenario_id
    )
    rows = environment_row(env_copy, "run-clone"), scenario_row(scenario_copy, "run-clone")
    return *rows, trajectory


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, sandbox) -> Corpus:
    root = tmp_path_factory.mktemp("export") / "data"
    settings = EnvmillSettings(
        envs=2, scenarios_per_env=4, batch_size=100, seed=12, sandbox=TEST_LIMITS,
        domains=["library", "banking"],
    )  # fmt: skip
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    warehouse = Warehouse(root)
    assert write_batch(warehouse, output, "run-ref")
    found = Corpus(root, references=list(output.trajectories))
    found.rollouts = _rollouts(output.trajectories[0])
    clones = [_clone_rows(output, index) for index in range(CLONES)]
    found.clones = [trajectory for _, _, trajectory in clones]
    warehouse.write("environments", [env for env, _, _ in clones], key="clones")
    warehouse.write("scenarios", [scenario for _, scenario, _ in clones], key="clones")
    runs = {"model-a": "run-a", "model-b": "run-b", "model-c": "run-b", "reference": "run-clone"}
    rows = [
        trajectory_row(t, runs[t.policy], backend="procedural")
        for t in [*found.rollouts.values(), *found.clones]
    ]
    warehouse.write("trajectories", rows, key="rollouts")
    found.runs = {row["trajectory_id"]: row["run_id"] for row in rows}
    found.runs |= {t.trajectory_id: "run-ref" for t in found.references}
    verdicts = [
        VerdictRecord(trajectory_id=found.rollouts[name].trajectory_id, filter=f, kept=kept,
                      reason="test")
        for name, f, kept in [("dropped", "reward", False), ("dropped", "length", True),
                              ("kept", "length", True)]
    ]  # fmt: skip
    warehouse.write("verdicts", [verdict_row(v, "run-filter") for v in verdicts], key="verdicts")
    assert {t.mode for t in output.scenarios} >= {"conversational", "non_conversational"}
    return found


@pytest.fixture
def run(monkeypatch, capsys, tmp_path):
    """``envmill ...`` through ``main()`` in this process: (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENVMILL_HOME", raising=False)

    def invoke(*args: str) -> subprocess.CompletedProcess[str]:
        return call_main(monkeypatch, capsys, args)

    return invoke


def export(run, corpus: Corpus, to: Path, fmt: str, *args: str) -> subprocess.CompletedProcess:
    done = run("export", "--format", fmt, "--to", str(to), "--out", str(corpus.root), *args)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1, done.stdout
    return done


def openai_lines(folder: Path, name: str = "train.jsonl") -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def exported_ids(run, corpus: Corpus, tmp_path: Path, *args: str) -> set[str]:
    """The trajectory ids a Parquet export with ``args`` writes."""
    folder = tmp_path / f"ids-{content_id(list(args))}"
    export(run, corpus, folder, "parquet", *args)
    return set(pq.read_table(folder / "train.parquet").column("trajectory_id").to_pylist())


# --- the formats, read back --------------------------------------------------------------


def test_openai_jsonl_follows_the_fine_tuning_format(run, corpus, tmp_path):
    export(run, corpus, tmp_path / "o", "openai")
    data = (tmp_path / "o" / "train.jsonl").read_bytes()
    assert validate_openai(data) == []
    lines = openai_lines(tmp_path / "o")
    assert all(list(line) == ["messages", "tools", "parallel_tool_calls"] for line in lines)
    by_first_call = {_first_call_id(line): line for line in lines}
    assert by_first_call["p1"]["parallel_tool_calls"] is True
    for line in lines:  # true exactly where a message makes several calls
        several = any(len(m.get("tool_calls") or []) > 1 for m in line["messages"])
        assert line["parallel_tool_calls"] is several
    calls = [m for line in lines for m in line["messages"] if m.get("tool_calls")]
    assert all("content" not in m for m in calls if not _text_beside(m))
    assert _text_beside(next(m for m in calls if m["tool_calls"][0]["id"] == "t1"))
    call = calls[0]["tool_calls"][0]
    assert list(call) == ["id", "type", "function"] and isinstance(
        call["function"]["arguments"], str
    )
    assert isinstance(json.loads(call["function"]["arguments"]), dict)
    tool = lines[0]["tools"][0]
    assert list(tool) == ["type", "function"]
    assert list(tool["function"]) == ["name", "description", "parameters"]


def _first_call_id(line: dict) -> str | None:
    calls = [m["tool_calls"][0]["id"] for m in line["messages"] if m.get("tool_calls")]
    return calls[0] if calls else None


def _text_beside(message: dict) -> bool:
    return bool(message.get("content"))


def test_llamafactory_sharegpt_alternates_and_groups_parallel_results(run, corpus, tmp_path):
    done = export(run, corpus, tmp_path / "l", "llamafactory")
    folder = tmp_path / "l"
    data = (folder / "train.json").read_bytes()
    assert validate_llamafactory(data) == []
    info = json.loads((folder / "dataset_info.json").read_text())
    assert info == {
        "envmill_train": {
            "file_name": "train.json",
            "formatting": "sharegpt",
            "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
        }
    }
    assert validate_dataset_info(info, {"train.json"}) == []
    examples = json.loads(data)
    assert all(list(e) == ["conversations", "system", "tools"] for e in examples)
    assert all(e["system"] and isinstance(json.loads(e["tools"]), list) for e in examples)
    assert "name" in json.loads(examples[0]["tools"])[0]  # bare function schemas
    parallel = next(e for e in examples if _value_of(e, "All done."))
    sides = [turn["from"] for turn in parallel["conversations"]]
    assert sides == ["human", "function_call", "observation", "gpt"]
    calls = json.loads(parallel["conversations"][1]["value"])
    assert [set(c) for c in calls] == [{"name", "arguments"}] * 2
    assert len(json.loads(parallel["conversations"][2]["value"])) == 2
    stop = next(e for e in examples if _value_of(e, "Anything else?"))
    assert stop["conversations"][0]["value"].endswith("\n\nAnd quickly, one more thing.")
    assert stop["conversations"][-1]["from"] == "gpt"  # the closing user message is cut
    failed = next(e for e in examples if e["conversations"][-1]["from"] == "function_call")
    assert len(failed["conversations"]) == 2  # its last tool result is cut
    dropped = re.search(r"(\d+) assistant texts beside tool calls dropped", done.stdout)
    beside = sum(  # the hand-made one, and the references' short notes before their calls
        bool(turn.get("tool_calls") and (turn.get("content") or "").strip())
        for trajectory in [*corpus.references, *corpus.rollouts.values(), *corpus.clones]
        for turn in trajectory.messages
    )
    assert dropped and 1 <= int(dropped.group(1)) <= beside
    assert "1 turns joined" in done.stdout and "2 trailing turns cut" in done.stdout


def _value_of(example: dict, text: str) -> bool:
    return any(turn["value"] == text for turn in example["conversations"])


def test_parquet_loads_with_pyarrow_and_datasets_for_trl(run, corpus, tmp_path):
    from datasets import Json, load_dataset

    export(run, corpus, tmp_path / "p", "parquet")
    path = tmp_path / "p" / "train.parquet"
    assert validate_parquet(path.read_bytes()) == []
    table = pq.read_table(path)
    assert set(pq.read_metadata(path).metadata) == {b"ARROW:schema"}  # no pandas metadata
    assert table.num_rows == len(corpus.exportable) - 1  # the verdict-dropped one
    dataset = load_dataset(
        "parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert isinstance(dataset.features["tools"], Json)
    row = next(
        r for r in dataset if r["trajectory_id"] == corpus.rollouts["parallel"].trajectory_id
    )
    assert row["policy"] == "model-a" and row["reward"] == 1.0 and row["success"] is True
    assert {row["domain"], row["backend"], row["mode"]} <= {"library", "banking", "procedural",
                                                            "non_conversational",
                                                            "conversational"}  # fmt: skip
    tools = row["tools"]
    assert isinstance(tools, list) and tools[0]["type"] == "function"
    assert all(None not in t["function"]["parameters"]["properties"].values() for t in tools)
    call = next(m for m in row["messages"] if m["tool_calls"])["tool_calls"][0]
    assert isinstance(call["function"]["arguments"], dict)  # what chat templates expect
    tool_message = next(m for m in row["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] in {"p1", "p2"}


# --- determinism, split --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["openai", "llamafactory", "parquet"])
def test_same_corpus_same_bytes(run, corpus, tmp_path, fmt):
    copy = tmp_path / "copy"
    shutil.copytree(corpus.root, copy)
    args = ("--validation", "0.3", "--seed", "5")
    export(run, corpus, tmp_path / "a", fmt, *args)
    export(run, corpus, tmp_path / "b", fmt, *args)
    done = run("export", "--format", fmt, "--to", str(tmp_path / "c"), "--out", str(copy), *args)
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == sorted([*FILES[fmt], _validation_of(FILES[fmt][0]), MANIFEST])
    for name in files:
        first = (tmp_path / "a" / name).read_bytes()
        assert first == (tmp_path / "b" / name).read_bytes() == (tmp_path / "c" / name).read_bytes()


def _validation_of(train: str) -> str:
    return train.replace("train", "validation")


def test_split_keeps_each_environment_in_one_split(run, corpus, tmp_path):
    def envs(folder: Path, split: str) -> set[str]:
        return set(pq.read_table(folder / f"{split}.parquet").column("env_id").to_pylist())

    export(run, corpus, tmp_path / "s1", "parquet", "--validation", "0.3", "--seed", "2")
    export(run, corpus, tmp_path / "s2", "parquet", "--validation", "0.3", "--seed", "2")
    train, validation = envs(tmp_path / "s1", "train"), envs(tmp_path / "s1", "validation")
    assert train and validation and not train & validation
    assert (envs(tmp_path / "s2", "train"), envs(tmp_path / "s2", "validation")) == (
        train,
        validation,
    )
    assert validation == {e for e in train | validation if split_of(e, 0.3, 2) == "validation"}
    manifest = json.loads((tmp_path / "s1" / MANIFEST).read_text())
    assert manifest["environments"] == {"train": len(train), "validation": len(validation)}


def test_an_empty_split_gets_no_file_and_a_warning(run, corpus, tmp_path):
    from datasets import load_dataset

    envs = {t.env_id for t in corpus.references + corpus.clones}
    assert not any(split_of(env_id, 0.001, 0) == "validation" for env_id in envs)
    done = export(run, corpus, tmp_path / "e", "parquet", "--validation", "0.001")
    assert "validation empty" in done.stdout
    assert "warning: validation is empty, so no validation file was written" in done.stderr
    assert not (tmp_path / "e" / "validation.parquet").exists()
    files = {"train": str(tmp_path / "e" / "train.parquet")}
    loaded = load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf"))
    assert loaded["train"].num_rows == len(corpus.exportable) - 1


def test_split_share_is_about_the_requested_one_and_the_seed_moves_it():
    ids = [content_id({"env": index}) for index in range(4000)]
    for share in (0.1, 0.25):
        held = [e for e in ids if split_of(e, share, seed=3) == "validation"]
        assert abs(len(held) / len(ids) - share) < 0.03
    moved = sum(split_of(e, 0.25, 3) != split_of(e, 0.25, 4) for e in ids)
    assert moved > 500
    assert {split_of(e, None) for e in ids} == {"train"}


# --- selection --------------------------------------------------------------------------


def test_each_filter_narrows_the_selection(run, corpus, tmp_path):
    everything = exported_ids(run, corpus, tmp_path, "--include-dropped")
    assert everything == corpus.exportable
    rollouts = corpus.rollouts
    assert exported_ids(run, corpus, tmp_path, "--policy", "model-b") == corpus.ids(
        "failed", "user_stop", "kept"
    )
    assert exported_ids(run, corpus, tmp_path, "--run", "run-a") == corpus.ids(
        "parallel", "text_and_calls"
    )
    low = exported_ids(run, corpus, tmp_path, "--min-reward", "0.6")
    assert low == {
        i for i in everything if i not in corpus.ids("failed", "text_and_calls", "dropped")
    }
    assert rollouts["text_and_calls"].trajectory_id in exported_ids(
        run, corpus, tmp_path, "--min-reward", "0.5"
    )
    clones = {t.trajectory_id for t in corpus.clones}
    assert exported_ids(run, corpus, tmp_path, "--backend", "llm") == clones
    assert exported_ids(run, corpus, tmp_path, "--domain", "clones") == clones
    library = exported_ids(run, corpus, tmp_path, "--domain", "library", "--policy", "reference")
    assert library and library < {t.trajectory_id for t in corpus.references}


def test_reference_trajectories_export_like_rollouts(run, corpus, tmp_path):
    references = {t.trajectory_id for t in corpus.references + corpus.clones}
    assert exported_ids(run, corpus, tmp_path, "--policy", "reference") == references
    export(
        run, corpus, tmp_path / "r", "openai", "--policy", "reference", "--backend", "procedural"
    )
    lines = openai_lines(tmp_path / "r")
    assert len(lines) == len(corpus.references)
    assert validate_openai((tmp_path / "r" / "train.jsonl").read_bytes()) == []


def test_verdicts_leave_out_what_they_dropped_unless_asked(run, corpus, tmp_path):
    dropped, kept = corpus.ids("dropped"), corpus.ids("kept")
    default = exported_ids(run, corpus, tmp_path)
    assert not dropped & default and kept <= default
    assert dropped <= exported_ids(run, corpus, tmp_path, "--include-dropped")
    done = export(run, corpus, tmp_path / "v", "openai")
    assert "left out 1 by verdicts (reward 1)" in done.stdout
    assert "1 unexportable (bad_arguments 1)" in done.stdout
    assert "1 without environment or scenario row" in done.stdout


def test_a_benchmarks_scenarios_are_held_out_unless_their_source_is_asked_for(
    run, corpus, tmp_path
):
    """An imported benchmark's trajectories (``source`` bfcl, split eval) are test data: an
    export leaves them out, says so, and takes them only with ``--include-source``."""
    folder = tmp_path / "with-benchmark"
    shutil.copytree(corpus.root, folder)
    warehouse = Warehouse(folder)
    scenario = warehouse_rows(folder, "scenarios")[0]
    held = {**scenario, "scenario_id": content_id({"bfcl": 0}), "source": "bfcl", "split": "eval"}
    held["source_id"] = "multi_turn_base_0"
    warehouse.write("scenarios", [held], key="benchmark")
    base = corpus.references[0]
    copy = _trajectory(base, "reference", base.messages[2:], scenario_id=held["scenario_id"])
    warehouse.write("trajectories", [trajectory_row(copy, "run-bfcl")], key="benchmark")
    taken = ExportSelection(include_dropped=True)
    default = {r.trajectory_id for r in select_for_export(folder, taken).records}
    assert copy.trajectory_id not in default and corpus.exportable <= default
    asked = ExportSelection(include_dropped=True, include_sources=("bfcl",))
    assert copy.trajectory_id in {r.trajectory_id for r in select_for_export(folder, asked).records}
    done = run("export", "--format", "openai", "--to", str(tmp_path / "o"), "--out", str(folder))
    assert "1 of held-out benchmark scenarios (bfcl 1; --include-source exports them)" in (
        done.stdout
    ), done.stdout
    only = run(
        "export", "--format", "openai", "--to", str(tmp_path / "p"), "--out", str(folder),
        "--run", "run-bfcl",
    )  # fmt: skip
    assert only.returncode == 1 and "--include-source exports them" in only.stderr, only.stderr


def warehouse_rows(root: Path, table: str) -> list[dict]:
    from envmill.warehouse.views import query

    return query(root, f"SELECT * EXCLUDE (created_at) FROM {table} ORDER BY 1").to_pylist()


def test_a_folder_without_verdicts_leaves_nothing_out(corpus, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(corpus.root, bare)
    shutil.rmtree(bare / "verdicts")
    (bare / "_commits" / "verdicts-verdicts.json").unlink()
    selected = select_for_export(bare, ExportSelection())
    assert selected.dropped == 0
    assert corpus.ids("dropped") <= {r.trajectory_id for r in selected.records}


# --- the folder ---------------------------------------------------------------------------


def test_the_folder_keeps_what_the_user_has(run, corpus, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / "dataset_info.json").write_text(json.dumps({"other": {"file_name": "o.json"}}))
    (folder / "train.json").write_text("[]\n")
    done = run("export", "--format", "llamafactory", "--to", str(folder), "--out", str(corpus.root))
    assert done.returncode == 2 and "train.json exists" in done.stderr
    assert (folder / "train.json").read_text() == "[]\n" and not (folder / MANIFEST).exists()
    export(run, corpus, folder, "llamafactory", "--force")
    info = json.loads((folder / "dataset_info.json").read_text())
    assert set(info) == {"other", "envmill_train"} and (folder / "notes.txt").read_text() == "mine"
    export(run, corpus, folder, "llamafactory", "--validation", "0.3")  # its own files: no --force
    assert (folder / "validation.json").exists() and "envmill_validation" in json.loads(
        (folder / "dataset_info.json").read_text()
    )
    done = export(run, corpus, folder, "openai")
    assert "removed the earlier export's train.json, validation.json" in done.stdout
    assert set(json.loads((folder / "dataset_info.json").read_text())) == {"other"}
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["notes.txt", "dataset_info.json", "train.jsonl", MANIFEST]
    )
    (folder / "train.jsonl").write_text("edited\n")
    done = run("export", "--format", "openai", "--to", str(folder), "--out", str(corpus.root))
    assert done.returncode == 2 and (folder / "train.jsonl").read_text() == "edited\n"


def test_an_export_that_died_midway_is_still_recognized(run, corpus, tmp_path, monkeypatch):
    from envmill.tasks.export import folder as folder_module

    folder = tmp_path / "died"
    export(run, corpus, folder, "openai")
    real = folder_module.write_atomically
    calls = []

    def dying(path: Path, data: bytes) -> None:
        calls.append(path.name)
        if path.name == "train.jsonl":  # after the manifest, before any data file
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(folder_module, "write_atomically", dying)
    done = run("export", "--format", "openai", "--to", str(folder), "--out", str(corpus.root),
               "--validation", "0.3")  # fmt: skip
    assert done.returncode == 130 and calls[:2] == [MANIFEST, "train.jsonl"]
    monkeypatch.setattr(folder_module, "write_atomically", real)
    export(run, corpus, folder, "openai", "--validation", "0.3")


# --- the validators and the command's errors --------------------------------------------


def test_the_validators_catch_broken_files(run, corpus, tmp_path):
    export(run, corpus, tmp_path / "o", "openai")
    line = openai_lines(tmp_path / "o")[0]
    call_message = next(m for m in line["messages"] if m.get("tool_calls"))
    breaks = {
        "no tool message": lambda x: x["messages"].remove(
            next(m for m in x["messages"] if m["role"] == "tool")
        ),
        "arguments": lambda x: _first_call(x)["function"].update(arguments="[1, 2]"),
        "parallel flag": lambda x: x.update(parallel_tool_calls=not x["parallel_tool_calls"]),
        "null content": lambda x: next(m for m in x["messages"] if m.get("tool_calls")).update(
            content=None
        ),
        "tools": lambda x: x["tools"][0]["function"].pop("parameters"),
        "role": lambda x: x["messages"][1].update(role="human"),
    }
    assert call_message
    for name, breaking in breaks.items():
        broken = json.loads(json.dumps(line))
        breaking(broken)
        assert validate_openai((json.dumps(broken) + "\n").encode()), name
    export(run, corpus, tmp_path / "l", "llamafactory")
    example = json.loads((tmp_path / "l" / "train.json").read_text())[0]
    swapped = json.loads(json.dumps(example))
    swapped["conversations"][0]["from"] = "gpt"
    assert validate_llamafactory(json.dumps([swapped]).encode())
    odd = json.loads(json.dumps(example))
    odd["conversations"].append({"from": "human", "value": "more"})
    assert validate_llamafactory(json.dumps([odd]).encode())
    bad_call = json.loads(json.dumps(example))
    bad_call["conversations"][1] = {"from": "function_call", "value": '{"name": "x"}'}
    assert validate_llamafactory(json.dumps([bad_call]).encode())
    assert validate_dataset_info({"envmill_train": {"file_name": "nope.json"}}, {"train.json"})
    assert validate_parquet(b"not parquet")
    export(run, corpus, tmp_path / "p", "parquet")
    row = pq.read_table(tmp_path / "p" / "train.parquet").slice(0, 1).to_pylist()[0]
    row["messages"] = [m for m in row["messages"] if m["role"] != "tool"]
    assert "unanswered_call" in validate_parquet(render_parquet([row]))[0]


def _first_call(line: dict) -> dict:
    return next(m for m in line["messages"] if m.get("tool_calls"))["tool_calls"][0]


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_x",
            "description": "Get x.",
            "parameters": {"type": "object", "properties": {"x_id": {"type": "string"}}},
        },
    }
]
USER = {"role": "user", "content": "Hi"}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "get_x", "arguments": '{"x_id": "1"}'}}
]}  # fmt: skip
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "{}"}
DONE = {"role": "assistant", "content": "Done."}


@pytest.mark.parametrize(
    ("messages", "tools", "code"),
    [
        ([], TOOLS, "no_messages"),
        ([USER, {"role": "human", "content": "x"}, DONE], TOOLS, "unknown_role"),
        ([USER, {"role": "system", "content": "late"}, DONE], TOOLS, "system_not_first"),
        ([USER, CALL, DONE], TOOLS, "unanswered_call"),
        ([USER, CALL], TOOLS, "unanswered_call"),
        ([USER, RESULT, DONE], TOOLS, "unexpected_tool_result"),
        ([USER, CALL, RESULT, RESULT, DONE], TOOLS, "unexpected_tool_result"),
        ([USER, {"role": "assistant", "content": None}], TOOLS, "bad_content"),
        ([USER], TOOLS, "no_assistant_message"),
        ([USER, DONE], [{"type": "function", "function": {"name": "x"}}], "bad_tools"),
        ([USER, DONE], TOOLS + TOOLS, "bad_tools"),
    ],
)
def test_the_structure_rules_name_what_they_refuse(messages, tools, code):
    with pytest.raises(Unexportable) as refused:
        read_conversation(messages, tools)
    assert refused.value.code == code
    assert read_conversation([USER, CALL, RESULT, DONE], TOOLS).parallel_calls is False


def test_an_export_that_fails_its_own_validation_writes_nothing(corpus, monkeypatch):
    import dataclasses

    from envmill.tasks.export import FORMATS, build

    selected = select_for_export(corpus.root, ExportSelection())
    broken = dataclasses.replace(FORMATS["openai"], render=lambda items: b"{}\n")
    monkeypatch.setitem(FORMATS, "openai", broken)
    with pytest.raises(build.ExportInvalid, match="train.jsonl fails its own validation"):
        build_export(selected.records, "openai")


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("--format", "csv"), 2, "'csv' is not one of"),
        (("--format", "openai", "--min-reward", "1.5"), 2, "--min-reward must be between 0 and 1"),
        (("--format", "openai", "--validation", "1"), 2, "--validation must be a share"),
        (("--format", "openai", "--validation", "0"), 2, "--validation must be a share"),
        (("--format", "openai", "--domain", "nowhere"), 1, "no trajectories match (domain no"),
        (("--format", "openai", "--run", "run-b", "--min-reward", "0.9", "--backend", "llm"), 1,
         "no trajectories match (min_reward 0.9, backend llm, run_id run-b)"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_an_exit_code(run, corpus, tmp_path, args, code, said):
    done = run("export", *args, "--to", str(tmp_path / "x"), "--out", str(corpus.root))
    assert done.returncode == code
    assert said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x").exists()


def test_verdicts_that_drop_everything_say_how_to_keep_them(run, corpus, tmp_path):
    done = run("export", "--format", "openai", "--policy", "model-c", "--to", str(tmp_path / "x"),
               "--out", str(corpus.root))  # fmt: skip
    assert done.returncode == 1 and not (tmp_path / "x").exists()
    assert "1 trajectories match (policy model-c), but verdicts drop all of them (reward 1)" in (
        done.stderr
    )
    assert "--include-dropped keeps them" in done.stderr


def test_a_missing_data_folder_and_a_folder_inside_it_are_refused(run, corpus, tmp_path):
    done = run("export", "--format", "openai", "--to", str(tmp_path / "x"), "--out",
               str(tmp_path / "none"))  # fmt: skip
    assert done.returncode == 2 and "is not an envmill data folder" in done.stderr
    done = run("export", "--format", "openai", "--to", str(corpus.root / "exports"), "--out",
               str(corpus.root))  # fmt: skip
    assert done.returncode == 2 and "inside the data folder" in done.stderr
    (tmp_path / "a-file").write_text("mine")
    done = run("export", "--format", "openai", "--to", str(tmp_path / "a-file"), "--out",
               str(corpus.root))  # fmt: skip
    assert done.returncode == 2 and "is not a directory" in done.stderr
    assert (tmp_path / "a-file").read_text() == "mine"


def test_the_command_as_a_user_runs_it(corpus, tmp_path):
    done = envmill("export", "--format", "openai", "--to", str(tmp_path / "e"), "--out",
                   str(corpus.root), "--validation", "0.3", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("exported ") and "train.jsonl, validation.jsonl" in done.stdout
    assert validate_openai((tmp_path / "e" / "validation.jsonl").read_bytes()) == []
