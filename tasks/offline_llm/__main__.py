"""Serve the test endpoint in this process: the first line printed is its base URL.

Usage: python -m envmill.tasks.offline_llm [--port 0] [--latency 0.2 | --latency 0.1,0.3]
       [--seed 0] [--refuse-response-format] [--scripts scripts.json] [--style model]
--scripts: rollout scripts to start with, a JSON object {key: [reply, ...]} (see scripts.py).
--style: who writes the answers, procedural (the default) or model (see model_style).
Stops on SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from envmill.tasks.offline_llm import start_server
from envmill.tasks.offline_llm.checks import STYLES


def _latency(text: str) -> float | tuple[float, float]:
    parts = [float(part) for part in text.split(",")]
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2 and parts[0] <= parts[1]:
        return (parts[0], parts[1])
    raise argparse.ArgumentTypeError("latency: SECONDS or LOW,HIGH")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m envmill.tasks.offline_llm")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=_latency, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--refuse-response-format", action="store_true")
    parser.add_argument("--scripts", type=argparse.FileType(encoding="utf-8"), default=None)
    parser.add_argument("--style", choices=STYLES, default="procedural")
    args = parser.parse_args(argv)
    scripts = json.load(args.scripts) if args.scripts else None
    server = start_server(
        args.host,
        args.port,
        latency=args.latency,
        seed=args.seed,
        refuse_response_format=args.refuse_response_format,
        scripts=scripts,
        style=args.style,
    )
    print(server.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.closing.set()
    server.shutdown()
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
