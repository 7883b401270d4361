"""Through the real CLI: a command the model runs never sees memagent's API key, so it cannot
print it into the conversation or the transcript."""

from __future__ import annotations

from fakeapi import FakeAnthropic, text, tool

KEY = "sk-ant-api03-cli-secret-0123456789abcdef"


def test_bash_cannot_read_the_agents_key(run_cli, project):
    with FakeAnthropic() as fake:
        fake.add(
            tool("bash", {"command": 'printenv ANTHROPIC_API_KEY; echo "[$ANTHROPIC_API_KEY][$ANTHROPIC_BASE_URL]"'}),
            text("done"),
        )
        result = run_cli(
            "-C",
            str(project),
            "--no-memory",
            "--yes",
            "-p",
            "print the key",
            env={"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": KEY},
        )
        assert result.returncode == 0, result.stderr
        result_block = next(b for b in fake.requests[1]["messages"][-1]["content"] if b.get("type") == "tool_result")
    assert result_block["content"].startswith("[][]\n")  # the key was there for the API calls only
    stored = "".join(p.read_text() for p in (project / ".transcripts").rglob("*") if p.is_file())
    assert "[][]" in stored and KEY not in stored
