"""End to end: the real runtime, the real anthropic SDK and the loopback fake Messages API.

A long session with large file reads and a low threshold compacts, keeps every request under the
threshold plus one round, recalls an elided output exactly, answers, and resumes with the summary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fakeapi import error, text, tool
from memagent.context.compaction import CompactingContext
from memagent.context.resume import latest_session_id, load_session
from memagent.llm.invariants import request_problems
from memagent.llm.tokens import TokenCounter
from memagent.markers import Marker
from memagent.runtime import SessionOptions, open_session

SUMMARY_OPEN = Marker.SUMMARY.value

pytest_plugins = ["fakeapi.fixtures"]

SMALL = "claude-haiku-4-5"
THRESHOLD = 14_000
PLACEHOLDER_ID = re.compile(r"\[Previous: used read_file — full output: [^#\]]+#(toolu_\w+);")


def make_project(root: Path, files: int, lines_per_file: int) -> None:
    for number in range(files):
        lines = [
            f"def handler_{number}_{line}(request):  # module {number}, line {line}" for line in range(lines_per_file)
        ]
        (root / f"mod{number}.py").write_text("\n".join(lines) + "\n")


class Brain:
    """The fake model: reads two modules per turn; recalls an elided output when asked."""

    def __init__(self, summary_fails: bool = False) -> None:
        self.summary_fails = summary_fails
        self.recalled_id: str | None = None

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == SMALL:
            if self.summary_fails:
                return error(400, "summary model rejected the request")
            return text("## Goal\nReview every module.\n## Files touched\nmod0.py … (read)\n## Next step\ncontinue")
        messages = body["messages"]
        last = messages[-1]["content"]
        asked = " ".join(b.get("text", "") for b in last if b.get("type") == "text")
        rounds = sum(1 for b in last if b.get("type") == "tool_result")
        turn = re.search(r"Review modules (\d+)", asked)
        if self._last_call(messages) == "recall":
            return text("That is the recalled output.")
        if "Please recall" in asked:
            match = PLACEHOLDER_ID.search(json.dumps(messages, ensure_ascii=False))
            assert match, "no placeholder to recall"
            self.recalled_id = match.group(1)
            return tool("recall", {"tool_use_id": self.recalled_id})
        if turn:
            first = int(turn.group(1))
            return tool("read_file", {"path": f"mod{first}.py"})
        if rounds and self._reads_in_turn(messages) == 1:
            return tool("read_file", {"path": f"mod{self._last_read(messages) + 1}.py"})
        return text("Reviewed; the handlers look consistent.")

    @staticmethod
    def _last_call(messages: list[dict]) -> str | None:
        if len(messages) < 2 or messages[-2]["role"] != "assistant":
            return None
        names = [b.get("name") for b in messages[-2]["content"] if b.get("type") == "tool_use"]
        return names[-1] if names else None

    @staticmethod
    def _reads_in_turn(messages: list[dict]) -> int:
        count = 0
        for message in reversed(messages):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    count += 1
                if (
                    block.get("type") == "text"
                    and message["role"] == "user"
                    and "Review modules" in block.get("text", "")
                ):
                    return count
        return count

    @staticmethod
    def _last_read(messages: list[dict]) -> int:
        for message in reversed(messages):
            for block in message["content"]:
                if block.get("type") == "tool_use" and block.get("name") == "read_file":
                    return int(re.search(r"mod(\d+)", block["input"]["path"]).group(1))
        return 0


def run_session(
    tmp_path: Path,
    fake,
    monkeypatch,
    brain: Brain,
    turns: int,
    *,
    lines_per_file: int = 200,
    threshold: int = THRESHOLD,
):
    make_project(tmp_path, 2 * turns + 2, lines_per_file)
    (tmp_path / ".memagent.toml").write_text("micro_compact_batch = 2\n")
    monkeypatch.setenv("MEMAGENT_COMPACT_TOKENS", str(threshold))
    # the bound below (threshold plus one round) is the waiting path's; the background path's
    # own end-to-end test is in tests/context/test_background_compaction.py
    monkeypatch.setenv("MEMAGENT_COMPACTION_BACKGROUND", "false")
    fake.responder = brain
    session = open_session(SessionOptions(root=tmp_path, memory=False, auto_approve=True))
    assert isinstance(session.agent.context, CompactingContext)  # the runtime wires the real policy
    session.todo.update([{"id": 1, "text": "review every module", "status": "in_progress"}])
    endings = []
    for turn in range(turns):
        endings += [
            e
            for e in session.agent.run_turn(f"Review modules {2 * turn} and {2 * turn + 1}")
            if type(e).__name__ == "TurnEnded"
        ]
    return session, endings


def request_size(body: dict[str, Any]) -> int:
    return TokenCounter().context_tokens(body.get("system"), body.get("tools"), body["messages"])


def test_long_session_compacts_stays_bounded_and_resumes_with_the_summary(tmp_path, fake_api, monkeypatch):
    brain = Brain()
    session, endings = run_session(tmp_path, fake_api, monkeypatch, brain, turns=10)
    assert [e.stop_reason for e in endings] == ["end_turn"] * 10
    main = [b for b in fake_api.requests if b["model"] != SMALL]
    summaries = [b for b in fake_api.requests if b["model"] == SMALL]
    assert summaries, "the session never compacted"
    for body in fake_api.requests:
        assert request_problems(body["messages"]) == []
    one_round = max(len(p.read_text()) for p in tmp_path.glob("mod*.py")) // 4 * 2 + 400
    assert max(request_size(b) for b in main) <= THRESHOLD + one_round
    assert any(b["messages"][0]["content"][0]["text"].startswith(SUMMARY_OPEN) for b in main)
    assert session.agent.context.counter.anchored  # counting was anchored on the fake's usage
    session.close()

    # resume: the context starts with the summary, and the todo state re-injected with it
    assert latest_session_id(session.paths.transcripts) == session.session_id
    resumed = load_session(session.paths.transcripts, session.session_id)
    head = resumed.messages[0]["content"]
    assert head[0]["text"].startswith(SUMMARY_OPEN) and "Review every module." in head[0]["text"]
    assert "review every module" in head[1]["text"]
    assert resumed.compactions == len(summaries)


def test_an_elided_output_comes_back_exactly_through_recall(tmp_path, fake_api, monkeypatch):
    brain = Brain()
    session, endings = run_session(tmp_path, fake_api, monkeypatch, brain, turns=4, lines_per_file=40, threshold=10**6)
    assert [e.stop_reason for e in endings] == ["end_turn"] * 4
    assert not [b for b in fake_api.requests if b["model"] == SMALL]
    endings = [
        e for e in session.agent.run_turn("Please recall the oldest elided read") if type(e).__name__ == "TurnEnded"
    ]
    assert endings[-1].stop_reason == "end_turn" and brain.recalled_id
    recalled = fake_api.requests[-1]["messages"][-1]["content"][0]
    assert recalled["tool_use_id"] != brain.recalled_id and recalled["type"] == "tool_result"
    original = next(
        block
        for record in map(json.loads, session.transcript.path.read_text().splitlines())
        if record["type"] == "message"
        for block in record["content"]
        if block.get("type") == "tool_result" and block["tool_use_id"] == brain.recalled_id
    )
    assert recalled["content"] == original["content"] and "def handler_" in recalled["content"]
    session.close()


@pytest.mark.fake_api_errors_ok
def test_a_failing_summary_call_truncates_deterministically(tmp_path, fake_api, monkeypatch):
    brain = Brain(summary_fails=True)
    session, endings = run_session(tmp_path, fake_api, monkeypatch, brain, turns=6)
    assert [e.stop_reason for e in endings] == ["end_turn"] * 6, [e.error for e in endings]
    records = [json.loads(line) for line in session.transcript.path.read_text().splitlines()]
    compactions = [r for r in records if r["type"] == "compaction"]
    assert compactions and all(r.get("fallback") for r in compactions)
    assert "mod0.py" in compactions[0]["summary"]  # files touched survive in the digest
    main = [b for b in fake_api.requests if b["model"] != SMALL]
    for body in main:
        assert request_problems(body["messages"]) == []
    assert main[-1]["messages"][0]["content"][0]["text"].startswith(SUMMARY_OPEN)
    session.close()
