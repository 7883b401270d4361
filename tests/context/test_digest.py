"""The rule-based digest and the summary head: the user's words are told from injected text by
their items (an injected text carries its kind; its opening words decide nothing)."""

from __future__ import annotations

from memagent.context.digest import deterministic_digest
from memagent.context.resume import load_session
from memagent.context.summary import request_texts, summary_head, turn_request_text
from memagent.context.transcript import TranscriptWriter
from memagent.llm.items import injected
from memagent.llm.scripted import tool_call
from memagent.llm.types import text_block, tool_result_block
from memagent.markers import INTERRUPTED_TOOL, Marker, block, reminder


def user(*parts: str | dict) -> dict:
    return {"role": "user", "content": [text_block(p) if isinstance(p, str) else p for p in parts]}


def interrupted() -> dict:
    return injected(Marker.INTERRUPTED_REQUEST, Marker.INTERRUPTED_REQUEST.value)


def memories(text: str) -> dict:
    return injected(Marker.MEMORIES, block(Marker.MEMORIES, text))


def test_user_words_in_brackets_are_requests_and_injected_blocks_are_not():
    messages = [
        user(
            interrupted(),
            "[WIP] fix the bug in <parser>; we must never touch the public API.",
            memories("[Memory#m1] the parser lives in src/parse.py"),
            injected(Marker.REMINDER, reminder("update your todo list")),
        ),
        {"role": "assistant", "content": [tool_call("read_file", {"path": "src/parse.py"}, id="toolu_1")]},
        {"role": "user", "content": [tool_result_block("toolu_1", "ValueError: bad token", is_error=True)]},
        {"role": "assistant", "content": [text_block("The tokenizer rejects '<'.")]},
    ]
    digest = deterministic_digest(messages, "HTTP 500")
    requests = digest.split("User requests:\n")[1].split("\n\n")[0].splitlines()
    assert requests == ["- [WIP] fix the bug in <parser>; we must never touch the public API."]
    assert "- [WIP] fix the bug in <parser>; we must never touch the public API." in digest.split("Decisions")[1]
    assert "[Memory#m1]" not in digest and "update your todo list" not in digest
    assert "- src/parse.py" in digest and "- ValueError: bad token" in digest
    assert digest.startswith("(Summary model unavailable: HTTP 500.")
    assert digest.endswith("Last assistant message:\nThe tokenizer rejects '<'.")


def test_an_earlier_digest_is_merged_not_nested():
    first = deterministic_digest([user("[WIP] first request"), {"role": "assistant", "content": [text_block("ok")]}])
    head = summary_head(first, [], ".transcripts/s.jsonl", None)
    second = deterministic_digest([{"role": "user", "content": head + [text_block("<b>second</b> request")]}])
    assert second.count("(A digest of the earlier conversation") == 1
    assert "- [WIP] first request\n- <b>second</b> request" in second


def test_the_request_carried_over_a_mid_turn_cut_keeps_bracketed_user_text():
    opening = user(interrupted(), "[WIP] fix the bug", memories("[Memory#m1] x"))
    assert request_texts(opening) == ["[WIP] fix the bug"]
    messages = [
        opening,
        {"role": "assistant", "content": [tool_call("bash", {"command": "pytest"}, id="toolu_1")]},
        {"role": "user", "content": [tool_result_block("toolu_1", INTERRUPTED_TOOL, is_error=True)]},
        {"role": "assistant", "content": [text_block("Retrying.")]},
    ]
    assert turn_request_text(messages, 3) == "[WIP] fix the bug"
    carried = {"role": "user", "content": summary_head("s", [], "w", "[WIP] fix the bug")}
    assert request_texts(carried) == ["[WIP] fix the bug"]


def test_the_head_is_byte_identical_to_what_earlier_versions_wrote(tmp_path):
    head = summary_head(" the summary \n", ["todo: 1 item ", "tasks: none"], ".transcripts/s1.jsonl", "do it")
    assert [b["text"] for b in head] == [
        "[This session was compacted to save context. Summary of the earlier conversation:]\n"
        "<summary>\nthe summary\n</summary>\n"
        "[Full transcript: .transcripts/s1.jsonl. The recall tool searches it and returns any earlier tool output exactly.]",
        "[Current state, re-injected from its stores (authoritative over the summary):]\n\ntodo: 1 item\n\ntasks: none",
        "[The user's request for the turn in progress, verbatim:]\ndo it",
    ]
    # a transcript with a compaction record resumes to exactly that head
    writer = TranscriptWriter.open(tmp_path, "s1")
    writer.message({"role": "user", "content": [text_block("old")]})
    writer.message({"role": "assistant", "content": [text_block("old answer")]})
    kept = writer.message({"role": "user", "content": [text_block("new")]})
    writer.append(
        {
            "type": "compaction",
            "summary": " the summary \n",
            "reinjected": ["todo: 1 item ", "tasks: none"],
            "current_request": "do it",
            "transcript_name": ".transcripts/s1.jsonl",
            "kept_from": kept,
        }
    )
    writer.close()
    resumed = load_session(tmp_path, "s1")
    assert resumed.messages == [{"role": "user", "content": head + [text_block("new")]}]


def test_user_words_that_open_like_injected_text_are_the_users_own():
    """The user may type a marker's opening words; only what memagent injected is injected."""
    typed = [reminder("keep the API"), block(Marker.MEMORIES, "I wrote this myself"), Marker.INTERRUPTED_REQUEST.value]
    digest = deterministic_digest([user(*typed), {"role": "assistant", "content": [text_block("ok")]}])
    requests = digest.split("User requests:\n")[1].split("\n\n")[0].splitlines()
    assert requests == ["- " + " ".join(t.split()) for t in typed]
    assert request_texts(user(*typed)) == typed


def test_a_carried_request_is_known_by_its_item_not_its_words():
    typed = block(Marker.CURRENT_REQUEST, "not carried: typed")
    assert request_texts(user("first", typed)) == ["first", typed]
    carried = user(injected(Marker.CURRENT_REQUEST, block(Marker.CURRENT_REQUEST, "the request")), "ignored")
    assert request_texts(carried) == ["the request"]
