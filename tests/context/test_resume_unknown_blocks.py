"""A transcript block of a type the API does not know is dropped on resume with a warning
(sending it would make every request fail with a 400)."""

from __future__ import annotations

import json

from memagent.context.resume import load_session
from memagent.llm.invariants import request_problems


def write(directory, records):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "s1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def message(number, role, *blocks):
    return {"type": "message", "id": str(number), "role": role, "content": list(blocks)}


def test_unknown_blocks_are_dropped_with_a_warning(tmp_path):
    directory = tmp_path / ".transcripts"
    write(
        directory,
        [
            {"type": "session_start", "session_id": "s1"},
            message(1, "user", {"type": "text", "text": "hello"}, {"type": "hologram", "data": "x"}),
            message(2, "assistant", {"type": "telepathy", "data": "x"}),
            message(3, "user", {"type": "text", "text": "still there?"}),
            message(4, "assistant", {"type": "text", "text": "yes"}),
        ],
    )
    resumed = load_session(directory, "s1")
    types = [block["type"] for m in resumed.messages for block in m["content"]]
    assert "hologram" not in types and "telepathy" not in types
    assert request_problems(resumed.messages) == []
    assert any("unknown type hologram" in w for w in resumed.warnings)
    assert any("unknown type telepathy" in w for w in resumed.warnings)
    texts = [block.get("text") for m in resumed.messages for block in m["content"]]
    assert "hello" in texts and "still there?" in texts and "yes" in texts


def test_known_blocks_pass_untouched(tmp_path):
    directory = tmp_path / ".transcripts"
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    write(
        directory,
        [
            message(1, "user", {"type": "text", "text": "hi"}),
            message(2, "assistant", thinking, {"type": "text", "text": "hello"}),
        ],
    )
    resumed = load_session(directory, "s1")
    assert resumed.warnings == [] and resumed.messages[1]["content"][0] == thinking
