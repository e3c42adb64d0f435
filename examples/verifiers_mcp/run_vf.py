"""Run the ``envmill_vf`` verifiers environment with verifiers' own runner (``vf-eval``) against
envmill's offline test model, which plays the scripts ``export_scenarios.py`` wrote; then print
each rollout's reward from the run's ``traces.jsonl``. Runs in verifiers' venv:

    python run_vf.py --scenarios scenarios.json --envmill /path/.venv/bin/envmill --data DATA \
        --base-url http://127.0.0.1:PORT/v1 --script reference|wrong [--rollouts N] [--concurrent C]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent


def upload_scripts(base_url: str, scenarios: list[dict], which: str) -> None:
    """The offline model answers a conversation opening with a scenario's opening message by
    that scenario's ``which`` script (``reference`` or ``wrong``)."""
    body: dict = {}
    for row in scenarios:
        body.update(row["scripts"][which])
    root = base_url.rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(
        f"{root}/_scripts", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    urllib.request.urlopen(request, timeout=30).close()


def streaming_adapter(base_url: str) -> str:
    """A loopback front for the offline model, which answers JSON only: verifiers' chat harness
    always asks for a stream (``stream: true``), so a streamed request is sent on unstreamed and
    its completion re-emitted as server-sent events (one chunk, then usage, then ``[DONE]``).
    Returns the adapter's ``.../v1``."""
    upstream = base_url.rstrip("/")

    class Adapter(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            streamed = bool(body.pop("stream", False))
            body.pop("stream_options", None)
            path = self.path.removeprefix("/v1")
            headers = {"Content-Type": "application/json"}
            headers |= {k: v for k, v in self.headers.items() if k.lower().startswith("x-envmill")}
            request = urllib.request.Request(upstream + path, json.dumps(body).encode(), headers)
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    status, answer = response.status, json.loads(response.read())
            except urllib.error.HTTPError as error:
                status, answer = error.code, json.loads(error.read() or b"{}")
            if not streamed or status != 200:
                self._send(status, "application/json", json.dumps(answer).encode())
                return
            choice = answer["choices"][0]
            message = choice["message"]
            delta = {"role": "assistant", "content": message.get("content")}
            if message.get("tool_calls"):
                delta["tool_calls"] = [
                    {"index": i, **call} for i, call in enumerate(message["tool_calls"])
                ]
            head = {k: answer.get(k) for k in ("id", "created", "model")}
            chunks = [
                {
                    **head,
                    "object": "chat.completion.chunk",
                    "choices": [
                        {"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}
                    ],
                },
                {
                    **head,
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": answer.get("usage"),
                },
            ]
            events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(200, "text/event-stream", events.encode())

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Adapter)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def config_toml(args: argparse.Namespace, out: Path, model_url: str) -> str:
    q = json.dumps  # a TOML basic string is a JSON string
    return f"""
model = "offline"
num_rollouts = {args.rollouts}
max_concurrent = {args.concurrent}
push = false
rich = "None"
output_dir = {q(str(out))}

[run]
name = {q(f"envmill-{args.script}")}

[client]
base_url = {q(model_url)}
api_key_var = "ENVMILL_OFFLINE_KEY"
headers = {{ "X-Envmill-Stage" = "policy" }}

[env.taskset]
id = "envmill_vf"
scenarios = {q(str(Path(args.scenarios).resolve()))}

[env.taskset.task]
envmill = {q(args.envmill)}
data = {q(args.data)}

[env.agent]
runtime = {{ type = "subprocess" }}
max_turns = 30

[env.agent.harness]
id = "null"
"""


def main(args: argparse.Namespace) -> int:
    scenarios = json.loads(Path(args.scenarios).read_text(encoding="utf-8"))
    upload_scripts(args.base_url, scenarios, args.script)
    model_url = streaming_adapter(args.base_url)
    out = Path(args.output).resolve()
    run_dir = out / f"envmill-{args.script}"
    shutil.rmtree(run_dir, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    config = out / f"envmill-{args.script}.toml"
    config.write_text(config_toml(args, out, model_url), encoding="utf-8")
    env = dict(os.environ, ENVMILL_OFFLINE_KEY="none")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    vf_eval = Path(sys.executable).parent / "vf-eval"
    command = [str(vf_eval), "@", str(config), "--run.dir", f"envmill-{args.script}"]
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, env=env, timeout=args.timeout)
    traces = sorted(out.glob(f"envmill-{args.script}*/traces.jsonl"))
    if not traces:
        print(f"no traces.jsonl under {out} (vf-eval exit {done.returncode})")
        return done.returncode or 1
    for line in traces[-1].read_text(encoding="utf-8").splitlines():
        episode = json.loads(line)
        for trace in episode.get("traces", [episode]):
            data = trace["task"]["data"]
            errors = [e.get("type") for e in trace.get("errors") or []]
            rewards = trace.get("rewards") or {}
            reward = sum(
                r["score"] * r["weight"] for r in rewards.values() if r["score"] is not None
            )
            metrics = " ".join(f"{k}={v:g}" for k, v in (trace.get("metrics") or {}).items())
            print(
                f"{args.script:9} {data.get('scenario_id')} reward={reward:g} {metrics} "
                f"stop={trace.get('stop_condition')} errors={errors}"
            )
    return done.returncode


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios", required=True)
    parser.add_argument("--envmill", required=True, help="envmill's venv: .venv/bin/envmill")
    parser.add_argument("--data", required=True, help="envmill's data folder")
    parser.add_argument("--base-url", required=True, help="the offline model's .../v1")
    parser.add_argument("--script", choices=("reference", "wrong"), default="reference")
    parser.add_argument("--rollouts", type=int, default=1)
    parser.add_argument("--concurrent", type=int, default=2)
    parser.add_argument("--output", default="/tmp/envmill-vf-outputs")
    parser.add_argument("--timeout", type=float, default=900)
    sys.exit(main(parser.parse_args()))
