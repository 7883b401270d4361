"""Terminal escape sequences in user data (task subjects, memory text, transcripts, tool calls
and tool output) are shown escaped, never sent raw, by the renderers and the CLI listings."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from memagent.cli.main import app
from memagent.context.conversation import Conversation
from memagent.context.transcript import TranscriptWriter
from memagent.events import Notice, ToolCallFinished, ToolCallStarted, ToolProgress
from memagent.llm.types import text_block, tool_result_block
from memagent.ui.render import PrintRenderer, ReplRenderer, output_tail
from memagent.ui.safe_text import printable, printable_data

CLEAR = "\x1b[2J"  # clears the screen
TITLE = "\x1b]0;pwned\x07"  # sets the window title
RAW = ("\x1b", "\x07", "\x9b", "\u202e")
runner = CliRunner()


def assert_no_raw_controls(text: str) -> None:
    assert not any(char in text for char in RAW), repr(text)


def test_printable_escapes_controls_and_keeps_newlines_and_tabs() -> None:
    assert printable(f"a{CLEAR}b\tc\nd") == "a\\x1b[2Jb\tc\nd"
    assert printable(TITLE) == "\\x1b]0;pwned\\x07"
    assert printable("csi\x9b31m rtl\u202eevil.exe") == "csi\\x9b31m rtl\\u202eevil.exe"
    assert printable("dos\r\nline\rover") == "dos\nline\\rover"
    assert printable("one\ntwo", newlines=False) == "one\\ntwo"
    assert printable("héllo → ✓ 日本") == "héllo → ✓ 日本"  # ordinary text is untouched
    assert printable_data({"a": [f"x{CLEAR}", 3], "b": None}) == {"a": ["x\\x1b[2J", 3], "b": None}


def test_print_mode_lines_are_escaped() -> None:
    err = io.StringIO()
    renderer = PrintRenderer(err=err, color=True)
    renderer.handle(ToolCallStarted("t1", "bash", {}, summary=f"echo {TITLE}"))
    renderer.handle(ToolCallFinished("t1", "bash", f"{CLEAR}output\n[exit code: 0]"))
    renderer.handle(Notice(f"note {CLEAR}", "error"))
    out = err.getvalue().replace("\x1b[31m", "").replace("\x1b[0m", "")  # our own red, on a terminal
    assert_no_raw_controls(out)
    assert "bash(echo \\x1b]0;pwned\\x07) → \\x1b[2Joutput" in out


def test_repl_tool_header_preview_and_live_output_are_escaped() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=100, color_system=None)
    renderer = ReplRenderer(console)
    renderer.handle(ToolCallStarted("t1", "bash", {}, summary=f"printf {TITLE}"))
    renderer.handle(ToolProgress("t1", "bash", f"step {CLEAR}\n", 0.5))
    renderer.handle(ToolCallFinished("t1", "bash", f"step {CLEAR}\n[exit code: 0]"))
    renderer.finish()
    assert_no_raw_controls(buffer.getvalue())
    assert "bash(printf \\x1b]0;pwned\\x07)" in buffer.getvalue()
    assert "⎿ step \\x1b[2J (+1 line, /expand)" in buffer.getvalue()
    assert output_tail("10%\r50%\r100%\nnext\n") == ["100%", "next"]  # a progress bar shows its last state


def test_tasks_list_and_show_escape_subjects(tmp_path) -> None:
    root = str(tmp_path)
    added = runner.invoke(app, ["tasks", "add", f"Fix {CLEAR}login", "--desc", f"body {TITLE}", "-C", root])
    assert added.exit_code == 0, added.output
    for args in (["tasks", "list"], ["tasks", "show", "1"], ["tasks", "tree"]):
        result = runner.invoke(app, [*args, "-C", root])
        assert result.exit_code == 0, result.output
        assert_no_raw_controls(result.output)
        assert "Fix \\x1b[2Jlogin" in result.output
    assert "body \\x1b]0;pwned\\x07" in runner.invoke(app, ["tasks", "show", "1", "-C", root]).output
    assert_no_raw_controls(added.output)


def test_sessions_show_and_list_escape_transcript_text(tmp_path) -> None:
    writer = TranscriptWriter.open(tmp_path / ".transcripts", "20261122-120000-abcd")
    conversation = Conversation(recorder=writer, session_id="20261122-120000-abcd")
    conversation.append("user", [text_block(f"hello {CLEAR}there")])
    conversation.append("assistant", [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": TITLE}}])
    conversation.append("user", [tool_result_block("t1", f"out {CLEAR}")])
    conversation.append("assistant", [text_block(f"done {TITLE}")])
    writer.close()
    listing = runner.invoke(app, ["sessions", "list", "-C", str(tmp_path)])
    shown = runner.invoke(app, ["sessions", "show", "20261122", "-C", str(tmp_path)])
    for result in (listing, shown):
        assert result.exit_code == 0, result.output
        assert_no_raw_controls(result.output)
    assert "hello \\x1b[2Jthere" in listing.output
    assert "out \\x1b[2J" in shown.output and "done \\x1b]0;pwned\\x07" in shown.output


def test_memory_list_and_show_escape_card_text(paths, embedder, monkeypatch) -> None:
    monkeypatch.setattr("memagent.embedding.embedders.load_embedder", lambda *args, **kwargs: embedder)
    root = str(paths.root)
    added = runner.invoke(app, ["memory", "add", f"The build uses {CLEAR}make and ninja", "--json", "-C", root])
    assert added.exit_code == 0, added.output
    card_id = __import__("json").loads(added.stdout)["card"]["id"]
    for args in (["memory", "list"], ["memory", "show", card_id]):
        result = runner.invoke(app, [*args, "-C", root])
        assert result.exit_code == 0, result.output
        assert_no_raw_controls(result.output)
        assert "\\x1b[2Jmake" in result.output
