"""Sessions started in the same second keep the order they were started in.

Sessions are listed, continued (``-c``) and picked (``-r``) by the order of their ids, which carry
the start to the second; a session started in a second that already has one gets a larger suffix,
past the last (or the next second when none is left), so the newer always sorts after.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from fakeapi import FakeAnthropic, text
from memagent.context.resume import latest_session_id
from memagent.context.sessions import list_sessions
from memagent.context.transcript import new_session_id

STARTED = datetime(2026, 11, 21, 9, 42, 30, tzinfo=UTC)
SECOND = "20261121-094230"


def _transcript(directory, session_id, words="hello") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    record = {"type": "message", "id": "1", "role": "user", "content": [{"type": "text", "text": words}]}
    (directory / f"{session_id}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")


def test_a_session_started_in_the_same_second_sorts_after_the_one_before(tmp_path):
    directory = tmp_path / ".transcripts"
    _transcript(directory, f"{SECOND}-8000", "the older session")
    for _ in range(40):  # a random suffix would sort first about half the time
        newer = new_session_id(STARTED, directory)
        assert newer.startswith(f"{SECOND}-") and newer > f"{SECOND}-8000"


def test_one_session_after_another_in_one_second_is_the_one_continued(tmp_path):
    directory = tmp_path / ".transcripts"
    started = []
    for number in range(12):
        session_id = new_session_id(STARTED, directory)
        _transcript(directory, session_id, f"session {number}")
        started.append(session_id)
        assert latest_session_id(directory) == session_id
    assert [info.id for info in list_sessions(directory)] == started


def test_a_second_with_no_suffix_left_goes_on_in_the_next_one(tmp_path):
    directory = tmp_path / ".transcripts"
    _transcript(directory, f"{SECOND}-ffff")
    _transcript(directory, f"{SECOND}-12ab")
    _transcript(directory, f"{SECOND}-abc")  # not a session id: ignored
    newer = new_session_id(STARTED, directory)
    assert newer.startswith((STARTED + timedelta(seconds=1)).strftime("%Y%m%d-%H%M%S-"))
    assert latest_session_id(directory) == f"{SECOND}-ffff"  # until the new one has a transcript
    _transcript(directory, newer)
    assert latest_session_id(directory) == newer


def test_the_cli_run_is_the_newest_session_even_within_one_second(run_cli, project):
    """Another session holds the last suffix of this second and of the next few: the run's own
    session must still sort last, the one ``-c`` and the session list take as the newest."""
    directory = project / ".transcripts"
    now = datetime.now(UTC)
    for ahead in range(8):
        _transcript(directory, (now + timedelta(seconds=ahead)).strftime("%Y%m%d-%H%M%S-ffff"), "someone else")
    with FakeAnthropic() as fake:
        fake.add(text("the answer"))
        env = {"ANTHROPIC_BASE_URL": fake.url}
        run = run_cli("-C", str(project), "--no-memory", "-p", "hello", "--output-format", "json", env=env)
    assert run.returncode == 0, run.stderr
    ran = json.loads(run.stdout)["session_id"]
    assert latest_session_id(directory) == ran
    assert list_sessions(directory)[-1].id == ran
