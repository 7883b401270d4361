"""Input bytes that are not UTF-8 never make a traceback: stdin and arguments are decoded by one
policy (a detected legacy encoding, else replacement characters), with a one-line notice, and
the transcript stays valid UTF-8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapi import FakeAnthropic, text
from warm_cli import WarmStarters


def run(
    cli_env: dict,
    project: Path,
    fake: FakeAnthropic,
    *args: bytes | str,
    stdin: bytes = b"",
    starters: WarmStarters | None = None,
) -> subprocess.CompletedProcess:
    """The real CLI in a process of its own, bytes in and out; forked by ``starters`` when they can
    (arguments given as bytes always start it cold: the interpreter decodes them at start-up)."""
    flags = ["-C", str(project), "--no-memory", *args]
    env = {**cli_env, "ANTHROPIC_BASE_URL": fake.url}
    warm = starters.run(flags, env, stdin, 60) if starters is not None else None
    if warm is not None:
        return warm
    return subprocess.run(
        [sys.executable, "-m", "memagent", *flags], input=stdin, capture_output=True, env=env, timeout=60
    )


def sent_text(fake: FakeAnthropic) -> str:
    return "\n".join(b.get("text", "") for b in fake.requests[0]["messages"][-1]["content"] if b.get("type") == "text")


def transcript_text(project: Path) -> str:
    [path] = (project / ".transcripts").glob("*.jsonl")
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict: the transcript is valid UTF-8
    return "\n".join(json.dumps(json.loads(line), ensure_ascii=False) for line in raw.splitlines() if line.strip())


def test_latin1_on_stdin_is_decoded_with_a_notice(cli_env, project, warm_starters):
    with FakeAnthropic([text("Bonjour.")]) as fake:
        result = run(cli_env, project, fake, "-p", "-", stdin=b"caf\xe9", starters=warm_starters)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"Bonjour.\n"
    assert b"Traceback" not in result.stderr
    assert "stdin is not UTF-8; decoded it as windows-1252" in result.stderr.decode()
    assert sent_text(fake) == "café" and "café" in transcript_text(project)


def test_a_binary_file_on_stdin_still_gives_one_json_result(cli_env, project, warm_starters):
    binary = (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 120)[:30_000]
    with FakeAnthropic([text("That is an ELF binary.")]) as fake:
        result = run(cli_env, project, fake, "-p", "-", "--output-format", "json", stdin=binary, starters=warm_starters)
    assert result.returncode == 0, result.stderr.decode()
    [line] = result.stdout.decode().splitlines()
    payload = json.loads(line)
    assert payload["result"] == "That is an ELF binary." and payload["is_error"] is False
    assert "stdin looks like binary data (30,000 bytes)" in result.stderr.decode()
    assert b"Traceback" not in result.stderr
    assert "\x00" not in sent_text(fake) and "\ufffd" in sent_text(fake)
    transcript_text(project)


@pytest.mark.parametrize(
    "payload, expected, label",
    [
        ("# 日本語のコメント\nprint('こんにちは世界')\n".encode("shift_jis"), "こんにちは世界", "Shift-JIS"),
        ("Привет, мир! Это тестовый файл.\n".encode("cp1251"), "Привет, мир!", "windows-1251"),
        ("naïve façade\r\n".encode("utf-16"), "naïve façade", "UTF-16 (with BOM)"),
    ],
)
def test_other_legacy_encodings_on_stdin(cli_env, project, payload, expected, label, warm_starters):
    with FakeAnthropic([text("ok")]) as fake:
        result = run(cli_env, project, fake, "-p", "-", stdin=payload, starters=warm_starters)
    assert result.returncode == 0, result.stderr.decode()
    assert expected in sent_text(fake)
    assert f"decoded it as {label}" in result.stderr.decode()


def test_an_argument_with_undecodable_bytes_is_a_usage_error_in_one_line(cli_env, project):
    with FakeAnthropic([]) as fake:
        result = run(cli_env, project, fake, b"-p", b"r\xe9sum\xe9 of the caf\xe9 menu")
    assert result.returncode == 2 and fake.requests == []
    [line] = result.stderr.decode().splitlines()
    assert "is not valid UTF-8 text" in line


def test_the_cli_reads_and_edits_a_latin1_file_in_its_encoding(cli_env, project, warm_starters):
    from fakeapi import tool

    source = "# -*- coding: latin-1 -*-\nMESSAGE = 'Grüße, café au lait'\n"
    (project / "greet.py").write_bytes(source.encode("latin-1"))
    script = [
        tool("read_file", {"path": "greet.py"}),
        tool("edit_file", {"path": "greet.py", "old_text": "café au lait", "new_text": "crème brûlée"}),
        text("Changed the drink."),
    ]
    with FakeAnthropic(script) as fake:
        result = run(cli_env, project, fake, "--yes", "-p", "change the drink", starters=warm_starters)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"Changed the drink.\n"
    read_result = fake.requests[1]["messages"][-1]["content"][0]
    assert not read_result.get("is_error")
    assert "Grüße, café au lait" in read_result["content"] and "Latin-1" in read_result["content"]
    assert (project / "greet.py").read_bytes() == source.replace("café au lait", "crème brûlée").encode("latin-1")


def test_a_file_name_that_is_not_utf8_never_breaks_the_request(cli_env, project, warm_starters):
    """A repository can hold a Latin-1 file name: glob, grep and bash outputs carrying it reach
    the API as valid UTF-8 (U+FFFD for the odd byte) and the session goes on."""
    from fakeapi import tool

    os.close(os.open(os.path.join(os.fsencode(project), b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY, 0o644))
    (project / "menu.txt").write_bytes(b"caf\xe9 au lait\n")  # Latin-1 text too
    script = [
        tool("glob", {"pattern": "*.txt"}),
        tool("grep", {"pattern": "lait"}),
        tool("bash", {"command": "ls"}),
        text("Listed."),
        text("Still fine."),
    ]
    with FakeAnthropic(script) as fake:
        first = run(cli_env, project, fake, "--yes", "-p", "list the files", starters=warm_starters)
        second = run(cli_env, project, fake, "-c", "-p", "and now?", starters=warm_starters)
    assert first.returncode == 0, first.stderr.decode()
    assert first.stdout == b"Listed.\n" and second.stdout == b"Still fine.\n", second.stderr.decode()
    assert fake.errors == []
    results = [json.dumps(r["messages"][-1]["content"][0]["content"], ensure_ascii=False) for r in fake.requests[1:4]]
    assert "caf\ufffd.txt" in results[0] and "caf\ufffd.txt" in results[2], results  # glob, bash ls
    assert "menu.txt:1: caf\u00e9 au lait" in results[1]  # grep decodes the file's own Latin-1 text
    for path in (project / ".transcripts").glob("*.jsonl"):
        path.read_bytes().decode("utf-8")
