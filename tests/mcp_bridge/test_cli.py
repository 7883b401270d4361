"""`memagent mcp list` in a subprocess, with servers from $MEMAGENT_HOME/mcp.json and .mcp.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mcp_kit import COMPAT, TOY


def run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "memagent", *args],
        cwd=cwd,
        env={**os.environ, "TOY_SECRET": "s3"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_mcp_list_shows_status_and_tools_and_exits_1_when_a_server_is_broken(isolated_env, tmp_path):
    (isolated_env / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "toy": {
                        "command": sys.executable,
                        "args": [str(TOY), "stdio"],
                        "env": {"TOY_TOKEN": "${TOY_SECRET}"},
                    },
                    "keyless": {"command": "x", "env": {"K": "${NOT_SET_ANYWHERE}"}},
                }
            }
        )
    )
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": {"command": "evil"}}}))
    result = run("mcp", "list", "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["servers"]}
    assert rows["toy"]["status"] == "ready"
    assert [t["name"] for t in rows["toy"]["tools"]][:2] == ["echo", "add"]
    assert rows["keyless"] == {
        "name": "keyless",
        "origin": "user",
        "status": "invalid",
        "reason": "environment variable NOT_SET_ANYWHERE is not set",
        "tools": [],
    }
    assert rows["repo"]["status"] == "untrusted"
    assert "Traceback" not in result.stderr


def test_mcp_list_with_nothing_configured(tmp_path):
    result = run("mcp", "list", cwd=tmp_path)
    assert result.returncode == 0 and "No MCP servers configured" in result.stdout


def test_help_does_not_import_the_mcp_sdk(tmp_path):
    code = "import sys; from memagent.cli.main import run; sys.argv=['memagent','--help']\ntry: run()\nexcept SystemExit: pass\nprint('mcp' in sys.modules, 'memagent.mcp_bridge.manager' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "False False"


def test_mcp_list_summarises_a_noisy_server_in_one_line_without_a_traceback(isolated_env, tmp_path):
    (isolated_env / "mcp.json").write_text(
        json.dumps({"mcpServers": {"noisy": {"command": sys.executable, "args": [str(COMPAT), "--junk"]}}})
    )
    result = run("mcp", "list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "noisy [ready, 5 tools]" in result.stdout
    assert "background_job — Runs only as an MCP task. (runs only as an MCP task: not offered)" in result.stdout
    assert "! ignored 1 line of stdout that is not MCP JSON (first: 'compat server 0.1 starting" in result.stdout
    assert "prompts: /mcp__noisy__review" in result.stdout
    assert result.stderr == ""  # no traceback, no stderr chatter of the server
