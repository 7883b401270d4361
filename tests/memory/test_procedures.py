"""Procedures refined from outcomes (what finally worked updates the procedure, through the
consolidator), and mature procedures offered as skills by ``memory review``, asking first."""

from __future__ import annotations

import json
import sys

import pexpect
import pytest

from fakeapi import FakeAnthropic
from memagent.memory.procedures import maturity
from memory.learnkit import Brain, Fact

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
FIRST = Fact(
    "we run the tests with pytest",
    "The test suite is run with `pytest tests/` from the repository root.",
    "procedure",
    confidence=0.9,
)
WORKED = Fact(
    "what finally worked was uv run pytest",
    "The test suite is run with `uv run pytest -n 2` from the repository root; plain pytest "
    "misses the project's dependencies.",
    "procedure",
    confidence=0.9,
)
SESSIONS = (
    "Remember: we run the tests with pytest, from the repository root.",
    "Plain pytest failed with import errors; what finally worked was uv run pytest -n 2.",
)


def _answer_then_quit(child, answer: str) -> None:
    """Answer the skill question, then leave the walk through the automatic cards."""
    child.expect(r"\[y\]es, \[n\]ever, \[s\]kip")
    child.sendline(answer)
    while child.expect([pexpect.EOF, r"\[q\]uit"]) == 1:
        child.sendline("q")


def _two_sessions(run_cli, project, env) -> Brain:
    brain = Brain(facts=[FIRST, WORKED])
    for words in SESSIONS:
        with FakeAnthropic(responder=brain) as fake:
            result = run_cli("-C", str(project), "-p", words, env={"ANTHROPIC_BASE_URL": fake.url, **env}, timeout=180)
            assert result.returncode == 0, result.stderr
    return brain


def _procedures(run_cli, project, env, *flags) -> list[dict]:
    listing = run_cli("-C", str(project), "memory", "list", "--type", "procedure", "--json", *flags, env=env)
    assert listing.returncode == 0, listing.stderr
    return json.loads(listing.stdout)


@pytest.mark.timeout(600)
def test_a_procedure_refined_in_a_second_session_updates_the_same_card(run_cli, project):
    brain = _two_sessions(run_cli, project, LEXICAL)
    (active,) = _procedures(run_cli, project, LEXICAL)
    assert active["content"] == WORKED.content
    (every_one,) = [c for c in _procedures(run_cli, project, LEXICAL, "--all") if c["id"] != active["id"]]
    assert active["supersedes"] == every_one["id"] and every_one["status"] == "superseded"
    assert every_one["content"] == FIRST.content  # the old way stays, as history
    consolidation = [s for s in brain.systems if "CONTRADICT" in s]
    assert consolidation and "what finally worked" in consolidation[-1]  # the one authority was told
    assert any("what finally worked" in s for s in brain.systems if "xtract" in s)


@pytest.mark.timeout(600)
def test_review_offers_a_mature_procedure_as_a_skill_and_writes_it_when_asked(run_cli, project, cli_env):
    env = {**LEXICAL, "MEMAGENT_MEMORY_SKILL_AFTER_USES": "1"}
    _two_sessions(run_cli, project, env)
    (active,) = _procedures(run_cli, project, env)
    listed = json.loads(run_cli("-C", str(project), "memory", "review", "--json", env=env).stdout)
    (proposal,) = [item for item in listed if item.get("proposal") == "skill"]
    assert proposal["card"]["id"] == active["id"] and proposal["maturity"] == 1  # one refinement
    skill = project / proposal["skill"]
    assert proposal["skill"].startswith(".claude/skills/") and not skill.exists()  # listing writes nothing
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", str(project), "memory", "review"],
        env={**cli_env, **env},
        encoding="utf-8",
        timeout=60,
    )
    _answer_then_quit(child, "y")
    text = skill.read_text()
    assert text.startswith("---\nname: ") and "description: " in text and WORKED.content in text
    assert f"memagent memory card {active['id']}" in text
    again = json.loads(run_cli("-C", str(project), "memory", "review", "--json", env=env).stdout)
    assert [item for item in again if item.get("proposal") == "skill"] == []  # made already


@pytest.mark.timeout(600)
def test_never_means_never_and_an_immature_procedure_is_not_offered(run_cli, project, cli_env):
    env = {**LEXICAL, "MEMAGENT_MEMORY_SKILL_AFTER_USES": "2"}
    _two_sessions(run_cli, project, env)
    listed = json.loads(run_cli("-C", str(project), "memory", "review", "--json", env=env).stdout)
    assert [item for item in listed if item.get("proposal") == "skill"] == []  # maturity 1 < 2
    env["MEMAGENT_MEMORY_SKILL_AFTER_USES"] = "1"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", str(project), "memory", "review"],
        env={**cli_env, **env},
        encoding="utf-8",
        timeout=60,
    )
    _answer_then_quit(child, "n")
    assert not (project / ".claude" / "skills").exists()
    again = json.loads(run_cli("-C", str(project), "memory", "review", "--json", env=env).stdout)
    assert [item for item in again if item.get("proposal") == "skill"] == []


def test_maturity_counts_uses_restatements_and_refinements_over_the_chain():
    from memagent.memory.cards import MemoryCard

    old = MemoryCard(content="Run tests with pytest.", memory_type="procedure", access_count=2)
    new = MemoryCard(
        content="Run tests with uv run pytest.",
        memory_type="procedure",
        access_count=1,
        merged_from=[{"session_id": "s2", "quote": "again"}],
    )
    assert maturity([old]) == 2
    assert maturity([old, new]) == 2 + 1 + 1 + 1
