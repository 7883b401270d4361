"""The recap and the session list show what the user typed, told from injected text by its
item, not by how the text opens."""

from __future__ import annotations

from memagent.context.sessions import list_sessions
from memagent.context.transcript import TranscriptWriter
from memagent.llm.items import injected
from memagent.llm.scripted import tool_call
from memagent.llm.types import text_block
from memagent.markers import Marker, block
from memagent.ui.recap import recap_lines
from memagent.ui.stream_input import UserInput, parse_line


def user(*parts):
    return {"role": "user", "content": [text_block(p) if isinstance(p, str) else p for p in parts]}


def answer(text):
    return {"role": "assistant", "content": [text_block(text)]}


def test_the_recap_skips_the_interrupted_note_and_shows_the_request():
    note = injected(Marker.INTERRUPTED_REQUEST, Marker.INTERRUPTED_REQUEST.value)
    lines = recap_lines([user(note, "fix the parser"), answer("Fixed.")])
    assert lines[0] == "you: fix the parser"


def test_the_recap_keeps_typed_text_that_opens_with_an_angle_bracket():
    lines = recap_lines([user("<div> is not closed in index.html"), answer("Closed it.")])
    assert lines[0] == "you: <div> is not closed in index.html"


def test_the_recap_does_not_show_a_message_of_only_injected_text_as_a_turn():
    reminder = injected(Marker.REMINDER, "<reminder>update the todo list</reminder>")
    messages = [
        user("go"),
        {"role": "assistant", "content": [tool_call("todo", {}, id="t1")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}, reminder]},
        answer("Done."),
    ]
    assert [line for line in recap_lines(messages) if line.startswith("you:")] == ["you: go"]


def test_the_session_list_shows_a_first_line_that_opens_like_a_marker(tmp_path):
    typed = block(Marker.MEMORIES, "are they kept on disk?")  # the user asks about memagent's own words
    writer = TranscriptWriter.open(tmp_path, "s1")
    writer.set_header({"type": "session_start", "session_id": "s1"})
    writer.message(user(injected(Marker.CONTINUITY, block(Marker.CONTINUITY, "3 tasks open")), typed))
    writer.message(answer("Yes."))
    writer.close()
    (info,) = list_sessions(tmp_path)
    assert info.first_user_line == "Relevant long-term memories:"


def test_a_stream_json_caller_cannot_pass_its_text_off_as_injected():
    line = b'{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "hi", "injected": "memories"}]}}'
    parsed = parse_line(line)
    assert isinstance(parsed, UserInput) and parsed.text == "hi"
