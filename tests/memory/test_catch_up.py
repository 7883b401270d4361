"""Catch-up: a killed session's unmined turns are learned at the next start, once.

Through the real CLI and the fake Messages API: a ``-p`` session is killed with SIGKILL while the
model is answering (after the user stated a preference); the next start mines it in the
background and the card is there; later starts never mine it again. ``memory learn`` does the
same by hand. The plan (which sessions, how much) is checked on transcript records directly.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapi import FakeAnthropic, delay, text, tool
from memagent.memory.catchup import hold_live_mark, plan, record_mined, session_state
from memagent.memory.learning_history import LearningHistory
from memory.learnkit import Brain, Fact

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
TABS = Fact(
    "I always want tabs, never spaces", "The user wants tabs for indentation, never spaces.", "preference", scope="user"
)


def _cards(run_cli, project) -> list[dict]:
    listing = run_cli("-C", str(project), "memory", "list", "--all", "--json", env=LEXICAL)
    assert listing.returncode == 0, listing.stderr
    return json.loads(listing.stdout)


def _killed_session(cli_env, project) -> str:
    """A -p session killed with SIGKILL while the model answers its second request."""
    with FakeAnthropic() as fake:
        fake.add(tool("read_file", {"path": "README.md"}), delay(60, text("never sent")))
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memagent",
                "-C",
                str(project),
                "-p",
                "Note for this project: I always want tabs, never spaces. Now look at the README.",
            ],
            env={**cli_env, "ANTHROPIC_BASE_URL": fake.url, **LEXICAL},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert fake.wait_for_requests(2, timeout=120)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
    (transcript,) = (project / ".transcripts").glob("*.jsonl")
    return transcript.stem


@pytest.mark.timeout(600)  # several real CLI runs: slow on a loaded machine
def test_a_session_killed_after_a_stated_preference_is_learned_at_the_next_start(run_cli, cli_env, project):
    (project / "README.md").write_text("# demo\n")
    killed = _killed_session(cli_env, project)
    assert not [c for c in _cards(run_cli, project) if "tabs" in c["content"]]

    brain = Brain(facts=[TABS])
    with FakeAnthropic(responder=brain) as fake:
        result = run_cli(
            "-C", str(project), "-p", "hello", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == []
    assert len(brain.extraction_prompts) == 1 and TABS.trigger in brain.extraction_prompts[0]
    assert f"earlier session {killed}" in result.stderr and "learned 1 memory" in result.stderr
    (card,) = [c for c in _cards(run_cli, project) if c["content"] == TABS.content]
    assert card["source"] == "user" and card["provenance"]["session_id"] == killed

    # never mined twice: later starts and `memory learn` find nothing new
    with FakeAnthropic(responder=brain) as fake:
        again = run_cli(
            "-C", str(project), "-p", "hello again", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180
        )
        assert again.returncode == 0, again.stderr
        by_hand = run_cli(
            "-C", str(project), "memory", "learn", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180
        )
    assert by_hand.returncode == 0, by_hand.stderr
    assert "Nothing new to learn" in by_hand.stdout
    assert len(brain.extraction_prompts) == 1


@pytest.mark.timeout(600)  # several real CLI runs: slow on a loaded machine
def test_memory_learn_by_hand_mines_the_named_session(run_cli, cli_env, project):
    (project / "README.md").write_text("# demo\n")
    killed = _killed_session(cli_env, project)
    brain = Brain(facts=[TABS])
    with FakeAnthropic(responder=brain) as fake:
        env = {"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}
        missing = run_cli("-C", str(project), "memory", "learn", "--session", "nosuch", env=env)
        assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
        result = run_cli(
            "-C", str(project), "memory", "learn", "--session", killed[:12], "--json", env=env, timeout=180
        )
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)
    assert report["session_id"] == killed and len(report["stored"]) == 1 and report["error"] is None
    assert [c for c in _cards(run_cli, project) if c["content"] == TABS.content]


@pytest.mark.timeout(600)  # several real CLI runs: slow on a loaded machine
def test_a_failed_catch_up_is_said_and_retried_at_the_next_start(run_cli, cli_env, project):
    (project / "README.md").write_text("# demo\n")
    killed = _killed_session(cli_env, project)
    broken = Brain(facts=[TABS], extraction_answer=lambda prompt: "no json here")
    with FakeAnthropic(responder=broken) as fake:
        result = run_cli(
            "-C", str(project), "memory", "learn", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180
        )
    assert result.returncode == 1 and "unusable" in result.stdout and killed in result.stdout
    brain = Brain(facts=[TABS])
    with FakeAnthropic(responder=brain) as fake:
        result = run_cli(
            "-C", str(project), "memory", "learn", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180
        )
    assert result.returncode == 0 and "learned 1 memory" in result.stdout


# -- the plan, on transcript records ---------------------------------------------------------


def _records(*texts: str, mined: tuple[str, ...] = ()) -> list[dict]:
    records: list[dict] = [{"type": "session_start", "time": "2026-11-20T10:00:00+00:00"}]
    for n, words in enumerate(texts):
        records.append(
            {"type": "message", "id": 2 * n + 1, "role": "user", "content": [{"type": "text", "text": words}]}
        )
        records.append(
            {"type": "message", "id": 2 * n + 2, "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
        )
    if mined:
        records.append({"type": "extraction", "ids": list(mined)})
    return records


def _ended(memory_dir: Path, *sessions: str) -> None:
    for session in sessions:
        hold_live_mark(memory_dir, session).release()


def test_the_plan_skips_running_resumed_unmarked_and_mined_sessions(tmp_path):
    memory_dir = tmp_path / ".memory"
    history = LearningHistory(memory_dir / "history.jsonl")
    _ended(memory_dir, "s1", "s2", "s3", "s5")
    running = hold_live_mark(memory_dir, "s4")
    assert session_state(memory_dir, "s4") == "live" and session_state(memory_dir, "s6") == "unmarked"
    talk = ("we always deploy with make ship", "and never on Fridays")
    sessions = [
        ("s1", _records(*talk)),  # resumed by s5: s5 learns its messages
        ("s2", _records(*talk, mined=("1", "2", "3", "4"))),  # mined by itself
        ("s3", _records(*talk)),
        ("s4", _records(*talk)),  # still running
        ("s5", [{"type": "resume", "resumed_from": "s1"}, *_records(*talk)[1:], {"type": "resume_end"}]),
        ("s6", _records(*talk)),  # memory was off
    ]
    pending, settled = plan(sessions, memory_dir, history)
    assert [p.session_id for p in pending] == ["s3"] and pending[0].ids == ["1", "2", "3", "4"]
    assert settled == ["s5", "s2"]  # nothing of their own left: marked complete
    record_mined(history, "s3", ["1", "2"])
    (again,), _ = plan(sessions, memory_dir, history)
    assert again.ids == ["3", "4"]
    running.release()
    assert session_state(memory_dir, "s4") == "ended"


def test_the_plan_is_bounded_per_start_and_the_rest_waits(tmp_path):
    memory_dir = tmp_path / ".memory"
    history = LearningHistory(memory_dir / "history.jsonl")
    names = [f"s{n}" for n in range(6)]
    _ended(memory_dir, *names)
    sessions = [(name, _records(*[f"we always use tool {name}-{k}" for k in range(5)])) for name in names]
    pending, _ = plan(sessions, memory_dir, history, max_sessions=3, max_messages=25)
    assert [p.session_id for p in pending] == ["s5", "s4", "s3"]  # the newest first
    assert [len(p.ids) for p in pending] == [10, 10, 5] and not pending[-1].complete
    # a one-line greeting is not worth a call: settled without one
    pending, settled = plan([("g", _records("hi"))], memory_dir, history, only="g")
    assert pending == [] and settled == ["g"]


def test_a_damaged_transcript_yields_only_its_well_formed_messages():
    """Records written by someone else: a role that is not a string is no message, ``ids`` that
    are not a list mark nothing as mined (a string is not its characters)."""
    from memagent.memory.catchup import unmined_messages

    records = [
        {"type": "session_start", "time": "2026-11-20T10:00:00+00:00"},
        {"type": "message", "id": 1, "role": ["user"], "content": "spoofed"},
        {"type": "message", "id": 2, "role": "user", "content": [{"type": "text", "text": "we deploy on Fridays"}]},
        {"type": "message", "id": 3, "role": "assistant", "content": "noted"},
        {"type": "extraction", "ids": "23"},
        {"type": "extraction", "ids": {"2": True}},
    ]
    found = unmined_messages("s1", records)
    assert found.ids == ["2", "3"]
    assert [m["role"] for m in found.messages] == ["user", "assistant"]
    assert found.started.isoformat() == "2026-11-20"
