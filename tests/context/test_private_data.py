"""What memagent writes is private and free of secrets: transcripts, saved outputs, the task
graph and the REPL history (folders 0700 with a ``.gitignore`` of ``*``, files 0600)."""

from __future__ import annotations

import io
import stat
import subprocess
from pathlib import Path

from memagent.context.transcript import TranscriptWriter, read_records
from memagent.tasks.store import TaskStore
from memagent.tools.base import ToolContext
from memagent.tools.shell import render_output
from memagent.ui.history import RedactingFileHistory

A = "a1B2c3D4e5F6g7H8i9J0"
KEY = "sk-" + "ant-api03-" + A + A
PASSWORD = "Tr0ub4dor-prod-99"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_transcript_is_redacted_on_disk_while_the_live_message_keeps_the_value(tmp_path):
    writer = TranscriptWriter.open(tmp_path / ".transcripts", "s1")
    message = {"role": "user", "content": [{"type": "text", "text": f"my key is {KEY}, the password is {PASSWORD}"}]}
    writer.message(message)
    writer.append({"type": "compaction", "summary": f"the user gave {KEY}"})
    writer.close()
    assert KEY in message["content"][0]["text"]  # the live conversation is untouched
    raw = writer.path.read_bytes()
    assert KEY.encode() not in raw and PASSWORD.encode() not in raw
    records = read_records(writer.path).records
    assert records[0]["content"][0]["text"] == "my key is [REDACTED:anthropic-key], the password is [REDACTED:password]"
    assert mode(writer.path) == 0o600 and mode(writer.path.parent) == 0o700
    assert (writer.path.parent / ".gitignore").read_text() == "*\n"


def test_git_add_all_skips_the_data_folders(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    TranscriptWriter.open(tmp_path / ".transcripts", "s1").message({"role": "user", "content": "hi"})
    TaskStore(tmp_path / ".tasks").create("a task")
    (tmp_path / "code.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    staged = subprocess.run(
        ["git", "-C", str(tmp_path), "diff", "--cached", "--name-only"], check=True, capture_output=True, text=True
    ).stdout.split()
    assert staged == ["code.py"]


def test_task_store_is_private(tmp_path):
    store = TaskStore(tmp_path / ".tasks")
    store.create("deploy")
    assert mode(store.root) == 0o700
    files = [p for p in store.root.iterdir() if p.is_file()]
    assert files and all(mode(p) == 0o600 for p in files), {p.name: oct(mode(p)) for p in files}


def test_saved_command_output_is_redacted(tmp_path):
    ctx = ToolContext(root=tmp_path, output_cap_chars=200)
    sink = io.BytesIO(("noise line\n" * 500 + f"export ANTHROPIC_API_KEY={KEY}\n" + "tail\n" * 50).encode())
    shown = render_output(sink, ctx)
    saved = next((tmp_path / ".transcripts" / "outputs").glob("bash-*.log"))
    assert "full output saved to" in shown
    data = saved.read_bytes()
    assert KEY.encode() not in data and b"[REDACTED:" in data and data.count(b"noise line\n") == 500
    assert mode(saved) == 0o600


def test_repl_history_is_redacted_and_private(tmp_path):
    path = tmp_path / "home" / "history"
    history = RedactingFileHistory(path)
    history.append_string(f"deploy with token {KEY} now")
    assert KEY in history.get_strings()[-1]  # recalled as typed in this session
    assert KEY.encode() not in path.read_bytes()
    assert list(RedactingFileHistory(path).load_history_strings()) == ["deploy with token [REDACTED:anthropic-key] now"]
    assert mode(path) == 0o600 and mode(path.parent) == 0o700


def test_an_old_world_readable_history_is_tightened(tmp_path):
    path = tmp_path / "history"
    path.write_text("\n# old\n+ls\n")
    path.chmod(0o644)
    RedactingFileHistory(path)
    assert mode(path) == 0o600
