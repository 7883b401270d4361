"""Text too large for the context: a preview and a file for the model, the whole text in the
transcript; requests measured before sending; "prompt is too long" makes the context smaller."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from context.ctx_harness import SMALL, PlannedBrain, new_harness
from memagent.config import Settings
from memagent.context.oversize import MIN_LIMIT_TOKENS, SAMPLE_CHARS, AttachmentShelf
from memagent.llm.scripted import FunctionModel, reply, tool_call
from memagent.llm.tokens import ratio_count
from memagent.llm.types import ModelRequest, PromptTooLongError, text_block, tool_result_block

SECRET = "sk-ant-api03-" + "Q" * 90


def shelf(tmp_path: Path, limit: int = 5_000) -> AttachmentShelf:
    return AttachmentShelf(
        tmp_path / ".transcripts" / "s1" / "attachments", ".transcripts/s1/attachments", limit, ratio_count
    )


def log_text(lines: int, tag: str = "log") -> str:
    return "".join(f"{tag} line {n}: something happened at step {n * 7}\n" for n in range(lines))


def test_a_text_above_the_limit_becomes_a_preview_and_a_private_redacted_file(tmp_path):
    big = log_text(20_000) + f"the key is {SECRET}\nLAST LINE\n"
    [fitted], found = shelf(tmp_path).fit([text_block(big)])
    [attached] = found
    preview = fitted["text"]
    assert preview.startswith("log line 0: ") and preview.rstrip().endswith("LAST LINE")
    assert len(preview) < 5_000 and attached.path in preview and "read_file" in preview
    assert f"{attached.lines:,} lines" in preview and attached.kind == "message"
    saved = tmp_path / attached.path
    body = saved.read_text()
    assert body.startswith("log line 0: ") and "log line 19999:" in body and SECRET not in body
    assert "[REDACTED" in body and body.endswith("LAST LINE\n")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    assert "Your message" in attached.note() and attached.path in attached.note()


def test_small_text_is_untouched_and_the_same_text_reuses_its_file(tmp_path):
    one = shelf(tmp_path)
    small = [text_block("hello"), {"type": "image", "source": {"type": "base64", "data": "x"}}]
    fitted, found = one.fit(small)
    assert found == [] and all(a is b for a, b in zip(fitted, small))
    big = log_text(5_000)
    _, first = one.fit([text_block(big)])
    _, second = one.fit([text_block(big)])
    assert first[0].path == second[0].path and len(list(one.directory.iterdir())) == 1
    other = AttachmentShelf(
        tmp_path / ".transcripts" / "s2" / "attachments", ".transcripts/s2/attachments", 5_000, ratio_count
    )
    _, again = other.fit([text_block(big)])
    linked = tmp_path / again[0].path
    assert linked.read_text() == big and os.stat(linked).st_ino == os.stat(tmp_path / first[0].path).st_ino


def test_a_huge_text_is_measured_by_its_start_and_a_text_near_the_limit_whole(tmp_path):
    asked: list[int] = []

    def counting(text: str) -> int:
        asked.append(len(text))
        return ratio_count(text)

    huge = log_text(200_000)  # ~10 MB: its first 256 KB are already far above the limit
    one = AttachmentShelf(tmp_path / "a", "a", 5_000, counting)
    [_], [attached] = one.fit([text_block(huge)])
    assert max(asked) == SAMPLE_CHARS and abs(attached.tokens - ratio_count(huge)) < ratio_count(huge) // 20
    asked.clear()
    near = log_text(12_000)  # ~600 KB, but a limit its start does not reach: counted whole, then kept
    fitted, found = AttachmentShelf(tmp_path / "b", "b", ratio_count(near) + 10, counting).fit([text_block(near)])
    assert found == [] and fitted[0]["text"] == near and max(asked) == len(near)


def test_tool_outputs_as_strings_and_as_block_lists_keep_their_images_and_flags(tmp_path):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    as_list = tool_result_block("toolu_1", log_text(5_000, "out"), images=[image])
    as_text = tool_result_block("toolu_2", log_text(5_000, "err"), is_error=True)
    fitted, found = shelf(tmp_path).fit([as_list, as_text])
    assert [a.kind for a in found] == ["tool output", "tool output"]
    assert fitted[0]["tool_use_id"] == "toolu_1" and fitted[0]["content"][1] == image
    assert "out line 0" in fitted[0]["content"][0]["text"] and "This tool output is" in fitted[0]["content"][0]["text"]
    assert fitted[1]["is_error"] is True and "err line 4999" in fitted[1]["content"]


def test_a_text_of_very_long_lines_says_how_to_read_them(tmp_path):
    minified = ("var a=1;" * 40_000) + "\n"
    [fitted], [attached] = shelf(tmp_path).fit([text_block(minified)])
    assert attached.lines == 1 and "fold" in fitted["text"] and "320,000 characters" in fitted["text"]


def settings(**kwargs) -> Settings:
    return Settings(small_model=SMALL, tokenizer="bytes", **kwargs)


def texts(messages) -> str:
    """Every text of the messages (text blocks and tool results), joined."""
    from memagent.llm.types import tool_result_text

    found = []
    for message in messages:
        for block in message["content"]:
            found.append(
                block.get("text") or tool_result_text(block.get("content")) if block.get("type") != "tool_use" else ""
            )
    return "\n".join(found)


def request_chars(request: ModelRequest) -> int:
    return sum(len(str(m["content"])) for m in request.messages)


def test_a_huge_message_reaches_the_model_as_a_preview_and_the_transcript_keeps_it_whole(tmp_path):
    brain = PlannedBrain().add(reply("I looked at the start and the end."), reply("fine"))
    harness = new_harness(tmp_path, brain, settings=settings(compact_tokens=50_000), shelf=True)
    paste = "Please look at this log:\n" + log_text(30_000)
    ended = harness.turn(paste)
    assert ended.final_text == "I looked at the start and the end."
    [request] = harness.main_requests()
    assert request_chars(request) < 20_000
    sent = request.messages[-1]["content"][0]["text"]
    assert sent.startswith("Please look at this log:") and ".transcripts/20261121-100000-aaaa/attachments/" in sent
    assert any("too large to send whole" in n for n in harness.notices())
    [record] = [r for r in harness.records() if r["type"] == "message" and r["role"] == "user"]
    assert record["content"][0]["text"] == paste and record["sent_as_preview"] is True
    assert harness.turn("and the second question?").final_text == "fine"
    harness.assert_requests_valid()


def test_a_request_over_the_window_is_measured_and_made_smaller_before_it_is_sent(tmp_path):
    brain = PlannedBrain()
    for number in range(4):
        brain.add(reply(tool_call("read_file", {"path": f"big{number}.log"})))
    brain.add(reply("Read all four."))
    harness = new_harness(
        tmp_path,
        brain,
        settings=settings(compact_tokens=10**9, inline_max_tokens=60_000),
        shelf=True,
        sizes={f"big{n}.log": 190_000 for n in range(4)},
    )
    budget = harness.policy.request_budget
    assert harness.turn("read the four logs").final_text == "Read all four."
    sizes = [harness.policy.counter.estimate_messages(r.messages) for r in harness.main_requests()]
    assert max(sizes) < budget, sizes  # without the measure the last request would carry ~190k tokens
    assert any("The context was too large for the model: set aside" in n for n in harness.notices())
    last = harness.main_requests()[-1].messages
    assert "FILE big0.log" in texts(last) and "attachments/tool-output-" in texts(last)
    harness.assert_requests_valid()


class TooLongAbove:
    """A brain whose "API" answers prompt-is-too-long above a number of characters."""

    def __init__(self, limit: int, answers: list) -> None:
        self.limit, self.answers, self.rejected = limit, list(answers), 0

    def __call__(self, request: ModelRequest):
        if request_chars(request) > self.limit:
            self.rejected += 1
            raise PromptTooLongError(
                f"prompt is too long: {request_chars(request) // 4} tokens > {self.limit // 4} maximum"
            )
        return self.answers.pop(0)


def test_prompt_too_long_sets_aside_tool_outputs_first_and_the_turn_goes_on(tmp_path):
    brain = TooLongAbove(170_000, [reply(tool_call("read_file", {"path": "dump.txt"})), reply("Summarised the dump.")])
    harness = new_harness(
        tmp_path,
        brain,
        settings=settings(compact_tokens=10**9, inline_max_tokens=40_000),
        shelf=True,
        sizes={"dump.txt": 120_000},
    )
    question = "Here is my spec:\n" + log_text(2_000, "spec")  # ~90 KB: under the inline limit, sent whole
    ended = harness.turn(question)
    assert ended.final_text == "Summarised the dump." and brain.rejected == 1
    last = harness.main_requests()[-1].messages
    assert question in texts(last)  # the user's words were kept; the tool output went first
    assert "attachments/tool-output-" in texts(last)
    assert any("making the context smaller" in n for n in harness.notices())
    harness.assert_requests_valid()


def test_prompt_too_long_then_sets_aside_the_users_text_and_finally_compacts(tmp_path):
    brain = TooLongAbove(60_000, [reply("Got it.")])
    harness = new_harness(
        tmp_path, brain, settings=settings(compact_tokens=10**9, inline_max_tokens=40_000), shelf=True
    )
    question = "Here is my spec:\n" + log_text(2_000, "spec")
    assert harness.turn(question).final_text == "Got it." and brain.rejected == 1
    assert "attachments/message-" in texts(harness.main_requests()[-1].messages)

    compacting = PlannedBrain()
    for number in range(5):
        compacting.add(reply(f"answer {number}"))
    small = new_harness(tmp_path / "b", compacting, settings=settings(compact_tokens=10**9), shelf=True)
    for number in range(5):
        small.turn(f"question {number}: " + "some detail about the module " * 80)
    compacting.add(PromptTooLongError("prompt is too long"), reply("after compacting"))
    assert small.turn("one more").final_text == "after compacting"  # nothing big to set aside: compaction
    assert any(n.startswith("Compacted") for n in small.notices())
    assert MIN_LIMIT_TOKENS <= small.policy.shelf.limit_tokens


class CountingModel(FunctionModel):
    """A model whose server has a count-tokens endpoint answering ``exact`` (or failing)."""

    def __init__(self, fn, exact: int | Exception) -> None:
        super().__init__(fn)
        self.exact, self.counted = exact, 0

    def count_tokens(self, request: ModelRequest) -> int:
        self.counted += 1
        if isinstance(self.exact, Exception):
            raise self.exact
        return self.exact


def test_near_the_window_the_exact_count_decides_and_a_missing_endpoint_is_estimated_quietly(tmp_path):
    from memagent.llm.types import ModelError

    def run(exact: int | Exception, root: Path):
        brain = PlannedBrain().add(reply("ok"), reply("ok again"))
        harness = new_harness(
            root, brain, settings=settings(compact_tokens=10**9, inline_max_tokens=190_000), shelf=True
        )
        counting = CountingModel(harness.model.fn, exact)
        harness.policy.model = counting
        near = "x " * int(harness.policy.request_budget * 4 * 0.85 / 2)  # 85% of the budget, by estimate
        harness.turn(near)
        harness.turn("next")
        return harness, counting

    over, counting = run(10**7, tmp_path / "over")
    assert counting.counted >= 1 and "attachments/message-" in texts(over.main_requests()[0].messages)
    under, counting = run(1_000, tmp_path / "under")
    assert "attachments" not in texts(under.main_requests()[0].messages)
    missing, counting = run(ModelError("404 not found"), tmp_path / "missing")
    assert counting.counted == 1  # tried once, then estimates only
    assert missing.turn("third").final_text == "done"
