"""The model registry: aliases resolve like Claude Code's, facts by prefix, unknown ids pass through.

Through the real CLI: ``-m sonnet`` / ``-m opus`` / ``-m haiku`` reach the API as current ids; an
unknown id is sent as is, with an unknown price."""

from __future__ import annotations

import json
import re

import pytest

from fakeapi import FakeAnthropic, text
from memagent import models
from memagent.config import Settings, load_settings, project_paths
from memagent.llm.anthropic import deprecated_models, known_model_ids
from memagent.pricing import cost_usd, price_for

VERSIONED = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:-(\d+))?$")


def newest_in_sdk(family: str) -> str:
    """The newest undated id of a family in the installed SDK's model list."""
    found = []
    for model_id in known_model_ids():
        match = VERSIONED.match(model_id)
        if match and match.group(1) == family:
            found.append(((int(match.group(2)), int(match.group(3) or 0)), model_id))
    return max(found)[1]


@pytest.mark.parametrize("alias", ["sonnet", "opus", "haiku"])
def test_each_alias_names_the_newest_current_model_of_its_family(alias):
    resolved = models.resolve(alias)
    assert resolved == newest_in_sdk(alias)
    assert resolved in known_model_ids() and resolved not in deprecated_models()
    assert models.resolve(alias.upper()) == resolved and models.resolve(f"  {alias} ") == resolved


def test_facts_come_from_the_longest_prefix_and_unknown_ids_pass_through():
    assert models.info("claude-opus-4-5-20251101").price == models.Price(5.0, 25.0)
    assert models.info("claude-opus-4-1").price.input == 15.0
    assert models.info("claude-3-haiku-20240307").default_max_tokens == 4_096
    assert models.info("sonnet").id == models.resolve("sonnet")
    local = models.info("qwen3-coder")
    assert local.id == "qwen3-coder" and not local.known and local.price is None
    assert local.context_window == models.DEFAULT_CONTEXT_WINDOW
    assert models.resolve("claude-sonnet-4-5-20250929") == "claude-sonnet-4-5-20250929"
    assert price_for("opus") == models.info(models.resolve("opus")).price
    assert cost_usd("qwen3-coder", {"input_tokens": 1000}) is None
    assert "price unknown" in models.describe("qwen3-coder") and "sent as is" in models.describe("qwen3-coder")


def test_settings_resolve_aliases_from_flags_environment_and_files(tmp_path):
    assert Settings(model="opus").model == models.resolve("opus")
    assert Settings(small_model="haiku").small_model == models.resolve("haiku")
    root = tmp_path / "p"
    root.mkdir()
    (root / ".memagent.toml").write_text('model = "Sonnet"\n')
    paths = project_paths(root, {"MEMAGENT_HOME": str(tmp_path / "home")})
    assert load_settings(paths, {"MEMAGENT_HOME": str(tmp_path / "home")}).model == models.resolve("sonnet")
    env = {"MEMAGENT_HOME": str(tmp_path / "home"), "MEMAGENT_MODEL": "haiku"}
    assert load_settings(paths, env).model == models.resolve("haiku")
    assert Settings(model="my-local-model").response_tokens == models.MEMAGENT_MAX_TOKENS
    assert Settings(model="claude-3-haiku-20240307").response_tokens == 4_096
    assert Settings(max_tokens=1234).response_tokens == 1234


@pytest.mark.parametrize(
    "flag, sent",
    [
        ("sonnet", models.resolve("sonnet")),
        ("opus", models.resolve("opus")),
        ("haiku", models.resolve("haiku")),
        ("my-local-model", "my-local-model"),
    ],
)
def test_the_cli_sends_the_resolved_model_id(run_cli, project, flag, sent):
    with FakeAnthropic([text("hello")]) as fake:
        result = run_cli(
            "-C",
            str(project),
            "--no-memory",
            "-m",
            flag,
            "-p",
            "hi",
            "--output-format",
            "json",
            env={"ANTHROPIC_BASE_URL": fake.url},
        )
    assert result.returncode == 0, result.stderr
    assert [r["model"] for r in fake.requests] == [sent]
    output = json.loads(result.stdout)
    assert output["model"] == sent
    if flag == "my-local-model":
        assert output["total_cost_usd"] is None


def test_slash_model_resolves_aliases_and_shows_the_facts(tmp_path):
    from memagent.llm.scripted import ScriptedModel
    from memagent.protocol import SetModel
    from memagent.runtime import SessionOptions, open_session
    from memagent.ui.commands import run_command

    session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([]))
    try:
        session.submit(SetModel("claude-sonnet-5-5"))
        shown = run_command("/model", lambda: session).text
        assert "claude-sonnet-5-5: 200k context, $3/$15 per million tokens" in shown
        reply = run_command("/model opus", lambda: session)
        assert session.status().model == models.resolve("opus")
        assert reply.text == f"model: claude-sonnet-5-5 → {models.resolve('opus')} (from the next message on)"
    finally:
        session.close()


# ---------------------------------------------------------------- one registry, no stragglers

SRC = __import__("pathlib").Path(models.__file__).parent
MODEL_ID = re.compile(r"""["']claude-(?:opus|sonnet|haiku|\d)[-\w.]*["']""")


def definition(model: str | None):
    from memagent.features.agent_definitions import AgentDefinition

    return AgentDefinition(name="x", description="d", prompt="p", model=model)


@pytest.mark.parametrize("alias", ["sonnet", "opus", "Opus", " sonnet "])
def test_a_subagents_model_alias_resolves_through_the_registry(alias):
    from memagent.factory import child_model_name

    assert child_model_name(definition(alias), "parent-model", Settings()) == models.resolve(alias)


def test_a_subagents_haiku_is_the_small_model_and_inherit_the_parents():
    from memagent.factory import child_model_name

    settings = Settings(small_model="claude-haiku-4-5")
    assert child_model_name(definition("haiku"), "p", settings) == "claude-haiku-4-5"
    assert child_model_name(definition("inherit"), "p", settings) == "p"
    assert child_model_name(definition("claude-x-local"), "p", settings) == "claude-x-local"


def test_the_default_output_limit_is_the_registrys_everywhere():
    from memagent.agent.loop import AgentConfig
    from memagent.llm.types import ModelRequest

    assert AgentConfig().max_tokens == ModelRequest(system=[], messages=[]).max_tokens == models.MEMAGENT_MAX_TOKENS


def test_no_module_but_the_registry_names_a_model_id():
    """Model ids, windows and prices live in models.py; everything else asks it."""
    found = [
        f"{path.relative_to(SRC)}: {match.group(0)}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "models.py"
        for match in MODEL_ID.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
