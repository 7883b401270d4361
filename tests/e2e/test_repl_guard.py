"""The REPL in a real pty: the trust prompt for a project file asking for widening settings
(a "no" is remembered), an "always" answer saved as a rule for the project, /permissions, and
an input history on disk without the token typed at the prompt."""

from __future__ import annotations

import json
import stat

import pexpect

from fakeapi import text, tool
from repl_kit import ANSI, PROMPT

TOKEN = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0" * 2


def submit(child: pexpect.spawn, line: str) -> None:
    child.send(line)
    child.expect_exact(line[-20:])
    child.send("\r")


def test_trust_prompt_saved_rule_permissions_and_private_history(spawn, fake, project, isolated_env):
    (project / ".memagent.toml").write_text('chroma_url = "http://127.0.0.1:9"\n')
    fake.add(tool("bash", {"command": "touch a.txt"}), text("touched"))
    child = spawn()
    child.expect("asks for: chroma_url")
    child.expect(r"Trust this project .*\[y/N\]")
    child.send("n\r")
    child.expect("not trusted")
    child.expect(PROMPT)
    submit(child, f"use {TOKEN} and touch a.txt")
    child.expect("bash wants to run: touch a.txt")
    child.expect(r"Allow\?")
    child.send("a")
    child.expect(r"Bash\(touch a.txt\) runs without asking")
    child.expect("touched")
    child.expect(PROMPT)
    submit(child, "/permissions")
    child.expect("mode: default")
    child.expect(r"allow: Bash\(touch a.txt\)")
    child.expect(PROMPT)
    submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and (project / "a.txt").exists()

    history = isolated_env / "history"
    assert TOKEN.encode() not in history.read_bytes() and b"[REDACTED:github-token]" in history.read_bytes()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    record = json.loads((isolated_env / "projects.json").read_text())["projects"][str(project)]
    assert record == {"trusted": False, "declined": ["chroma_url"], "allow": ["Bash(touch a.txt)"]}

    # a second start does not ask again, and the saved rule is in force
    child = spawn()
    child.expect(PROMPT)
    submit(child, "/permissions")
    child.expect(r"allow: Bash\(touch a.txt\)")
    child.expect(PROMPT)
    assert "Trust this project" not in ANSI.sub("", child.logfile_read.getvalue())
    submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and fake.errors == []


def test_the_trust_prompt_names_what_claude_codes_settings_ask_for_and_yes_applies_them(spawn, fake, project):
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"]},
                "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'from the hook'"}]}]},
            }
        )
    )
    fake.add(tool("bash", {"command": "touch b.txt"}), text("touched"))
    child = spawn()
    child.expect(r"This project's \.claude/settings\.json asks for: allow, hooks\.")
    child.expect(r"Trust this project .*\[y/N\]")
    child.send("y\r")
    child.expect(PROMPT)
    submit(child, "touch b.txt")
    child.expect("touched")  # the project's allow rule ran it without asking
    child.expect(PROMPT)
    submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert (project / "b.txt").exists()
    first = fake.requests[0]["messages"][0]["content"]
    assert first[-1]["text"] == "[Context from the user's hooks, UserPromptSubmit:]\nfrom the hook"
