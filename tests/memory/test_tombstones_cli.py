"""Forget erases exactly what it asked about, and a forgotten id stays forgotten: an export made
before the forget, a card file a `git pull` brings back, and an MCP client cannot resurrect it.
Through the real CLI, real git, the loopback fake API and the official MCP client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapi import FakeAnthropic, text

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical", "MEMAGENT_AUTO_EXTRACT": "false"}
FIRST = "The deploy window is Tuesday 14:00 UTC"
SECOND = "The deploy window is Thursday 09:00 UTC"
THIRD = "The deploy window is Friday 16:00 UTC"
SECRET = "The vault codename is Quetzal-lantern-5521"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], cwd=cwd, check=True, capture_output=True
    )


def cli(run_cli, project: Path, *args: str, input: str | None = None, check: bool = True):
    result = run_cli("-C", str(project), "memory", *args, env=LEXICAL, input=input, timeout=120)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def add(run_cli, project: Path, content: str) -> str:
    return json.loads(cli(run_cli, project, "add", content, "--json").stdout)["card"]["id"]


def chain_of_three(run_cli, project: Path) -> list[str]:
    """Three versions of one memory, oldest first (each edit supersedes the one before)."""
    ids = [add(run_cli, project, FIRST)]
    for content in (SECOND, THIRD):
        ids.append(json.loads(cli(run_cli, project, "edit", ids[-1], content, "--json").stdout)["card"]["id"])
    return ids


def listed_ids(run_cli, project: Path) -> set[str]:
    return {c["id"] for c in json.loads(cli(run_cli, project, "list", "--all", "--json").stdout)}


@pytest.mark.timeout(400)
def test_forget_names_the_earlier_versions_and_erases_only_what_was_agreed(run_cli, project):
    oldest, middle, newest = chain_of_three(run_cli, project)
    answered = cli(run_cli, project, "forget", newest, input="y\nn\n")
    assert f"earlier versions ({middle}, {oldest})" in answered.stderr  # the chain is named in the question
    assert f"Erased 1 memory ({newest}).\n" in answered.stdout
    assert f"Kept 2 earlier versions ({middle}, {oldest})" in answered.stdout
    assert listed_ids(run_cli, project) == {oldest, middle}

    declined = cli(run_cli, project, "forget", middle, input="n\n", check=False)
    assert declined.returncode == 1 and listed_ids(run_cli, project) == {oldest, middle}  # nothing erased
    both = cli(run_cli, project, "forget", middle, input="y\ny\n")
    assert "Erased 2 memories" in both.stdout and listed_ids(run_cli, project) == set()


@pytest.mark.timeout(400)
def test_forget_flags_say_exactly_what_goes(run_cli, project):
    oldest, middle, newest = chain_of_three(run_cli, project)
    alone = json.loads(cli(run_cli, project, "forget", newest, "--yes", "--json").stdout)
    assert alone["erased"] == 1 and alone["ids"] == [newest] and alone["kept_earlier_versions"] == [middle, oldest]
    assert listed_ids(run_cli, project) == {oldest, middle}
    chained = json.loads(cli(run_cli, project, "forget", middle, "--with-history", "--yes", "--json").stdout)
    assert chained["erased"] == 2 and sorted(chained["ids"]) == sorted([middle, oldest])
    assert chained["kept_earlier_versions"] == []
    assert listed_ids(run_cli, project) == set()


@pytest.mark.timeout(400)
def test_importing_an_export_made_before_the_forget_does_not_bring_the_id_back(run_cli, project, tmp_path):
    secret = add(run_cli, project, SECRET)
    kept = add(run_cli, project, "Invoices are generated on the first of the month")
    export = tmp_path / "before.json"
    cli(run_cli, project, "export", "-o", str(export))
    cli(run_cli, project, "forget", secret, "--yes")
    fresh = {"content": "The audit happens every quarter", "memory_type": "fact"}
    export.write_text(json.dumps([*json.loads(export.read_text()), fresh]))

    imported = cli(run_cli, project, "import", str(export))
    lines = imported.stdout.splitlines()
    assert lines[0] == "Imported 1 of 3: 1 duplicates, 0 refused, 1 forgotten here."
    assert [line for line in lines if secret in line] == [
        next(line for line in lines if line.startswith("  record 1: skipped " + secret) and "--force" in line)
    ]
    assert secret not in listed_ids(run_cli, project) and kept in listed_ids(run_cli, project)
    assert not list((project / ".memory").rglob(f"{secret}.md"))

    as_json = json.loads(cli(run_cli, project, "import", str(export), "--json").stdout)
    assert [s["id"] for s in as_json["skipped_forgotten"]] == [secret] and as_json["added"] == 0

    forced = json.loads(cli(run_cli, project, "import", str(export), "--force", "--json").stdout)
    assert forced["ids"] == [secret] and secret in listed_ids(run_cli, project)
    assert secret not in (project / ".memory" / "local" / "tombstones.jsonl").read_text()  # no longer forgotten


def _two_clones(tmp_path: Path) -> tuple[Path, Path]:
    upstream = tmp_path / "upstream.git"
    git("init", "-q", "--bare", str(upstream), cwd=tmp_path)
    here, there = tmp_path / "here", tmp_path / "there"
    git("clone", "-q", str(upstream), str(here), cwd=tmp_path)
    (here / "README.md").write_text("# app\n")
    git("add", "-A", cwd=here)
    git("commit", "-qm", "init", cwd=here)
    git("push", "-q", "origin", "HEAD", cwd=here)
    git("clone", "-q", str(upstream), str(there), cwd=tmp_path)
    return here, there


@pytest.mark.timeout(500)
def test_a_pulled_back_card_file_is_withheld_until_the_user_decides(run_cli, tmp_path):
    here, there = _two_clones(tmp_path)
    secret = add(run_cli, here, SECRET)
    git("add", ".memory", cwd=here)
    git("commit", "-qm", "card", cwd=here)
    git("push", "-q", "origin", "HEAD", cwd=here)
    git("pull", "-q", cwd=there)
    forgot = cli(run_cli, here, "forget", secret, "--yes")
    assert "still in this repository's git history" in forgot.stderr and "git filter-repo" in forgot.stderr
    git("commit", "-qam", "forget", cwd=here)
    git("push", "-q", "origin", "HEAD", cwd=here)
    git("pull", "-q", cwd=there)  # the second clone puts the file back and pushes it
    git("checkout", "HEAD~1", "--", f".memory/cards/{secret}.md", cwd=there)
    git("commit", "-qm", "restore", cwd=there)
    git("push", "-q", "origin", "HEAD", cwd=there)
    git("pull", "-q", cwd=here)
    assert (here / ".memory" / "cards" / f"{secret}.md").is_file()

    with FakeAnthropic([text("Noted.")]) as fake:
        result = run_cli(
            "-C",
            str(here),
            "-p",
            "what is the vault codename?",
            env={**LEXICAL, "ANTHROPIC_BASE_URL": fake.url},
            timeout=240,
        )
        assert result.returncode == 0, result.stderr
        assert "Quetzal" not in json.dumps(fake.requests)  # not injected, not in the profile
    assert secret in result.stderr and "was forgotten here" in result.stderr  # -p: withheld, with a notice
    assert secret not in listed_ids(run_cli, here)
    search = json.loads(cli(run_cli, here, "search", "vault codename", "--json").stdout)
    assert all(hit["card"]["id"] != secret for hit in search)

    review = cli(run_cli, here, "review")  # no terminal: lists it and says how to decide
    assert secret in review.stdout and "came back" in review.stdout and "Quetzal" in review.stdout
    erased = cli(run_cli, here, "forget", secret, "--yes", "--json")
    assert json.loads(erased.stdout)["ids"] == [secret] and not (here / ".memory" / "cards" / f"{secret}.md").exists()


def test_a_returned_card_the_user_keeps_is_used_again(open_service, paths):
    service = open_service()
    card = service.save(SECRET, "fact").card
    text_before = (paths.memory / "cards" / f"{card.id}.md").read_bytes()
    assert service.forget([card.id]) == 1
    (paths.memory / "cards" / f"{card.id}.md").write_bytes(text_before)  # a checkout brings it back
    assert [i for i, _, _ in service.withheld()] == [card.id]
    assert service.get(card.id) is None and service.search("vault codename") == []
    assert any("was forgotten here" in notice for notice in service.notices())
    service.readmit([card.id])
    assert service.withheld() == [] and [h.card.id for h in service.search("vault codename")] == [card.id]


async def _mcp_script(project: Path, home: Path, forgotten: str) -> tuple[str, str, str, bool]:
    from mcp import Client, StdioServerParameters

    env = {key: value for key, value in os.environ.items() if key.startswith(("ORT_", "ANONYMIZED_", "XDG_"))}
    env.update(HOME=os.environ["HOME"], PATH=os.environ.get("PATH", ""), MEMAGENT_HOME=str(home), **LEXICAL)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memagent", "mcp", "serve", "-C", str(project)], env=env
    )
    async with Client(params, cache=None, read_timeout_seconds=120) as client:
        correct = await client.call_tool(
            "memory_save",
            {"content": "The vault codename is Quetzal-lantern-9999", "memory_type": "fact", "supersedes": forgotten},
        )
        found = await client.call_tool("memory_search", {"query": "vault codename Quetzal"})
        listed = await client.call_tool("memory_list", {})

    def text_of(result) -> str:
        return "\n".join(item.text for item in result.content if item.type == "text")

    return text_of(correct), text_of(found), text_of(listed), bool(correct.is_error)


@pytest.mark.timeout(400)
def test_mcp_serve_cannot_resurrect_a_forgotten_id(run_cli, project):
    secret = add(run_cli, project, SECRET)
    card_file = project / ".memory" / "cards" / f"{secret}.md"
    saved_bytes = card_file.read_bytes()
    cli(run_cli, project, "forget", secret, "--yes")
    card_file.write_bytes(saved_bytes)  # and a checkout brings the file back
    correct, found, listed, refused = asyncio.run(_mcp_script(project, Path(os.environ["MEMAGENT_HOME"]), secret))
    assert refused and f"no memory {secret}" in correct  # no correction can link to (and revive) it
    assert secret not in found and "Quetzal-lantern-5521" not in found
    assert secret not in listed
    assert secret not in listed_ids(run_cli, project)
    assert secret in (project / ".memory" / "local" / "tombstones.jsonl").read_text()


@pytest.mark.timeout(400)
def test_forget_names_the_transcripts_and_tracked_files_that_still_hold_the_text(run_cli, project):
    git("init", "-q", cwd=project)
    secret = add(run_cli, project, SECRET)
    git("add", ".memory", cwd=project)
    git("commit", "-qm", "card", cwd=project)
    with FakeAnthropic([text("It is in memory.")]) as fake:
        asked = run_cli(
            "-C",
            str(project),
            "-p",
            "what is the vault codename?",
            env={**LEXICAL, "ANTHROPIC_BASE_URL": fake.url},
            timeout=240,
        )
        assert asked.returncode == 0, asked.stderr
        assert "Quetzal-lantern-5521" in json.dumps(fake.requests)  # injected this time
    session = next((project / ".transcripts").glob("*.jsonl")).stem
    home = Path(os.environ["MEMAGENT_HOME"])
    assert any(b"Quetzal-lantern-5521" in p.read_bytes() for p in home.rglob("*.json"))  # the profile cache
    erased = json.loads(cli(run_cli, project, "forget", secret, "--yes", "--json").stdout)
    assert erased["in_transcripts"] == [session]
    assert [Path(p).name for p in erased["tracked_by_git"]] == [f"{secret}.md"]
    holding = [
        p
        for root in (project / ".memory", home)
        for p in root.rglob("*")
        if p.is_file() and b"Quetzal-lantern-5521" in p.read_bytes()
    ]
    assert holding == []  # cards, index, history, vector cache, profile caches: every file memagent wrote
    said = cli(run_cli, project, "forget", add(run_cli, project, "The audit happens every quarter"), "--yes")
    assert "transcript" not in said.stderr  # a card no session saw names none


def test_a_committed_vector_cache_file_is_named_as_still_in_git_history(open_service, paths):
    from memagent.config import Settings

    service = open_service(settings=Settings(memory_commit_vectors=True))
    card = service.save(SECRET, "fact").card
    git("init", "-q", cwd=paths.root)
    git("add", ".memory", cwd=paths.root)
    git("commit", "-qm", "cards", cwd=paths.root)
    report = service.forget_report([card.id])
    names = sorted(p.name for p in report.tracked)
    assert len(names) == 2 and f"{card.id}.md" in names and any(n.endswith(".vec") for n in names)


@pytest.mark.timeout(300)
def test_an_imported_card_is_scoped_by_identity_not_by_a_path(run_cli, project, tmp_path):
    record = {
        "id": "m_00000000abcd",
        "content": "The API gateway listens on port 8443",
        "memory_type": "fact",
        "scope": "project",
        "scope_id": "/home/alice/src/app",
        "files": [str(project / "gateway" / "config.yaml"), "/home/alice/src/app/gateway/main.go"],
    }
    export = tmp_path / "from-alice.json"
    export.write_text(json.dumps([record]))
    cli(run_cli, project, "import", str(export))
    written = (project / ".memory" / "cards" / "m_00000000abcd.md").read_text()
    identity = (project / ".memory" / "project-id").read_text().strip()
    assert f"scope_id: {identity}" in written and "/home/alice/src/app\n" not in written
    assert "- gateway/config.yaml" in written and str(project) not in written
