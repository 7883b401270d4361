"""The two renderers of the agent's event stream, fed scripted events and real agent turns."""

from __future__ import annotations

import io

from rich.console import Console

from memagent.events import (
    AssistantText,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    WaitingForModel,
)
from memagent.llm.scripted import reply, tool_call
from memagent.ui.render import PrintRenderer, ReplRenderer, TailView, call_label, one_line, result_preview


def test_result_preview_shows_first_line_and_how_many_more():
    assert result_preview("first line\nsecond\n\nthird\n") == "first line (+2 lines)"
    assert result_preview("") == "(no output)"
    assert result_preview("   \n\n") == "(no output)"
    long = "x" * 300
    preview = result_preview(long)
    assert len(preview) == 100 and preview.endswith("…")


def test_one_line_collapses_whitespace():
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("abcdef", limit=4) == "abc…"


def test_call_label():
    assert call_label("bash", "pytest -q") == "bash(pytest -q)"
    assert call_label("task_list", "") == "task_list"


def _tool_events(is_error=False):
    return [
        ToolCallStarted("t1", "bash", {"command": "ls"}, "ls"),
        ToolCallFinished("t1", "bash", "Error: boom\nmore" if is_error else "a.txt\nb.txt", is_error),
    ]


def test_print_renderer_writes_one_plain_line_per_tool_call():
    err = io.StringIO()
    renderer = PrintRenderer(err=err, color=False)
    for event in [TurnStarted(1), WaitingForModel(), AssistantText("ok"), *_tool_events()]:
        renderer.handle(event)
    renderer.handle(TurnEnded("end_turn", final_text="done"))
    assert err.getvalue() == "• bash(ls) → a.txt (+1 line)\n"
    assert renderer.outcome.final_text == "done" and not renderer.outcome.failed


def test_print_renderer_colours_errors_only_on_a_terminal():
    plain, coloured = io.StringIO(), io.StringIO()
    for buffer, color in ((plain, False), (coloured, True)):
        renderer = PrintRenderer(err=buffer, color=color)
        for event in _tool_events(is_error=True):
            renderer.handle(event)
    assert plain.getvalue() == "• bash(ls) ✗ Error: boom (+1 line)\n"
    assert "\x1b[" not in plain.getvalue()
    assert coloured.getvalue() == "\x1b[31m• bash(ls) ✗ Error: boom (+1 line)\x1b[0m\n"


def test_print_renderer_keeps_notices_on_stderr_and_records_errors():
    err = io.StringIO()
    renderer = PrintRenderer(err=err)
    renderer.handle(Notice("compacted 12 messages", "info"))
    renderer.handle(TurnEnded("error", error="overloaded"))
    assert err.getvalue() == "memagent: compacted 12 messages\n"
    assert renderer.outcome.failed and renderer.outcome.error == "overloaded"


def test_repl_renderer_shows_answer_tools_and_errors(console):
    con, buffer = console
    renderer = ReplRenderer(con)
    events = [
        TurnStarted(1),
        WaitingForModel(),
        AssistantText("Let me **look**"),
        AssistantText(" at the files."),
        *_tool_events(),
        WaitingForModel(),
        AssistantText("# Result\n\n- two files"),
        TurnEnded("end_turn", final_text="# Result\n\n- two files"),
    ]
    for event in events:
        renderer.handle(event)
    renderer.finish()
    out = buffer.getvalue()
    assert "Let me look at the files." in out  # rendered Markdown: no ** markers
    assert "**" not in out
    assert "● bash(ls)" in out
    assert "⎿ a.txt (+1 line, /expand)" in out
    assert "Result" in out and "• two files" in out
    # the streamed text comes before the tool call, the final answer after its result
    assert out.index("Let me look") < out.index("● bash(ls)") < out.index("⎿ a.txt") < out.index("Result")
    assert out.count("Let me look") == 1


def test_repl_renderer_reports_cancel_and_error(console):
    con, buffer = console
    renderer = ReplRenderer(con)
    renderer.handle(AssistantText("partial"))
    renderer.handle(TurnEnded("cancelled", error="cancelled by the user"))
    renderer.handle(TurnEnded("error", error="the API is overloaded"))
    out = buffer.getvalue()
    assert "partial" in out
    assert "cancelled" in out
    assert "error: the API is overloaded" in out


def test_repl_renderer_pause_and_resume_spinner(console):
    con, _ = console
    renderer = ReplRenderer(con)
    renderer.handle(ToolCallStarted("t1", "bash", {"command": "sleep 1"}, "sleep 1"))
    assert renderer._live is not None  # the "Running bash…" spinner
    renderer.pause()
    assert renderer._live is None
    renderer.resume()
    assert renderer._live is not None
    renderer.finish()
    assert renderer._live is None


def test_tail_view_keeps_only_the_last_lines_that_fit():
    buffer = io.StringIO()
    con = Console(file=buffer, width=40, height=6, force_terminal=False, color_system=None)
    con.print(TailView("\n".join(f"line {i}" for i in range(20))))
    lines = buffer.getvalue().splitlines()
    assert [line.strip() for line in lines] == ["line 16", "line 17", "line 18", "line 19"]


def test_repl_renderer_renders_a_real_turn(make_agent, console):
    con, buffer = console
    agent = make_agent([reply("Reading.", tool_call("read_file", {"path": "missing.txt"})), reply("It is *missing*.")])
    renderer = ReplRenderer(con)
    for event in agent.run_turn("read missing.txt"):
        renderer.handle(event)
    renderer.finish()
    out = buffer.getvalue()
    assert "● read_file(missing.txt)" in out
    assert "It is missing." in out
    assert renderer.outcome.stop_reason == "end_turn"


def test_streaming_parses_markdown_when_drawn_not_per_delta(console, monkeypatch):
    import rich.markdown

    built = []
    original = rich.markdown.Markdown.__init__

    def counting_init(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(rich.markdown.Markdown, "__init__", counting_init)
    con, buffer = console
    renderer = ReplRenderer(con)
    for i in range(3000):
        renderer.handle(AssistantText(f"word{i} "))
    renderer.handle(TurnEnded("end_turn"))
    assert len(built) <= 2  # the final print (plus at most one live frame), not 3000 parses
    assert "word0 word1" in buffer.getvalue() and "word2999" in buffer.getvalue()


def test_streaming_markdown_draws_its_text_as_markdown():
    from memagent.ui.render import StreamingMarkdown

    buffer = io.StringIO()
    con = Console(file=buffer, width=60, height=20, force_terminal=False, color_system=None)
    answer = StreamingMarkdown()
    for part in ("Use **", "pytest", "** here"):
        answer.append(part)
    con.print(answer)
    assert buffer.getvalue().strip() == "Use pytest here"


def test_tool_result_preview_fits_a_narrow_terminal():
    buffer = io.StringIO()
    con = Console(file=buffer, width=40, force_terminal=False, color_system=None)
    renderer = ReplRenderer(con)
    renderer.handle(ToolCallStarted("t1", "edit_file", {}, "a.py"))
    renderer.handle(ToolCallFinished("t1", "edit_file", "The user did not approve this edit_file call " * 3, True))
    renderer.finish()
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "● edit_file(a.py)"
    assert len(lines) == 2 and lines[1].startswith("  ⎿ The user did not") and len(lines[1]) <= 40
