"""Context policies side by side on one scripted 200-turn coding session.

Usage: python bench/bench_context.py [--turns 200] [--threshold 50000] [--seeds 7 8 9] [--batch 12] [--json out.json]

A deterministic coding session (file reads, greps, edits, test runs with failures; 20 planted
facts: unusual file names, decisions, error messages) is replayed through the real ``Agent`` with
a ``FunctionModel`` under three policies, in one run:

- ``none``: no compaction (the history is sent as it is);
- ``naive``: micro-compaction on every tool result (keep 3, batch 1) and, at the threshold,
  everything summarised (only the in-flight round kept raw), no state re-injection, no recall;
- ``memagent``: :class:`CompactingContext` with its defaults (keep 3, batch 6, tail 30% of the
  threshold, todo re-injection) plus the ``recall`` tool.

Both compacting policies get the same summariser: the rule-based digest
(``compaction.deterministic_digest``), a deterministic stand-in for the small model and a lower
bound on what an LLM summary keeps.

Reported per policy: peak context tokens, total input tokens, estimated input cost with prompt
caching, cached-prefix reuse, compactions, planted facts present in the final context / recallable.
Cost model (units: main-model input tokens): every request puts cache breakpoints on the fixed
prefix and the newest message (as the anthropic adapter does), so the longest prefix it shares
with the previous request — up to that request's end — is a cache read (0.1×) and the rest is a
cache write (1.25×). Summary calls go to a model priced 1/3 of the main one for input and 5/3 for
output (Haiku 4.5 vs Sonnet 4.5 list prices), uncached. Tokens are the offline estimate (bytes/4).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memagent.agent.loop import Agent
from memagent.agent.prompt import build_system
from memagent.config import Settings
from memagent.context.compaction import CompactingContext
from memagent.context.conversation import Conversation
from memagent.context.digest import deterministic_digest
from memagent.context.policy import CompactionRequest, PassThroughContext
from memagent.context.transcript import TranscriptWriter
from memagent.features.context import context_tools, search_transcripts
from memagent.llm.scripted import FunctionModel, reply
from memagent.llm.tokens import estimate_text
from memagent.llm.types import ModelRequest, ModelResponse, Usage
from memagent.tools.base import Tool, ToolContext, ToolOutcome, ToolRegistry
from memagent.tools.builtin import builtin_tools

SMALL = "bench-small-model"
CACHE_READ = 0.1
CACHE_WRITE = 1.25
SMALL_INPUT = 1 / 3
SMALL_OUTPUT = 5 / 3

# ------------------------------------------------------------------ the scripted session

MODULES = [
    "billing/invoice",
    "billing/tax",
    "billing/currency",
    "api/routes",
    "api/auth",
    "api/webhooks",
    "core/models",
    "core/events",
    "core/queue",
    "storage/db",
    "storage/cache",
    "storage/migrations",
    "cli/main",
    "cli/report",
    "utils/dates",
    "utils/retry",
    "utils/logging",
    "search/index",
    "search/query",
    "notify/email",
    "notify/sms",
    "export/csv",
    "export/pdf",
    "jobs/scheduler",
]

FACTS: list[tuple[str, str, str]] = [
    # (kind, the unique text that must survive, how it is planted)
    ("file", "rounding_rules_v2.py", "src/billing/rounding_rules_v2.py"),
    ("decision", "webhook retry limit at 7 attempts", "Decision: keep the webhook retry limit at 7 attempts, no more."),
    ("error", "currency code 'XBT' is not ISO-4217", "E   ValueError: currency code 'XBT' is not ISO-4217"),
    ("file", "legacy_vat_table.json", "src/billing/data/legacy_vat_table.json"),
    ("decision", "store money as integer cents", "Decision: we store money as integer cents everywhere, never floats."),
    (
        "error",
        "deadlock detected on table invoice_lines",
        "E   psycopg.errors.DeadlockDetected: deadlock detected on table invoice_lines",
    ),
    ("file", "tz_fallback_map.py", "src/utils/tz_fallback_map.py"),
    (
        "decision",
        "use UTC for every stored timestamp",
        "Decision: use UTC for every stored timestamp; convert only in the UI.",
    ),
    ("error", "KeyError: 'tax_region'", "E   KeyError: 'tax_region'"),
    ("file", "webhook_signing_v3.py", "src/api/webhook_signing_v3.py"),
    (
        "decision",
        "rate limit of 120 requests per minute",
        "Decision: the public API gets a rate limit of 120 requests per minute per key.",
    ),
    (
        "error",
        "token expired at 2026-03-01T00:00:00Z",
        "E   jwt.ExpiredSignatureError: token expired at 2026-03-01T00:00:00Z",
    ),
    ("file", "search_synonyms_de.txt", "src/search/data/search_synonyms_de.txt"),
    ("decision", "drop Python 3.10 support", "Decision: we drop Python 3.10 support in the next release."),
    (
        "error",
        "RecursionError in render_pdf_table",
        "E   RecursionError in render_pdf_table: maximum recursion depth exceeded",
    ),
    ("file", "queue_backoff_policy.py", "src/core/queue_backoff_policy.py"),
    ("decision", "feature flag named invoice_v2_beta", "Decision: ship behind a feature flag named invoice_v2_beta."),
    ("error", "UnicodeEncodeError in export_csv at row 4812", "E   UnicodeEncodeError in export_csv at row 4812"),
    ("file", "sms_provider_twilio_eu.py", "src/notify/sms_provider_twilio_eu.py"),
    (
        "decision",
        "nightly jobs run at 03:30 UTC",
        "Decision: nightly jobs run at 03:30 UTC to avoid the backup window.",
    ),
]


def code_file(path: str, lines: int) -> str:
    name = path.rsplit("/", 1)[-1].removesuffix(".py")
    out = [f'"""{name}: part of the sample application."""', "", "from __future__ import annotations", ""]
    for number in range(lines // 6):
        out += [
            f"def {name}_step_{number}(value: int, *, factor: int = {number % 7 + 1}) -> int:",
            f'    """Step {number} of the {name} pipeline."""',
            f"    result = value * factor + {number}",
            f"    return result if result < {1000 + number} else result // 2",
            "",
            "",
        ]
    return "\n".join(out)


def numbered(text: str) -> str:
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.splitlines(), start=1))


@dataclass
class Call:
    name: str
    input: dict[str, Any]
    output: str
    is_error: bool = False
    id: str = ""


@dataclass
class TurnScript:
    user: str
    rounds: list[list[Call]]
    answer: str


@dataclass
class Session:
    turns: list[TurnScript]
    facts: list[str]


def pytest_output(test: str, rng: random.Random, failure: str | None) -> str:
    passed = rng.randint(12, 60)
    lines = [
        "============================= test session starts ==============================",
        f"collected {passed + (1 if failure else 0)} items",
        "",
    ]
    lines += [f"{test}::test_case_{i} PASSED" for i in range(passed)]
    if failure:
        lines += [
            "",
            "=================================== FAILURES ===================================",
            f"_____________________________ test_case_{passed} ______________________________",
            "",
        ]
        lines += [f"    def test_case_{passed}():", "        value = build_fixture()", ">       assert check(value)"]
        lines += [f"src/{test.split('/')[-1].replace('test_', '')}:{rng.randint(10, 300)}: in check", failure]
        lines += [
            f"FAILED {test}::test_case_{passed} - {failure.strip().removeprefix('E   ')}",
            f"========================= 1 failed, {passed} passed in {rng.uniform(0.5, 9):.2f}s =========================",
        ]
    else:
        lines += [
            f"============================== {passed} passed in {rng.uniform(0.5, 9):.2f}s =============================="
        ]
    return "\n".join(lines)


def build_session(turns: int, seed: int) -> Session:
    rng = random.Random(seed)
    files = {f"src/{m}.py": code_file(f"src/{m}.py", rng.randint(60, 420)) for m in MODULES}
    plant_at = {5 + (turns - 20) * i // len(FACTS): fact for i, fact in enumerate(FACTS)}
    script: list[TurnScript] = []
    counter = 0
    for number in range(turns):
        module = rng.choice(MODULES)
        path = f"src/{module}.py"
        test = f"tests/test_{module.split('/')[-1]}.py"
        kind = rng.choices(["investigate", "fix", "question", "tests"], [0.35, 0.35, 0.15, 0.15])[0]
        fact = plant_at.get(number)
        failure = None
        user = {
            "investigate": f"How does {path} handle edge cases? Look at the code and explain.",
            "fix": f"There is a bug in {path}: fix it and make {test} pass.",
            "question": f"Quick question: should {module.split('/')[-1]} depend on core/models?",
            "tests": "Run the whole test suite and tell me what fails.",
        }[kind]
        if fact and fact[0] == "decision":
            user += " " + fact[2]
        if fact and fact[0] == "error":
            failure = fact[2]
            kind = "fix"
            user = f"There is a bug in {path}: fix it and make {test} pass."
        rounds: list[list[Call]] = []
        if fact and fact[0] == "file":
            files[fact[2]] = code_file(fact[2], rng.randint(60, 200))
            user = f"Where is the logic that {path} delegates to? Check it."
            rounds.append(
                [
                    Call(
                        "grep",
                        {"pattern": module.split("/")[-1]},
                        f"{path}:12: from . import helpers\n{fact[2]}:3: # delegated from {path}",
                    )
                ]
            )
            rounds.append([Call("read_file", {"path": fact[2]}, numbered(files[fact[2]]))])
        if kind == "investigate":
            rounds.append(
                [Call("grep", {"pattern": f"def {module.split('/')[-1]}"}, f"{path}:5: def ...\n{path}:11: def ...")]
            )
            others = rng.sample(MODULES, 2)
            rounds.append([Call("read_file", {"path": path}, numbered(files[path]))])
            rounds.append(
                [
                    Call("read_file", {"path": f"src/{o}.py"}, numbered(files[f"src/{o}.py"]))
                    for o in others[: rng.randint(1, 2)]
                ]
            )
        elif kind == "fix":
            rounds.append([Call("read_file", {"path": path}, numbered(files[path]))])
            rounds.append(
                [
                    Call(
                        "edit_file",
                        {"path": path, "old_text": "result // 2", "new_text": "result // 3"},
                        f"Edited {path} (1 replacement).",
                    )
                ]
            )
            failing = failure or (pytest_failure(rng) if rng.random() < 0.4 else None)
            rounds.append(
                [
                    Call(
                        "bash",
                        {"command": f"pytest -q {test}"},
                        pytest_output(test, rng, failing) + "\n[exit code: 1]"
                        if failing
                        else pytest_output(test, rng, None),
                    )
                ]
            )
            if failing:
                rounds.append(
                    [
                        Call(
                            "edit_file",
                            {"path": path, "old_text": "factor: int", "new_text": "factor: int | None"},
                            f"Edited {path} (1 replacement).",
                        )
                    ]
                )
                rounds.append([Call("bash", {"command": f"pytest -q {test} --lf"}, pytest_output(test, rng, None))])
        elif kind == "tests":
            rounds.append(
                [
                    Call(
                        "bash",
                        {"command": "pytest -q"},
                        "\n".join(
                            pytest_output(f"tests/test_{m.split('/')[-1]}.py", rng, None)
                            for m in rng.sample(MODULES, 3)
                        ),
                    )
                ]
            )
        for round_calls in rounds:
            for call in round_calls:
                counter += 1
                call.id = f"toolu_b{counter:05d}"
        answer = (
            f"Done with {path}. "
            + "The change keeps the public interface stable and the tests cover the edge case. " * rng.randint(2, 6)
        )
        script.append(TurnScript(user, rounds, answer))
    return Session(script, [fact[1] for fact in FACTS])


def pytest_failure(rng: random.Random) -> str:
    return rng.choice(
        [
            "E   AssertionError: assert 41 == 42",
            "E   TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'",
            "E   AttributeError: 'NoneType' object has no attribute 'items'",
        ]
    )


# ------------------------------------------------------------------ replay


class ScriptTools:
    """The built-in tools' names and schemas, answering with the output planned for each call."""

    def __init__(self) -> None:
        self.current: Call | None = None

    def tools(self) -> list[Tool]:
        return [self._make(real) for real in builtin_tools()]

    def _make(self, real: Tool) -> Tool:
        def handler(args: Any, ctx: ToolContext) -> ToolOutcome:
            assert self.current is not None and self.current.name == real.name
            return ToolOutcome(self.current.output, self.current.is_error)

        return Tool(
            name=real.name,
            description=real.description,
            input_model=real.input_model,
            handler=handler,
            key_argument=real.key_argument,
        )


@dataclass
class Run:
    name: str
    requests: list[ModelRequest] = field(default_factory=list)
    summaries: list[tuple[ModelRequest, str]] = field(default_factory=list)
    seconds: float = 0.0
    compactions: int = 0
    final_context: list[dict] = field(default_factory=list)
    system: list[dict] = field(default_factory=list)
    transcripts: Path | None = None
    session_id: str = ""
    has_recall: bool = False
    counter: PieceCounter | None = None


class PieceCounter:
    """Tokens of each request piece (fixed prefix, one message block), memoised by identity."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, str, int]] = {}

    def piece(self, obj: Any, role: str = "") -> tuple[str, int]:
        hit = self._memo.get(id(obj))
        if hit is None or hit[0] is not obj:
            text = role + json.dumps(obj, sort_keys=True, ensure_ascii=False)
            hit = (obj, text, estimate_text(text))
            self._memo[id(obj)] = hit
        return hit[1], hit[2]

    def pieces(self, request: ModelRequest) -> list[tuple[str, int]]:
        fixed = self.piece(
            (
                tuple(json.dumps(b, sort_keys=True) for b in request.system),
                tuple(json.dumps(t, sort_keys=True) for t in request.tools),
            )
        )
        out = [fixed]
        for message in request.messages:
            for block in message["content"]:
                out.append(self.piece(block, message["role"]))
        return out


def replay(
    name: str, session: Session, threshold: int, root: Path, batch: int | None = None, tail_fraction: float = 0.3
) -> Run:
    session_id = f"bench-{name}"
    transcripts = root / name / ".transcripts"
    writer = TranscriptWriter.open(transcripts, session_id)
    conversation = Conversation(recorder=writer, session_id=session_id)
    fake = ScriptTools()
    run = Run(name=name, transcripts=transcripts, session_id=session_id)
    queue: list[ModelResponse] = []
    dropped: list[list[dict]] = []
    counter = PieceCounter()

    def brain(request: ModelRequest) -> ModelResponse:
        if request.model == SMALL:
            summary = deterministic_digest(dropped[-1]) if dropped else "(nothing)"
            run.summaries.append((request, summary))
            return reply(summary)
        run.requests.append(request)
        response = queue.pop(0)
        usage = Usage(input_tokens=sum(t for _, t in counter.pieces(request)))
        return ModelResponse(response.content, response.stop_reason, usage, "bench")

    model = FunctionModel(brain)
    registry = ToolRegistry.of(fake.tools())
    system = build_system(Path("/home/dev/project"))
    policy: Any
    if name == "none":
        policy = PassThroughContext()
    else:
        naive = name == "naive"
        settings = Settings(
            compact_tokens=threshold,
            small_model=SMALL,
            keep_tool_results=3,
            micro_compact_batch=1 if naive else (batch or Settings().micro_compact_batch),
        )
        requests = CompactionRequest()
        policy = CompactingContext(
            requests=requests,
            model=model,
            settings=settings,
            session_id=session_id,
            transcript_name=f".transcripts/{session_id}.jsonl",
            system=system,
            tools=[],
            tail_fraction=0.0 if naive else tail_fraction,
            reinject=[] if naive else [lambda: "Todo list:\n[>] #1 keep the test suite green\n[ ] #2 review open bugs"],
            before_drop=[lambda messages, ids: dropped.append(messages)],
        )
        if not naive:
            for extra in context_tools(requests, transcripts, session_id):
                registry.add(extra)
            run.has_recall = True
        policy.tools = registry.schemas()
    agent = Agent(
        model=model,
        tools=registry,
        tool_context=ToolContext(root=root, session_id=session_id),
        system=system,
        conversation=conversation,
        context=policy,
        auto_approve=True,
    )
    original_run_one = agent._run_one

    def run_one(call):  # route each call to its scripted output
        fake.current = planned.get(call["id"])
        return (yield from original_run_one(call))

    agent._run_one = run_one  # type: ignore[method-assign]
    planned: dict[str, Call] = {}
    started = time.perf_counter()
    for turn in session.turns:
        for round_calls in turn.rounds:
            blocks = []
            for call in round_calls:
                planned[call.id] = call
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
            queue.append(reply("Let me look.", *blocks))
        queue.append(reply(turn.answer))
        for _ in agent.run_turn(turn.user):
            pass
    run.seconds = time.perf_counter() - started
    run.compactions = getattr(policy, "compactions", 0)
    run.final_context = policy.view(conversation)
    run.system = system
    writer.close()
    run.counter = counter
    return run


# ------------------------------------------------------------------ measures


def starts_turn(request: ModelRequest) -> bool:
    last = request.messages[-1]
    return last["role"] == "user" and not any(b.get("type") == "tool_result" for b in last["content"])


def measure(run: Run, facts: list[str]) -> dict[str, Any]:
    counter = run.counter
    assert counter is not None
    sizes, costs, reused = [], [], []
    previous: list[tuple[str, int]] = []
    turn_starts = []
    for request in run.requests:
        pieces = counter.pieces(request)
        total = sum(t for _, t in pieces)
        shared = 0
        for a, b in zip(previous, pieces):
            if a[0] != b[0]:
                break
            shared += 1
        cached = sum(t for _, t in pieces[:shared])
        costs.append(CACHE_READ * cached + CACHE_WRITE * (total - cached))
        if previous:
            reused.append(shared == len(previous))
            if starts_turn(request):
                turn_starts.append(True)
            elif turn_starts:
                turn_starts[-1] = turn_starts[-1] and reused[-1]
        sizes.append(total)
        previous = pieces
    summary_cost = 0.0
    for request, summary in run.summaries:
        text = json.dumps(request.messages) + json.dumps(request.system)
        summary_cost += SMALL_INPUT * estimate_text(text) + SMALL_OUTPUT * estimate_text(summary)
    context_text = json.dumps(run.final_context, ensure_ascii=False) + json.dumps(run.system, ensure_ascii=False)
    in_context = [f for f in facts if f in context_text]
    recallable = [
        f for f in facts if run.has_recall and search_transcripts(run.transcripts, f, [run.session_id], limit=1)
    ]
    return {
        "policy": run.name,
        "requests": len(run.requests),
        "peak_context": max(sizes),
        "median_context": int(statistics.median(sizes)),
        "total_input_tokens": sum(sizes),
        "cost_main": round(sum(costs)),
        "cost_summaries": round(summary_cost),
        "cost_total": round(sum(costs) + summary_cost),
        "prefix_reuse_requests": sum(reused) / len(reused),
        # a turn counts when each of its requests extended the previous request (no cache rewrite)
        "prefix_reuse_turns": sum(turn_starts) / len(turn_starts) if turn_starts else 0.0,
        "compactions": run.compactions,
        "facts_in_context": len(in_context),
        "facts_recoverable": len(set(in_context) | set(recallable)),
        "seconds": round(run.seconds, 2),
    }


def table(rows: list[dict[str, Any]], base: float) -> list[str]:
    header = (
        "policy",
        "requests",
        "peak ctx",
        "total input",
        "cost",
        "× none",
        "reuse/req",
        "reuse/turn",
        "compactions",
        "facts in ctx",
        "facts recoverable",
        "seconds",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = (
            row["policy"],
            row["requests"],
            f"{row['peak_context']:,}",
            f"{row['total_input_tokens']:,}",
            f"{row['cost_total']:,}",
            f"{row['cost_total'] / base:.3f}",
            f"{row['prefix_reuse_requests']:.1%}",
            f"{row['prefix_reuse_turns']:.1%}",
            row["compactions"],
            f"{row['facts_in_context']}/20",
            f"{row['facts_recoverable']}/20",
            row["seconds"],
        )
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return lines


def medians(runs: list[list[dict[str, Any]]]) -> list[str]:
    """Per policy, the median over seeds of the ratios and rates that matter."""
    lines = [
        "| policy | cost × none (median) | peak ctx (max) | reuse/req (median) | reuse/turn (median) | "
        "facts in ctx (median) | facts recoverable (min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for index, row in enumerate(runs[0]):
        same = [rows[index] for rows in runs]
        ratios = [r["cost_total"] / rows[0]["cost_total"] for r, rows in zip(same, runs)]
        lines.append(
            f"| {row['policy']} | {statistics.median(ratios):.3f} | {max(r['peak_context'] for r in same):,} | "
            f"{statistics.median(r['prefix_reuse_requests'] for r in same):.1%} | "
            f"{statistics.median(r['prefix_reuse_turns'] for r in same):.1%} | "
            f"{statistics.median(r['facts_in_context'] for r in same)}/20 | {min(r['facts_recoverable'] for r in same)}/20 |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--threshold", type=int, default=50_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 8, 9])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--batch",
        type=int,
        nargs="*",
        default=[],
        help=f"extra memagent rows with this micro_compact_batch (default setting: {Settings().micro_compact_batch})",
    )
    args = parser.parse_args(argv)
    runs = []
    for seed in args.seeds:
        session = build_session(args.turns, seed)
        rows = []
        with tempfile.TemporaryDirectory() as directory:
            for name in ("none", "naive", "memagent"):
                rows.append(measure(replay(name, session, args.threshold, Path(directory)), session.facts))
            for batch in args.batch:
                row = measure(
                    replay("memagent", session, args.threshold, Path(directory) / f"b{batch}", batch=batch),
                    session.facts,
                )
                rows.append({**row, "policy": f"memagent batch={batch}"})
        runs.append(rows)
        print(f"\nseed {seed}: {args.turns} turns, threshold {args.threshold:,}; cost in main-model input-token units")
        print("\n".join(table(rows, rows[0]["cost_total"])), flush=True)
    print(f"\nmedians over seeds {args.seeds}:")
    print("\n".join(medians(runs)))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
