"""What redaction adds to writing one transcript record: JSON alone vs redact + JSON.

Run by hand: ``python bench/bench_redact.py``. Three 30,000-character tool results (source
code, prose that mentions tokens and passwords, test output without any keyword), each timed
side by side 21 times in one process; medians in milliseconds.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from memagent.redact import redact_value

SIZE = 30_000
ROUNDS = 21


def samples() -> dict[str, str]:
    code = Path(__file__).resolve().parents[1].joinpath("src", "memagent", "runtime.py").read_text()
    return {
        "source code": (code * (SIZE // len(code) + 1))[:SIZE],
        "prose with keywords": ("The token is refreshed every hour and the password reset flow lives in views.py. " * 400)[:SIZE],
        "test output": ("tests/test_x.py::test_case ok\n" * 1200)[:SIZE],
    }


def main() -> None:
    for name, text in samples().items():
        record = {"type": "message", "role": "user", "content": [{"type": "tool_result", "content": text}]}
        plain, redacted = [], []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            json.dumps(record)
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            json.dumps(redact_value(record))
            redacted.append(time.perf_counter() - start)
        a, b = statistics.median(plain) * 1000, statistics.median(redacted) * 1000
        print(f"{name:20}  json {a:6.2f} ms   redact+json {b:6.2f} ms")


if __name__ == "__main__":
    main()
