"""The pieces behind the REPL's first-hour behaviours, without a terminal: paste echo, keys typed
during a turn, the status line, the resume recap, what was learned, the session picker."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass

from memagent.config import Settings, project_paths
from memagent.llm.scripted import ScriptedModel, reply
from memagent.llm.types import ModelResponse, Usage, text_block
from memagent.runtime import SessionOptions, open_session
from memagent.ui.keys import TypeAhead, split_keys
from memagent.ui.recap import learned_counts, learned_summary, recap_lines
from memagent.ui.repl import echo_text
from memagent.ui.status import StatusLine, session_meter, short_tokens
from memagent.ui.words import plural


def test_short_messages_are_echoed_whole_and_large_pastes_collapsed():
    assert echo_text("fix the bug") == "❯ fix the bug"
    assert echo_text("two\nlines") == "❯ two\n  lines"
    pasted = "Traceback (most recent call last):\n" + "\n".join(f"  frame {n}" for n in range(239))
    assert echo_text(pasted) == "❯ Traceback (most recent call last): [pasted 240 lines]"
    assert echo_text("x" * 5000) == "❯ " + "x" * 59 + "… [pasted 5,000 characters]"


def test_plural():
    assert plural(1, "line") == "1 line" and plural(0, "line") == "0 lines"
    assert plural(2, "memory", "memories") == "2 memories"


def test_a_lone_esc_is_an_interrupt_and_sequences_are_dropped():
    assert split_keys(b"\x1b", lambda timeout: b"") == (b"", True)
    assert split_keys(b"ab\x1b[Acd", lambda timeout: b"") == (b"abcd", False)  # arrow key
    assert split_keys(b"\x1b", lambda timeout: b"OB") == (b"", False)  # SS3 arrow split across reads
    assert split_keys(b"\x1b[200~pasted\ntext\x1b[201~!", lambda timeout: b"") == (b"pasted\ntext!", False)


def test_type_ahead_gives_whole_lines_then_the_rest_and_notices_ctrl_d():
    keys = TypeAhead()
    keys.feed("/help\rnext que")
    keys.feed("stion\x07")
    assert keys.take_lines() == (["/help"], "next question")
    keys.feed("\x04")
    assert keys.eof and keys.take_lines() == ([], "")


def test_status_line_shows_mode_context_and_cost(tmp_path):
    status = StatusLine("claude-sonnet-4-5", auto_approve=False)
    assert status.text() == "claude-sonnet-4-5 · ask before tools"
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("hi")]))
    try:
        status.attach(session)
        list(session.agent.run_turn("hello"))
        text = status.text()
        assert text.startswith(f"{session.settings.model} · ask before tools · context ")
        assert "/50k · $" in text or "cost n/a" in text
    finally:
        session.close()
    assert StatusLine("m", auto_approve=True).text() == "m · auto-approve (--yes)"
    assert short_tokens(950) == "950" and short_tokens(12_345) == "12.3k" and short_tokens(50_000) == "50k"


def test_the_meter_sums_every_response_of_a_turn(tmp_path):
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("a")]))
    try:
        meter = session_meter(session)
        for feature in session.agent.features:
            feature.after_response(
                ModelResponse(
                    [text_block("x")], "end_turn", Usage(input_tokens=1000, output_tokens=10), "claude-haiku-4-5"
                )
            )
        assert meter.calls == 1 and meter.context_tokens == 1000
        assert meter.cost is not None and meter.cost > 0
    finally:
        session.close()


def _user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def test_recap_shows_the_last_exchanges_and_where_it_stopped():
    messages = []
    for n in range(5):
        messages += [_user(f"question {n}"), _assistant(text_block(f"answer {n}"))]
    lines = recap_lines(messages)
    assert lines[0] == "… 2 earlier exchanges"
    assert lines[1:3] == ["you: question 2", "memagent: answer 2"]
    assert lines[-1].startswith("It stopped after the answer above")
    tool_use = {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}
    cut = [_user("run it"), _assistant(text_block("Running."), tool_use)]
    assert "  (1 tool call: bash)" in recap_lines(cut)
    assert recap_lines(cut)[-1].startswith("It stopped while a tool call was running")
    assert recap_lines([_user("unanswered")])[-1].startswith("It stopped before the last message got an answer")
    assert recap_lines([]) == []


@dataclass
class FakeReport:
    actions: list[str]

    def count(self, action: str) -> int:
        return self.actions.count(action)


def test_what_was_learned_is_summed_over_reports():
    counts = learned_counts([FakeReport(["ADD", "NOOP"]), FakeReport(["ADD", "UPDATE"]), object()])
    assert counts == {"saved": 2, "updated": 1, "pending": 0}
    assert learned_summary(counts) == (
        "Learned this session: 2 memories saved, 1 updated; review them with `memagent memory review`"
    )
    assert learned_summary({"saved": 0, "updated": 0, "pending": 0}) is None
    assert "1 waiting for your review" in learned_summary({"saved": 0, "updated": 0, "pending": 1})


def test_session_picker_numbers_recent_sessions_and_reads_a_choice(tmp_path):
    from memagent.cli.chat import pick_session

    root = tmp_path / "project"
    root.mkdir()
    ids = []
    for question in ("older one", "newer one"):
        if ids:
            time.sleep(1.1)  # session ids and start times have a one-second resolution
        session = open_session(SessionOptions(root=root, memory=False), model=ScriptedModel([reply("ok")]))
        list(session.agent.run_turn(question))
        session.close()
        ids.append(session.session_id)
    paths = project_paths(root)
    out = io.StringIO()
    assert pick_session(paths, io.StringIO("\n"), out) == ids[1]  # Enter: the newest
    assert "1. " in out.getvalue() and "newer one" in out.getvalue()
    assert pick_session(paths, io.StringIO("7\n2\n"), io.StringIO()) == ids[0]  # a bad answer asks again
    assert pick_session(paths, io.StringIO("q\n"), io.StringIO()) is None
    assert pick_session(project_paths(tmp_path), io.StringIO(""), io.StringIO()) is None  # none yet


def test_settings_threshold_is_what_the_status_line_shows():
    assert Settings().compaction_threshold == 50_000


def test_memory_stats_say_card_in_the_singular():
    from memagent.ui.commands import format_memory_stats

    assert format_memory_stats({"active": 1, "total": 1}).startswith("memory: 1 active card (1 in all)")
