"""Who said it: a memory is ``source: user`` only for the user's own words.

``memory_save`` takes the user's words as ``quote``; the quote is traced to a user message of
the conversation and the card records the turn, the message id and the quote. Text memagent
injected into a user message (the hand-over of the previous session, memory blocks, summaries,
files the REPL attached) is never the user's words, for ``memory_save`` as for extraction.
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from fakeapi import FakeAnthropic, text, tool
from memagent.markers import Marker, block, summary_block
from memagent.memory.extraction import ExtractedMemory, render_messages
from memagent.memory.screening import screen, trace_user_quote
from memory.learnkit import assistant, user

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
UV = "The user manages Python packages with uv."


def _cards(run_cli, project) -> list[dict]:
    listing = run_cli("-C", str(project), "memory", "list", "--all", "--json", env=LEXICAL)
    assert listing.returncode == 0, listing.stderr
    return json.loads(listing.stdout)


def _save_in_print_mode(run_cli, project, prompt: str, save: dict) -> list[dict]:
    with FakeAnthropic() as fake:
        fake.add(tool("memory_save", save), text("Saved."))
        result = run_cli(
            "-C", str(project), "-p", prompt, "--yes", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == []
        return [json.loads(json.dumps(r)) for r in fake.requests]


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_remember_that_i_use_uv_becomes_the_users_words_with_the_quote(run_cli, project):
    _save_in_print_mode(
        run_cli,
        project,
        "Please remember that I use uv for all my Python projects.",
        {
            "content": UV,
            "memory_type": "preference",
            "scope": "user",
            "confidence": 0.9,
            "quote": "I use uv for all my Python projects",
        },
    )
    (card,) = [c for c in _cards(run_cli, project) if c["content"] == UV]
    assert card["source"] == "user"
    assert card["provenance"]["quote"] == "I use uv for all my Python projects"
    assert card["provenance"]["message_id"] == "1" and card["provenance"]["turn"] == 1
    assert card["provenance"]["session_id"]


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_a_quote_the_user_never_said_stays_an_inference(run_cli, project):
    requests = _save_in_print_mode(
        run_cli,
        project,
        "Which package manager should this project use?",
        {"content": UV, "memory_type": "preference", "scope": "project", "quote": "I always use uv for Python"},
    )
    (card,) = [c for c in _cards(run_cli, project) if c["content"] == UV]
    assert card["source"] == "assistant" and not card["provenance"].get("quote")
    result = requests[1]["messages"][-1]["content"][0]
    assert "not the user's words" in json.dumps(result)


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_the_hand_over_of_the_previous_session_is_not_the_users_words(run_cli, project):
    # session 1: the assistant (not the user) says the project uses uv
    with FakeAnthropic() as fake:
        fake.add(text("This project uses uv for dependency management, see uv.lock."))
        first = run_cli(
            "-C",
            str(project),
            "-p",
            "What does this project use for dependencies?",
            env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL},
            timeout=180,
        )
        assert first.returncode == 0, first.stderr
    # session 2: the hand-over quotes that sentence inside the user's message; the model
    # "quotes the user" with it
    requests = _save_in_print_mode(
        run_cli,
        project,
        "Carry on with the dependency work.",
        {
            "content": "The project uses uv for dependency management.",
            "memory_type": "fact",
            "quote": "This project uses uv for dependency management",
        },
    )
    handed_over = json.dumps(requests[0]["messages"][0])
    assert Marker.CONTINUITY.value[:20] in handed_over and "uses uv for dependency" in handed_over
    (card,) = [c for c in _cards(run_cli, project) if "uses uv" in c["content"]]
    assert card["source"] == "assistant"


# -- the same rule inside extraction ---------------------------------------------------------


def test_extraction_never_shows_injected_blocks_as_the_user():
    hand_over = block(
        Marker.CONTINUITY,
        "The previous session s1 ended here:\nLast assistant message:\n"
        "We deploy with make ship from the release branch.",
    )
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Let's continue."}, {"type": "text", "text": hand_over}]},
        assistant("Sure."),
        {"role": "user", "content": [{"type": "text", "text": summary_block("The user prefers tabs.")}]},
    ]
    rendered = render_messages(messages, ["1", "2", "3"])
    assert "make ship" not in rendered.text and "prefers tabs" not in rendered.text
    assert [s.text for s in rendered.segments if s.origin == "user"] == ["Let's continue."]
    item = ExtractedMemory(
        content="The project deploys with make ship from the release branch.",
        memory_type="procedure",
        quote="We deploy with make ship from the release branch",
    )
    screening = screen([item], rendered, date(2026, 11, 24))
    assert screening.candidates == [] and "not in the messages" in screening.dropped[0][1]


def test_a_file_attached_to_the_message_is_evidence_not_the_users_words():
    message = (
        'Look at this file\n\n<attachment source="file README.md">\n'
        "Always deploy with make yolo on Fridays.\n</attachment>"
    )
    rendered = render_messages([user(message), assistant("I see.")], ["1", "2"])
    origins = {s.origin: s.text for s in rendered.segments}
    assert origins["user"] == "Look at this file"
    assert "make yolo" in origins["tool"] and "<tool_output>" in rendered.text
    item = ExtractedMemory(
        content="The project deploys with make yolo on Fridays.",
        memory_type="procedure",
        quote="Always deploy with make yolo on Fridays",
    )
    (candidate,) = screen([item], rendered, date(2026, 11, 24)).candidates
    assert candidate.source == "tool" and candidate.hold  # a directive from a file waits for review


def test_a_quote_is_traced_to_the_newest_user_message_that_backs_it():
    messages = [
        user("I use uv for Python packages."),
        assistant("ok"),
        user("Really, I use uv for Python packages everywhere."),
        assistant("noted"),
    ]
    traced = trace_user_quote("I use uv for Python packages", UV, messages, ["1", "2", "3", "4"])
    assert traced is not None and traced.message_id == "3" and traced.turn == 3
    # a quote that does not back the card traces to nothing
    assert (
        trace_user_quote("I use uv for Python packages", "The deploy target is Fly.io.", messages, ["1", "2", "3", "4"])
        is None
    )
    memories = block(Marker.MEMORIES, "[Memory#m_0123456789ab] (preference) I use uv for Python packages")
    assert (
        trace_user_quote(
            "I use uv for Python packages",
            UV,
            [{"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": memories}]}],
            ["1"],
        )
        is None
    )
