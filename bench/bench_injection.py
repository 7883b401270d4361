"""What reaches the model: how often the card that answers a user's message is inside the memory
block memagent injects into that message — through the real CLI (``memagent -p``), the real
agent and the real ``anthropic`` SDK, against the loopback fake Messages API (``tests/fakeapi``).

Run by hand (not part of the test suite), from the repository root:

    python bench/bench_injection.py                        # every question of team_memory.json
    python bench/bench_injection.py --limit 20 --split test
    python bench/bench_injection.py --env MEMAGENT_MEMORY_K=8 --env MEMAGENT_MEMORY_MIN_RELEVANCE=0.2

Per data set: a temporary project and ``$MEMAGENT_HOME``; the cards go in with ``memagent memory
import`` (the real CLI); then each question is one ``memagent -p QUESTION`` session with memory on
and default settings (plus any ``--env``), run under ``faketime`` at the set's ``now`` when the
``faketime`` program is installed (questions such as "what changed last week?" are relative to
it; without it they are relative to the real date). The fake API answers every request with a
short text and records it; the bench finds the request that carries the question, reads the
``[Memory#…]`` ids of the injected block ("Relevant long-term memories:") and checks whether an
evidence card is among them. Card ids map back to the set's ids through ``provenance.original_id``.

Reported: the share of questions whose answering card was injected, per split and kind, and the
block's size (cards, characters).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from fakeapi import FakeAnthropic, text  # noqa: E402

DEFAULT_DATA = REPO / "bench" / "data" / "team_memory.json"
MARKER = "Relevant long-term memories:"
CITATION = re.compile(r"\[Memory#(m_[0-9a-f]{12})\]")
ANSWERS_PER_QUESTION = 4  # the answer, plus room for a background request (extraction) if any


def _memagent(
    args: list[str], env: dict[str, str], now: str | None, timeout: float = 300
) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "memagent", *args]
    if now and shutil.which("faketime"):
        command = ["faketime", now, *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, input="")


def _user_text(request: dict) -> str:
    last = request["messages"][-1]
    content = last.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))


def _injected(request: dict) -> tuple[list[str], int]:
    """The card ids of the memory block in the request's newest message, and the block's size."""
    body = _user_text(request)
    start = body.find(MARKER)
    if start < 0:
        return [], 0
    block = body[start:]
    return CITATION.findall(block), len(block)


def run(data: Path, limit: int | None, split: str | None, extra_env: dict[str, str]) -> dict:
    spec = json.loads(data.read_text(encoding="utf-8"))
    questions = [q for q in spec["queries"] if split is None or q["split"] == split][:limit]
    now = spec["now"].replace("T", " ").replace("Z", "")
    with tempfile.TemporaryDirectory(prefix="memagent-inject-") as tmp, FakeAnthropic() as fake:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        root.mkdir()
        env = {
            **os.environ,
            "MEMAGENT_HOME": str(home),
            "ANTHROPIC_API_KEY": "bench-key",
            "ANTHROPIC_BASE_URL": fake.url,
            "PYTHONUNBUFFERED": "1",
            **extra_env,
        }
        records = Path(tmp) / "cards.json"
        records.write_text(json.dumps(spec["cards"]), encoding="utf-8")
        imported = _memagent(["memory", "import", str(records), "-C", str(root), "--json"], env, now)
        if imported.returncode != 0:
            raise SystemExit(f"import failed: {imported.stderr.strip()}")
        exported = json.loads(_memagent(["memory", "export", "-C", str(root)], env, now).stdout)
        original = {c["id"]: (c.get("provenance") or {}).get("original_id") or c["id"] for c in exported}
        rows = []
        for question in questions:
            fake.add(*[text("Noted.") for _ in range(ANSWERS_PER_QUESTION)])
            seen = len(fake.requests)
            started = time.perf_counter()
            result = _memagent(["-C", str(root), "-p", question["question"], "--output-format", "json"], env, now)
            elapsed = time.perf_counter() - started
            asked = [r for r in fake.requests[seen:] if question["question"] in _user_text(r)]
            ids, size = _injected(asked[0]) if asked else ([], 0)
            names = [original.get(i, i) for i in ids]
            rows.append(
                {
                    "id": question["id"],
                    "kind": question["kind"],
                    "split": question["split"],
                    "injected": names,
                    "hit": bool(set(names) & set(question["evidence"])),
                    "chars": size,
                    "ok": result.returncode == 0,
                    "seconds": elapsed,
                }
            )
        return {"rows": rows, "errors": list(fake.errors), "faketime": bool(shutil.which("faketime"))}


def report(outcome: dict, settings: str) -> str:
    rows = outcome["rows"]
    lines = [
        f"settings: {settings or 'defaults'}; faketime: {'yes' if outcome['faketime'] else 'no (real date)'}; "
        f"runs failed: {sum(not r['ok'] for r in rows)}; fake API errors: {len(outcome['errors'])}",
        "",
        "| group | n | answering card injected | cards in block (median) | block chars (median) |",
        "|---|---:|---:|---:|---:|",
    ]
    groups = [("all", rows)] + [(f"split {s}", [r for r in rows if r["split"] == s]) for s in ("dev", "test")]
    groups += [(f"kind {k}", [r for r in rows if r["kind"] == k]) for k in sorted({r["kind"] for r in rows})]
    for name, group in groups:
        if not group:
            continue
        hits = sum(r["hit"] for r in group)
        lines.append(
            f"| {name} | {len(group)} | {hits}/{len(group)} = {hits / len(group):.3f} | "
            f"{statistics.median(len(r['injected']) for r in group):.0f} | "
            f"{statistics.median(r['chars'] for r in group):.0f} |"
        )
    missed = [f"- {r['id']} [{r['kind']}, {r['split']}] injected {r['injected']}" for r in rows if not r["hit"]]
    return "\n".join(lines + (["", "missed:"] + missed if missed else []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, help="only the first N questions (of the split)")
    parser.add_argument("--split", choices=["dev", "test"])
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the memagent runs")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    extra = dict(item.split("=", 1) for item in args.env)
    outcome = run(args.data, args.limit, args.split, extra)
    text_report = report(outcome, " ".join(args.env))
    print(text_report)
    if args.markdown:
        args.markdown.write_text(text_report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
