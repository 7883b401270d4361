"""`memagent doctor`: what it reports, that it never shows a secret, and that it always exits 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memagent.cli import doctor
from memagent.config import project_paths


def test_json_report_without_secrets_or_the_sdk(cli_env, project):
    env = {
        **cli_env,
        "ANTHROPIC_API_KEY": "sk-ant-very-secret-value",
        "ANTHROPIC_BASE_URL": "http://user:hunter2@127.0.0.1:9/v1",
        "MEMAGENT_MODEL": "claude-test-model",
    }
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memagent", "doctor", "--json", "--no-memory", "-C", str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "very-secret" not in result.stdout and "hunter2" not in result.stdout
    report = json.loads(result.stdout)
    assert report["paths"]["project root"] == {"path": str(project), "exists": True}
    assert report["paths"]["tasks"] == {"path": str(project / ".tasks"), "exists": False}
    assert report["paths"]["MEMAGENT_HOME"]["path"] == cli_env["MEMAGENT_HOME"]
    assert report["model"]["model"] == "claude-test-model"
    assert report["credentials"]["ANTHROPIC_API_KEY"] == "set"
    assert report["credentials"]["ANTHROPIC_AUTH_TOKEN"] == "not set"
    assert report["credentials"]["ANTHROPIC_BASE_URL"] == "http://***@127.0.0.1:9/v1"
    for name in ("memagent", "python", "anthropic", "chromadb", "typer", "rich", "pydantic", "onnxruntime"):
        assert report["versions"][name][0].isdigit(), name
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "anthropic" not in imported  # versions come from metadata, not from importing the SDK


def test_text_report_without_a_key_still_exits_0(run_cli, project):
    result = run_cli("doctor", "--no-memory", "-C", str(project), env={"ANTHROPIC_API_KEY": ""})
    assert result.returncode == 0
    assert "ANTHROPIC_API_KEY     not set" in result.stdout
    assert "no key: chat and -p need ANTHROPIC_API_KEY" in result.stdout
    assert f"project root    {project}" in result.stdout
    assert "Traceback" not in result.stderr


def test_memory_checks_report_health(tmp_path, isolated_env):
    report = doctor.collect_report(project_paths(tmp_path), {"MEMAGENT_HOME": str(isolated_env)})
    assert report["store"]["status"] == "ok"
    assert set(report["store"]["stores"]) == {"project", "user"}
    assert report["embedding"]["dim"] in (0, 384)
    text = doctor.render_text(report)
    assert "store      ok" in text and "embedding  " in text


def test_broken_memory_pieces_are_reported_not_raised(tmp_path, isolated_env, monkeypatch):
    from memagent.embedding import embedders
    from memagent.memory import service

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(embedders, "load_embedder", broken)
    monkeypatch.setattr(service.MemoryService, "open", classmethod(lambda cls, *a, **k: broken()))
    report = doctor.collect_report(project_paths(tmp_path), {"MEMAGENT_HOME": str(isolated_env)})
    assert report["embedding"] == "unavailable: disk on fire second line"
    assert report["store"] == {"status": "error: disk on fire second line"}
    assert "embedding  unavailable: disk on fire second line" in doctor.render_text(report)


def test_config_error_is_reported_with_defaults(tmp_path, isolated_env):
    (tmp_path / ".memagent.toml").write_text("model = [unclosed\n")
    report = doctor.collect_report(project_paths(tmp_path), {"MEMAGENT_HOME": str(isolated_env)}, check_memory=False)
    assert report["settings_error"].startswith("cannot read config file")
    assert report["model"]["model"] == doctor.Settings().model
    assert "config error: cannot read config file" in doctor.render_text(report)


def test_the_sandbox_in_use_is_reported(run_cli, cli_env, project):
    on = run_cli("doctor", "--no-memory", "-C", str(project))
    assert on.returncode == 0, on.stderr
    line = next(line for line in on.stdout.splitlines() if line.strip().startswith("sandbox "))
    assert "bubblewrap (" in line and "no network" in line
    (Path(cli_env["MEMAGENT_HOME"]) / "config.toml").write_text("sandbox = false\n")  # the user's config
    off = run_cli("doctor", "--no-memory", "--json", "-C", str(project))
    assert json.loads(off.stdout)["sandbox"].startswith("off: disabled by the setting sandbox = false")


class TinyEmbedder:
    name, model_id, dim = "tiny", "tiny@1", 2

    def embed(self, texts):
        raise AssertionError("doctor only asks what is lent")


def test_doctor_says_whether_a_running_mcp_serve_lends_its_embedder(tmp_path, isolated_env):
    from memagent.embedding.shared import EmbedderLender, lending_address

    env = {"MEMAGENT_HOME": str(isolated_env)}
    alone = doctor.collect_report(project_paths(tmp_path), env)
    assert alone["shared_embedder"].startswith("none lent")
    lender = EmbedderLender(TinyEmbedder(), lending_address(isolated_env))
    assert lender.start()
    try:
        beside = doctor.collect_report(project_paths(tmp_path), env)
        off = doctor.collect_report(project_paths(tmp_path), {**env, "MEMAGENT_SHARED_EMBEDDER": "false"})
    finally:
        lender.close()
    assert beside["shared_embedder"] == "lent by a running `memagent mcp serve`: tiny (dim 2)"
    assert "shared     lent by a running" in doctor.render_text(beside)
    assert off["shared_embedder"] == "off (shared_embedder = false)"
