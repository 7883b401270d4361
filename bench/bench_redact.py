"""The cost of redaction per KB: the scanner before detect-secrets (read from git) against the
current one (detect-secrets' plugins, memagent's shapes, personal data), side by side.

Run by hand: ``python bench/bench_redact.py [--rev REV] [--rounds N]``. ``REV`` is a git revision
whose ``src/memagent/redact.py`` is the old single-module scanner (default: the last one that had
it). Each sample is 30,000 characters; the two scanners run interleaved ``N`` times on it in one
process; medians in milliseconds and µs per KB, and the ratio new/old.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memagent.redact import redact

SIZE = 30_000
ROOT = Path(__file__).resolve().parents[1]
OLD_PATH = "src/memagent/redact.py"


def samples() -> dict[str, str]:
    code = ROOT.joinpath("src", "memagent", "runtime.py").read_text()
    log = "".join(
        f"2026-11-{n % 28 + 1:02d}T10:{n % 60:02d}:05.{n:06d}Z pid {40000 + n} GET /api/v{n % 3}/items/{n * 7919} "
        f"200 {n % 900 + 12} ms from 10.0.{n % 256}.{n % 200} build 1.{n % 20}.{n % 7}\n"
        for n in range(400)
    )
    return {
        "source code": (code * (SIZE // len(code) + 1))[:SIZE],
        "prose with keywords": (
            "The token is refreshed every hour and the password reset flow lives in views.py. " * 400
        )[:SIZE],
        "test output": ("tests/test_x.py::test_case ok\n" * 1200)[:SIZE],
        "server log (numbers, dates, IPs)": (log * (SIZE // len(log) + 1))[:SIZE],
        "git log (e-mails)": (
            "commit 3fa2c01d9e4b1a2b3c4d5e6f7a8b9c0d1e2f3a4b\nAuthor: Dev One <dev.one@acme.io>\n"
            "Date:   Mon Nov 25 09:48:12 2026 +0100\n\n    fix the parser\n\n" * 200
        )[:SIZE],
    }


def old_scanner(rev: str):
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{OLD_PATH}"], capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_redact.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_redact", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_redact"] = module
    spec.loader.exec_module(module)
    return module.redact


def last_revision_with_old_scanner() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--format=%H", "-n", "1", "--", OLD_PATH],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return f"{out}^" if out else "HEAD"


def timed(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rev", default=None)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    old = old_scanner(args.rev or last_revision_with_old_scanner())
    redact("warm-up: sk" + "_live_x and alice@acme.io +1 415-555-0132")  # imports the libraries once
    kb = SIZE / 1000
    print(f"{'sample':34} {'old ms':>8} {'new ms':>8} {'old µs/KB':>10} {'new µs/KB':>10} {'new/old':>8}")
    for name, text in samples().items():
        before, after = [], []
        for _ in range(args.rounds):
            before.append(timed(old, text))
            after.append(timed(redact, text))
        a, b = statistics.median(before), statistics.median(after)
        print(f"{name:34} {a * 1000:8.2f} {b * 1000:8.2f} {a * 1e6 / kb:10.1f} {b * 1e6 / kb:10.1f} {b / a:8.2f}")


if __name__ == "__main__":
    main()
