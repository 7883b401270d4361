"""No secret byte reaches the disk: six secrets planted (typed in the prompt, in a .env read by
a tool, in command output, echoed back by the model) run through the real CLI against the
loopback fake API; afterwards nothing under the project or $MEMAGENT_HOME holds any of them,
except the user's own files they were planted in."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from fakeapi import FakeAnthropic, text, tool, turn

A = "a1B2c3D4e5F6g7H8i9J0"
# (kind, value, where it is planted) — assembled at run time so no scanner flags this file
SECRETS = [
    ("Anthropic key", "sk-" + "ant-api03-" + A + A, "typed in the prompt"),
    ("GitHub token", "gh" + "p_" + A + A[:16], ".env read with read_file"),
    ("password line", "S3cure-" + "Pass-42", ".env read with read_file"),
    ("AWS access key id", "AKIA" + "QWERTYUIOPASDFGH", "bash output"),
    ("Slack token", "xo" + "xb-1234567890-" + A, "bash output"),
    ("prose password", "Tr0ub4dor-" + "prod-99", "bash output and the model's answer"),
]
VALUE = {kind: value for kind, value, _ in SECRETS}
PLANTED = {".env", "config.txt"}


def plant(project: Path) -> None:
    (project / ".env").write_text(f"GITHUB_TOKEN={VALUE['GitHub token']}\nDB_PASSWORD={VALUE['password line']}\n")
    (project / "config.txt").write_text(
        f"aws_access_key_id {VALUE['AWS access key id']}\n"
        f"slack: {VALUE['Slack token']}\n"
        f"the production deploy password is {VALUE['prose password']}\n"
    )
    home = Path(os.environ["MEMAGENT_HOME"])  # the user's own config: an untrusted project may not lower a cap
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("output_cap_chars = 400\n")  # long output is saved to a file


def files_under(*roots: Path) -> list[Path]:
    return [
        p for root in roots for p in root.rglob("*") if p.is_file() and not (p.parent == roots[0] and p.name in PLANTED)
    ]


def test_no_secret_reaches_the_disk(run_cli, project, cli_env):
    plant(project)
    home = Path(cli_env["MEMAGENT_HOME"])
    with FakeAnthropic() as fake:
        fake.add(
            tool("read_file", {"path": ".env"}),
            turn("Now the config.", tool("bash", {"command": "cat config.txt; seq 1 3000"})),
            text(
                f"Done: the deploy password is {VALUE['prose password']} and your key {VALUE['Anthropic key']} works."
            ),
        )
        result = run_cli(
            "-C",
            str(project),
            "-p",
            f"deploy using my key {VALUE['Anthropic key']} please",
            "--yes",
            env={"ANTHROPIC_BASE_URL": fake.url},
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == [] and fake.remaining == 0
        # the live session kept the values: the model saw what the user and the tools gave it
        sent = str(fake.requests)
        assert VALUE["GitHub token"] in sent and VALUE["Anthropic key"] in sent and VALUE["Slack token"] in sent

    written = files_under(project, home)
    transcripts = [p for p in written if p.suffix == ".jsonl" and p.parent.name == ".transcripts"]
    outputs = [p for p in written if p.suffix == ".log"]
    assert transcripts and outputs, [str(p) for p in written]  # the run did write both kinds
    leaks = [
        f"{kind} ({where}) in {path}"
        for kind, value, where in SECRETS
        for path in written
        if value.encode() in path.read_bytes()
    ]
    assert leaks == []
    assert b"[REDACTED:" in transcripts[0].read_bytes() and b"[REDACTED:" in outputs[0].read_bytes()
    for path in transcripts + outputs:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE((project / ".transcripts").stat().st_mode) == 0o700
    assert (project / ".transcripts" / ".gitignore").read_text() == "*\n"
