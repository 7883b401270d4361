"""Erasing sessions: `sessions prune --older-than`, `sessions rm ID`, the transcript_retention
setting at session start, and redact_in_transcripts for `memory forget`."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

from memagent.context.transcript import TranscriptWriter, prune_transcripts, read_records, redact_in_transcripts
from memagent.llm.scripted import ScriptedModel, reply
from memagent.paths import memagent_home
from memagent.runtime import SessionOptions, open_session

DAY = 86_400


def make_session(directory, session_id, text="hello", age_days=0.0):
    writer = TranscriptWriter.open(directory, session_id)
    writer.set_header({"type": "session_start", "session_id": session_id, "model": "m"})
    writer.message({"role": "user", "content": [{"type": "text", "text": text}]})
    writer.close()
    outputs = directory / session_id / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "bash-1.log").write_text("output\n")
    stamp = time.time() - age_days * DAY
    os.utime(writer.path, (stamp, stamp))
    return writer.path


def test_prune_removes_old_sessions_and_their_outputs(tmp_path):
    directory = tmp_path / ".transcripts"
    old, kept_old, new = (
        make_session(directory, f"2026010{n}-000000-aaaa", age_days=d) for n, d in ((1, 40), (2, 45), (3, 1))
    )
    removed = prune_transcripts(directory, timedelta(days=30), keep={kept_old.stem})
    assert removed == [old.stem]
    assert not old.exists() and not (directory / old.stem).exists()
    assert kept_old.exists() and new.exists() and (directory / new.stem / "outputs").is_dir()


def test_cli_prune_and_rm(run_cli, project):
    directory = project / ".transcripts"
    old = make_session(directory, "20260101-000000-aaaa", age_days=40)
    a = make_session(directory, "20261120-000000-bbbb")
    b = make_session(directory, "20261121-000000-cccc")

    dry = run_cli("sessions", "-C", str(project), "prune", "--older-than", "30d", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.split() == [old.stem] and old.exists()
    result = run_cli("sessions", "prune", "-C", str(project), "--older-than", "30d")
    assert result.returncode == 0 and result.stdout == "Deleted 1 session older than 30d.\n"
    assert not old.exists() and a.exists()

    bad = run_cli("sessions", "prune", "-C", str(project), "--older-than", "soon")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "30d" in bad.stderr

    refused = run_cli("sessions", "rm", "-C", str(project), "20261120")
    assert refused.returncode == 2 and "--yes" in refused.stderr and a.exists()
    ambiguous = run_cli("sessions", "rm", "-C", str(project), "2026112", "--yes")
    assert ambiguous.returncode == 1 and "ambiguous" in ambiguous.stderr and a.exists() and b.exists()
    gone = run_cli("sessions", "rm", "-C", str(project), "20261120", "--yes")
    assert gone.returncode == 0 and gone.stdout == f"Deleted session {a.stem}.\n"
    assert not a.exists() and not (directory / a.stem).exists() and b.exists()
    missing = run_cli("sessions", "rm", "-C", str(project), "nope", "--yes")
    assert missing.returncode == 1 and "no session" in missing.stderr


def test_retention_setting_prunes_at_session_start(tmp_path):
    directory = tmp_path / ".transcripts"
    old = make_session(directory, "20260101-000000-aaaa", age_days=10)
    recent = make_session(directory, "20261121-000000-bbbb", age_days=2)
    home = memagent_home()  # retention deletes data: the user's own config sets it
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("transcript_retention = 7\n")
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("hi")]))
    try:
        assert not old.exists() and recent.exists()
    finally:
        session.close()


def test_redact_in_transcripts_rewrites_only_matching_records(tmp_path):
    directory = tmp_path / ".transcripts"
    fact = 'the staging "db" lives on host\nkrypton-7'
    first = make_session(directory, "s1", text=f"remember: {fact}")
    writer = TranscriptWriter.open(directory, "s2")
    writer.message({"role": "user", "content": [{"type": "text", "text": "unrelated"}]})
    writer.message(
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "memory_save", "input": {"content": fact}}],
        }
    )
    writer.close()
    live = make_session(directory, "s3", text=fact)
    untouched_before = (directory / "s2.jsonl").read_bytes().split(b"\n")[0]
    with open(first, "ab") as fh:
        fh.write(b"garbage line " + json.dumps(fact)[1:-1].encode() + b"\n")

    saved = directory / "s1" / "outputs" / "bash-2.log"
    saved.write_text(f"line one\n{fact} in the output\n")
    assert redact_in_transcripts(directory, fact, skip={"s3"}) == 4
    assert saved.read_text() == "line one\n[REDACTED:forgotten] in the output\n"
    for path in (first, directory / "s2.jsonl"):
        raw = path.read_bytes()
        assert b"krypton-7" not in raw and b"[REDACTED:forgotten]" in raw
    assert b"krypton-7" in live.read_bytes()  # a running session's file is left alone
    assert (directory / "s2.jsonl").read_bytes().split(b"\n")[0] == untouched_before
    records = read_records(directory / "s2.jsonl").records
    assert records[-1]["content"][0]["input"]["content"] == "[REDACTED:forgotten]"
    assert redact_in_transcripts(directory, fact, skip={"s3"}) == 0
