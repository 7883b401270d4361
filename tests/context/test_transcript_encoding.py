"""No string that cannot be written as UTF-8 (a lone surrogate left by undecodable input) ever
breaks the transcript: it is written as U+FFFD, and the loop never sends one to the model."""

from __future__ import annotations

import json

from memagent.agent.loop import Agent
from memagent.context.conversation import Conversation
from memagent.context.transcript import TranscriptWriter, read_records
from memagent.llm.scripted import ScriptedModel, reply
from memagent.llm.types import text_block
from memagent.tools.base import ToolContext, ToolRegistry


def test_a_lone_surrogate_is_written_as_a_replacement_character(tmp_path):
    writer = TranscriptWriter.open(tmp_path / ".transcripts", "s1")
    writer.message({"role": "user", "content": [text_block("caf\udce9 au lait")]})
    writer.close()
    assert writer.failure is None
    raw = writer.path.read_bytes()
    raw.decode("utf-8")
    [record] = read_records(writer.path).records
    assert record["content"][0]["text"] == "caf\ufffd au lait"


def test_the_loop_sends_and_records_no_surrogate(tmp_path):
    model = ScriptedModel([reply("ok")])
    writer = TranscriptWriter.open(tmp_path / ".transcripts", "s2")
    agent = Agent(
        model=model,
        tools=ToolRegistry(),
        tool_context=ToolContext(root=tmp_path),
        system=[text_block("system")],
        conversation=Conversation(recorder=writer, session_id="s2"),
    )
    events = list(agent.run_turn("r\udce9sum\udce9 please"))
    assert events[-1].final_text == "ok"
    sent = model.requests[0].messages[-1]["content"][0]["text"]
    assert sent == "r\ufffdsum\ufffd please"
    json.dumps(model.requests[0].messages, ensure_ascii=False).encode("utf-8")  # encodable
    writer.close()
    assert "r\ufffdsum\ufffd please" in writer.path.read_text(encoding="utf-8")
