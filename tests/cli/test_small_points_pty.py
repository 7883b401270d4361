"""The REPL's small points in a real pty: /permissions MODE and Shift-Tab switch the mode
mid-session; Ctrl-C during bash gives the model the output printed so far; the exit recap names
the cards the session taught."""

from __future__ import annotations

import pexpect

from fakeapi import text, tool
from memory.learnkit import Brain, Fact, request_text
from repl_kit import PROMPT, expect_text

PTY_DIMENSIONS = (40, 160)
SHIFT_TAB = "\x1b[Z"


def _submit(child: pexpect.spawn, line: str) -> None:
    child.send(line)
    child.expect_exact(line)
    child.send("\r")


def _results(request: dict) -> list[dict]:
    return [b for m in request["messages"] for b in m["content"] if b.get("type") == "tool_result"]


def test_permissions_mode_and_shift_tab_switch_the_mode_mid_session(spawn, fake, project):
    fake.add(
        tool("write_file", {"path": "plan.md", "content": "plan\n"}),
        text("Plan mode refused the write."),
        tool("write_file", {"path": "notes.md", "content": "notes\n"}),
        text("Wrote notes.md."),
    )
    child = spawn()
    child.expect(PROMPT)
    child.expect("memory is off")
    _submit(child, "/permissions plan")
    child.expect("permission mode: default → plan")
    child.expect("plan mode \\(read-only\\)")  # the status line above the next prompt
    _submit(child, "/permissions sideways")
    child.expect("unknown permission mode 'sideways'; use one of: default, acceptEdits, plan,")
    child.expect(PROMPT)
    _submit(child, "write a plan")
    expect_text(child, "Plan mode refused the write.")
    assert not (project / "plan.md").exists()
    refused = _results(fake.requests[1])[0]
    assert refused["is_error"] and "plan mode" in refused["content"]
    child.expect(PROMPT)
    child.send(SHIFT_TAB)  # plan → default
    child.send(SHIFT_TAB)  # default → acceptEdits
    _submit(child, "/permissions")
    child.expect("mode: acceptEdits")
    child.expect(PROMPT)
    _submit(child, "write notes")
    expect_text(child, "Wrote notes.md.")
    assert (project / "notes.md").read_text() == "notes\n"  # no approval was asked: edits are accepted
    assert "Allow?" not in child.logfile_read.getvalue()
    child.sendeof()
    child.expect(pexpect.EOF)
    assert fake.errors == []


def test_ctrl_c_during_bash_gives_the_model_the_partial_output(spawn, fake):
    command = "for i in 1 2 3; do echo progress-line-$i; done; sleep 30; echo never-printed"
    fake.add(tool("bash", {"command": command}), text("It printed three lines before you stopped it."))
    child = spawn()
    child.expect(PROMPT)
    _submit(child, "run the slow script")
    child.expect("Allow\\?")
    child.send("y")
    child.expect("progress-line-3")  # the live output
    child.sendintr()
    child.expect("cancelled")
    child.expect(PROMPT)
    _submit(child, "what did it print?")
    expect_text(child, "It printed three lines before you stopped it.")
    [result] = _results(fake.requests[1])
    assert result["is_error"] is True
    assert "interrupted" in result["content"] and "Partial output" in result["content"]
    assert "progress-line-1" in result["content"] and "progress-line-3" in result["content"]
    assert "never-printed" not in result["content"]
    child.sendeof()
    child.expect(pexpect.EOF)
    assert fake.errors == []


def test_the_exit_recap_names_what_was_learned(spawn, fake):
    brain = Brain(
        facts=[
            Fact(
                trigger="we deploy with make release on Fridays",
                content="The project deploys with `make release`, on Fridays only.",
                memory_type="procedure",
            )
        ]
    )

    def chores(body: dict):
        system, _ = request_text(body)
        return None if "you are memagent" in system.lower() else brain(body)

    fake.chores = chores
    fake.add(text("Noted: releases go out on Fridays."))
    child = spawn(memory=True)
    child.expect(PROMPT)
    _submit(child, "remember that we deploy with make release on Fridays")
    expect_text(child, "Noted: releases go out on Fridays.")
    child.expect(PROMPT)
    child.sendeof()
    child.expect("Learned this session: 1 memory saved", timeout=120)
    child.expect("\\+ The project deploys with `make release`, on Fridays only. \\(procedure m_[0-9a-f]+\\)")
    child.expect(pexpect.EOF, timeout=60)
