"""``python -m fakeapi --script steps.json --port-file port.txt``: run the fake in the foreground."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

from fakeapi.server import FakeAnthropic


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def log_writer(path: Path):
    lock = threading.Lock()

    def write(fake: FakeAnthropic) -> None:
        with lock:
            write_atomic(
                path,
                json.dumps(
                    {
                        "requests": list(fake.requests),
                        "errors": list(fake.errors),
                        "remaining": fake.remaining,
                        "too_long": list(fake.too_long),
                    }
                ),
            )

    return write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fakeapi", description="Fake Anthropic Messages API")
    parser.add_argument("--script", type=Path, help="JSON list of steps (see the fakeapi docstring)")
    parser.add_argument("--port-file", type=Path, help="write the listening port here once ready")
    parser.add_argument("--log-file", type=Path, help="rewrite {requests, errors} JSON here after each request")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key", default=None, help="require this key (x-api-key or bearer)")
    parser.add_argument(
        "--max-input-tokens",
        type=int,
        default=None,
        help="answer 400 'prompt is too long' to requests estimated above this many tokens",
    )
    parser.add_argument("--no-count-tokens", action="store_true", help="no /v1/messages/count_tokens endpoint (404)")
    parser.add_argument(
        "--tolerate-system-role",
        action="store_true",
        help="accept role: system messages (Claude Code 2.1.x sends them); comparison runs only",
    )
    args = parser.parse_args(argv)

    try:
        steps = json.loads(args.script.read_text(encoding="utf-8")) if args.script else []
        if isinstance(steps, dict):
            steps = steps.get("steps", [])
        fake = FakeAnthropic(
            steps,
            api_key=args.api_key,
            port=args.port,
            max_input_tokens=args.max_input_tokens,
            count_tokens=not args.no_count_tokens,
            tolerate_system_role=args.tolerate_system_role,
        )
    except (OSError, ValueError) as exc:
        print(f"fakeapi: bad script: {exc}", file=sys.stderr)
        return 2
    if args.log_file:
        fake.on_change = log_writer(args.log_file)
        fake.on_change(fake)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with fake:
        if args.port_file:
            write_atomic(args.port_file, str(fake.port))
        print(f"fakeapi listening on {fake.url}", file=sys.stderr, flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
