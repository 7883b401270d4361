"""@path mentions, !command output and Tab completion: confinement, caps, what the model receives."""

from __future__ import annotations

import os
import time

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from memagent.ui import attachments as attachments_module
from memagent.ui.attachments import (
    MAX_ATTACHMENT_CHARS,
    Attachment,
    attach_mentions,
    cap,
    compose_message,
    mentioned_paths,
    run_shell_escape,
)
from memagent.ui.completion import ReplCompleter, path_candidates


def test_mentions_attach_project_files_and_refuse_the_rest(tmp_path):
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "blob.bin").write_bytes(b"\x00\x01binary")
    (tmp_path / "secret.txt").write_text("outside\n")
    (root / "escape.txt").symlink_to(tmp_path / "secret.txt")
    message = 'see @src/app.py, @src and @../secret.txt; @escape.txt @blob.bin @alice @"missing file.txt" bob@mail.com'
    attachments, notes = attach_mentions(message, root)
    assert [a.source for a in attachments] == ["file src/app.py", "directory src"]
    assert attachments[0].text == "print('app')\n" and attachments[1].text == "app.py"
    assert "attached src/app.py" in notes
    assert "@../secret.txt: no such file in the project (not attached)" in notes
    assert "@escape.txt: no such file in the project (not attached)" in notes
    assert "@blob.bin: a binary file (not attached)" in notes
    assert "@missing file.txt: no such file in the project (not attached)" in notes
    assert not any("alice" in n or "mail.com" in n for n in notes)


def test_mentioned_paths_strip_punctuation_and_skip_emails():
    assert mentioned_paths("@a.py, then (@b/c.md) and x@y.z @a.py") == ["a.py"]
    assert mentioned_paths('@"with space.md".') == ["with space.md"]


def test_compose_and_cap():
    assert compose_message("hi", []) == "hi"
    text = compose_message("look", [Attachment('command `echo "x"` (exit 0)', "x")])
    assert text == "look\n\n<attachment source=\"command `echo 'x'` (exit 0)\">\nx\n</attachment>"
    long = "a" * 100 + "b" * 100
    capped = cap(long, 100)
    assert capped.startswith("a" * 50) and capped.endswith("b" * 50) and "[… 100 characters left out …]" in capped


def test_shell_escape_runs_in_the_root_with_both_streams(tmp_path):
    (tmp_path / "marker.txt").write_text("here\n")
    done = run_shell_escape("cat marker.txt; echo oops >&2; exit 3", tmp_path)
    assert done.source == "command `cat marker.txt; echo oops >&2; exit 3` (exit 3)"
    assert done.text == "here\noops"
    env = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "sk-ant-secret", "GREETING": "hello"}
    scrubbed = run_shell_escape('echo "[$ANTHROPIC_API_KEY] $GREETING"', tmp_path, env=env)
    assert scrubbed.text == "[] hello"  # the output reaches the model and the transcript: no secrets
    slow = run_shell_escape("sleep 5", tmp_path, timeout=0.2)
    assert "timed out after 0.2 s" in slow.source


def test_path_completion_is_confined_and_skips_ignored_dirs(tmp_path):
    root = tmp_path / "p"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("")
    (root / "node_modules").mkdir()
    (root / ".env").write_text("")
    assert path_candidates(root, "") == ["src/"]
    assert path_candidates(root, "src/") == ["src/app.py", "src/pkg/"]
    assert path_candidates(root, "src/a") == ["src/app.py"]
    assert path_candidates(root, ".e") == [".env"]
    assert path_candidates(root, "../") == []


def test_completer_completes_commands_at_the_start_and_paths_after_at(tmp_path):
    (tmp_path / "readme.md").write_text("")
    completer = ReplCompleter(tmp_path, lambda: ["help", "history-x", "clear", "review"])

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent(completion_requested=True))]

    assert complete("/h") == ["/help", "/history-x"]
    assert complete("/re") == ["/review"]
    assert complete("please read @rea") == ["readme.md"]
    assert complete("mail bob@rea") == []
    assert complete("/review @rea") == ["readme.md"]


def test_completion_shows_a_commands_argument_hint_and_description(tmp_path):
    meta = {"git:commit": "TYPE — Commit the staged work", "git:push": "Push"}
    completer = ReplCompleter(tmp_path, lambda: ["git:commit", "git:push", "help"], lambda: meta)
    found = list(completer.get_completions(Document("/git:"), CompleteEvent(completion_requested=True)))
    assert [(c.text, c.display_meta_text) for c in found] == [
        ("/git:commit", "TYPE — Commit the staged work"),
        ("/git:push", "Push"),
    ]


def test_a_named_pipe_is_refused_at_once_instead_of_blocking_the_prompt(tmp_path):
    os.mkfifo(tmp_path / "notes")  # a repository can ship one; opening it to read would wait for a writer
    started = time.monotonic()
    attachments, notes = attach_mentions("see @notes", tmp_path)
    assert attachments == [] and notes == ["@notes: not a regular file (not attached)"]
    assert time.monotonic() - started < 5


def test_a_long_file_attaches_its_ends_and_tells_the_model_to_page_with_read_file(tmp_path):
    lines = [f"line {n:06d} of the generated report" for n in range(20_000)]
    (tmp_path / "report.txt").write_text("\n".join(lines) + "\n")
    [attachment], [note] = attach_mentions("summarise @report.txt", tmp_path)
    assert len(attachment.text) < MAX_ATTACHMENT_CHARS + 500
    assert attachment.text.startswith("line 000000") and attachment.text.rstrip().endswith(
        "line 019999 of the generated report"
    )
    assert "read_file pages through the whole file report.txt" in attachment.text
    assert note.startswith("attached report.txt (start and end only")


def test_a_huge_file_is_read_only_up_to_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(attachments_module, "MAX_MENTION_READ_BYTES", 64 * 1024)
    (tmp_path / "huge.log").write_text("x" * 99 + "\n" + "y" * 300_000 + "\nlast line\n")
    [attachment], _ = attach_mentions("@huge.log", tmp_path)
    assert "only its first 65,536 bytes were read here" in attachment.text and "last line" not in attachment.text


def test_shell_escape_of_a_flood_keeps_its_ends_without_holding_it_in_memory(tmp_path):
    done = run_shell_escape("echo first; yes 'the same line again' | head -c 30000000; echo; echo last", tmp_path)
    assert done.source.endswith("(exit 0)")
    assert done.text.startswith("first\n") and done.text.endswith("last")
    assert len(done.text) < MAX_ATTACHMENT_CHARS + 200 and "bytes left out" in done.text


def test_shell_escape_that_times_out_keeps_what_it_printed(tmp_path):
    started = time.monotonic()
    done = run_shell_escape("echo started; sleep 30 & wait", tmp_path, timeout=1.0)
    assert time.monotonic() - started < 15  # the whole group was killed, sleep included
    assert done.source.endswith("(timed out after 1 s)") and done.text == "started"
