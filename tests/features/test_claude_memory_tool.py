"""Claude's own memory tool (``memory_20250818``) over memagent's cards, through the real CLI, the
real anthropic SDK and the strict fake Messages API: the entry is sent as the API defines it,
``view``/``create``/``str_replace``/``insert`` round-trip on card files through the gate and the
supersede rules, ``delete`` asks, paths stay under ``/memories``, a secret never lands in clear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakeapi import FakeAnthropic, text, tool
from memagent import models
from memagent.features.claude_memory_tool import numbered, parse_path
from memagent.memory.cardfiles import parse
from memagent.tools.base import ToolError

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical", "MEMAGENT_AUTO_EXTRACT": "false"}
A = "a1B2c3D4e5F6g7H8i9J0"
GITHUB_TOKEN = "gh" + "p_" + A + A[:16]  # assembled so no scanner flags this file


def results(fake: FakeAnthropic) -> dict[str, dict]:
    found = {}
    for request in fake.requests:
        for message in request["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        found[block["tool_use_id"]] = block
    return found


def content(block: dict) -> str:
    value = block["content"]
    return value if isinstance(value, str) else json.dumps(value)


def run_memory(run_cli, project: Path, calls: list[dict], *flags: str, env: dict | None = None):
    """``memagent -p`` where the model calls the memory tool with each input in turn."""
    steps = [tool("memory", raw, id=f"toolu_{index}") for index, raw in enumerate(calls)]
    with FakeAnthropic([*steps, text("done")]) as fake:
        result = run_cli(
            "-C",
            str(project),
            "-p",
            "remember things",
            *flags,
            env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL, **(env or {})},
            timeout=180,
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == [], fake.errors
        found = results(fake)
        return fake, [found[f"toolu_{index}"] for index in range(len(calls))]


def card_files(project: Path) -> list[Path]:
    return sorted((project / ".memory").rglob("m_*.md")) if (project / ".memory").exists() else []


def active_cards(project: Path) -> list:
    cards = [parse(p.read_text(), str(p)) for p in card_files(project)]
    return [c for c in cards if c.status == "active"]


def test_the_tool_entry_is_sent_as_the_api_defines_it(run_cli, project):
    fake, (listed,) = run_memory(run_cli, project, [{"command": "view", "path": "/memories"}])
    entries = [t for t in fake.requests[0]["tools"] if t.get("name") == "memory"]
    assert len(entries) == 1
    assert {k: v for k, v in entries[0].items() if k != "cache_control"} == {
        "type": "memory_20250818",
        "name": "memory",
    }
    assert not listed.get("is_error") and "no memories yet" in content(listed)
    assert "/memories" in json.dumps(fake.requests[0]["system"])  # the guide says what the folder is


def test_view_create_str_replace_insert_round_trip_on_card_files(run_cli, project):
    note = "/memories/notes.md"
    _, answers = run_memory(
        run_cli,
        project,
        [
            {"command": "create", "path": note, "file_text": "The test suite runs with pytest -n 2."},
            {"command": "view", "path": note},
            {"command": "str_replace", "path": note, "old_str": "pytest -n 2", "new_str": "pytest -n 4"},
            {"command": "insert", "path": note, "insert_line": 1, "insert_text": "Use uv to install it."},
            {"command": "view", "path": "/memories"},
        ],
    )
    created, viewed, replaced, inserted, listing = answers
    assert not any(a.get("is_error") for a in answers), [content(a) for a in answers]
    assert "File created successfully at /memories/notes.md" in content(created)
    assert "     1\tThe test suite runs with pytest -n 2." in content(viewed)
    assert "supersedes" in content(replaced) and "supersedes" in content(inserted)
    (current,) = active_cards(project)
    assert current.content == "The test suite runs with pytest -n 4.\nUse uv to install it."
    assert current.source == "assistant" and current.scope == "project"
    everything = [parse(p.read_text(), str(p)) for p in card_files(project)]
    assert len(everything) == 3 and sum(c.status == "superseded" for c in everything) == 2  # history kept
    assert "/memories/notes.md" in content(listing) and "pytest -n 4" in content(listing)


def test_a_later_session_sees_the_card_by_id_and_edits_it(run_cli, project):
    run_memory(
        run_cli,
        project,
        [{"command": "create", "path": "/memories/db.md", "file_text": "The project's database is PostgreSQL 16."}],
    )
    (card,) = active_cards(project)
    path = f"/memories/{card.id}.md"
    _, (listing, viewed, edited) = run_memory(
        run_cli,
        project,
        [
            {"command": "view", "path": "/memories/"},
            {"command": "view", "path": path, "view_range": [1, -1]},
            {"command": "str_replace", "path": path, "old_str": "PostgreSQL 16", "new_str": "PostgreSQL 17"},
        ],
    )
    assert path in content(listing) and "PostgreSQL 16" in content(listing)
    assert "     1\tThe project's database is PostgreSQL 16." in content(viewed)
    assert not edited.get("is_error"), content(edited)
    (now,) = active_cards(project)
    assert now.content == "The project's database is PostgreSQL 17." and now.supersedes == card.id


def test_delete_asks_and_is_refused_in_print_mode_without_permission(run_cli, project):
    run_memory(
        run_cli,
        project,
        [{"command": "create", "path": "/memories/keep.md", "file_text": "Releases are tagged from the main branch."}],
    )
    (card,) = active_cards(project)
    _, (deleted,) = run_memory(run_cli, project, [{"command": "delete", "path": f"/memories/{card.id}.md"}])
    assert deleted["is_error"] is True and "erases a memory" in content(deleted)
    assert [c.id for c in active_cards(project)] == [card.id]
    _, (allowed,) = run_memory(
        run_cli, project, [{"command": "delete", "path": f"/memories/{card.id}.md"}], "--allowedTools", "memory"
    )
    assert not allowed.get("is_error"), content(allowed)
    assert active_cards(project) == [] and not any("Releases" in p.read_text() for p in card_files(project))


def test_a_user_memory_asks_like_memory_save_with_scope_user(run_cli, project, cli_env):
    _, (saved,) = run_memory(
        run_cli,
        project,
        [{"command": "create", "path": "/memories/user/prefs.md", "file_text": "The user prefers short answers."}],
    )
    assert saved["is_error"] is True and "saves a user memory" in content(saved)
    home = Path(cli_env["MEMAGENT_HOME"]) / "memory"
    assert not any("short answers" in p.read_text() for p in home.rglob("*.md")) if home.exists() else True


TRAVERSALS = [
    "/memories/../.git/config",
    "/memories/../../etc/passwd",
    "/etc/passwd",
    "/memories/./notes.md",
    "/memories/.hidden.md",
    "/memories/a/b/c.md",
    "memories/notes.md",
    "/memories/%2e%2e/x",
    "/memories/user/../../x",
    "/memoriesX/notes.md",
]


def test_paths_outside_memories_are_refused(run_cli, project):
    (project / "outside.md").write_text("untouched\n")
    calls = [{"command": "create", "path": path, "file_text": "The build uses make."} for path in TRAVERSALS]
    calls.append({"command": "view", "path": "/memories/../outside.md"})
    calls.append({"command": "rename", "old_path": "/memories/x.md", "new_path": "/tmp/x.md"})
    _, answers = run_memory(run_cli, project, calls)
    assert all(a["is_error"] is True for a in answers), [content(a) for a in answers]
    assert active_cards(project) == [] and (project / "outside.md").read_text() == "untouched\n"
    assert not Path("/etc/passwd.md").exists()


def test_a_symlinked_card_folder_leads_nowhere(run_cli, project, tmp_path):
    """The card store refuses a linked folder; the tool never maps a path to a file itself."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".memory").mkdir()
    (project / ".memory" / "cards").symlink_to(elsewhere, target_is_directory=True)
    _, (created,) = run_memory(
        run_cli, project, [{"command": "create", "path": "/memories/n.md", "file_text": "Deploys happen on Fridays."}]
    )
    assert created["is_error"] is True, content(created)
    assert list(elsewhere.iterdir()) == []


def test_a_secret_written_through_the_tool_never_lands_in_clear(run_cli, project, cli_env):
    _, answers = run_memory(
        run_cli,
        project,
        [
            {"command": "create", "path": "/memories/creds.md", "file_text": f"The CI token is {GITHUB_TOKEN}."},
            {"command": "create", "path": "/memories/ok.md", "file_text": "CI runs on GitHub Actions."},
            {
                "command": "str_replace",
                "path": "/memories/ok.md",
                "old_str": "GitHub Actions",
                "new_str": f"GitHub Actions with token {GITHUB_TOKEN}",
            },
        ],
    )
    refused, fine, edited = answers
    assert refused["is_error"] is True and "memory not saved" in content(refused)
    assert not fine.get("is_error") and edited["is_error"] is True
    home = Path(cli_env["MEMAGENT_HOME"])
    for path in [*project.rglob("*"), *home.rglob("*")]:
        if path.is_file():
            assert GITHUB_TOKEN.encode() not in path.read_bytes(), path


def test_an_unknown_model_or_the_setting_off_offers_no_memory_tool(run_cli, project):
    for env in ({"MEMAGENT_MEMORY_TOOL": "false"}, {"MEMAGENT_MODEL": "claude-3-5-haiku-20241022"}):
        with FakeAnthropic([text("ok")]) as fake:
            result = run_cli("-C", str(project), "-p", "hi", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL, **env})
            assert result.returncode == 0, result.stderr
            assert not any(t.get("name") == "memory" for t in fake.requests[0]["tools"]), env


def test_the_registry_says_which_models_know_the_tool():
    assert "memory_tool" in models.info("sonnet").capabilities
    assert "memory_tool" in models.info("claude-haiku-4-5").capabilities
    assert "memory_tool" not in models.info("claude-3-7-sonnet-20250219").capabilities
    assert "memory_tool" not in models.info("claude-3-5-sonnet-20241022").capabilities
    assert "memory_tool" not in models.info("llama3:8b").capabilities


@pytest.mark.parametrize(
    "raw",
    TRAVERSALS + ["", "/", "/memories/user/session/x.md", "/memories/a\x00.md", "/memories\\..\\x", " /memories/x.md"],
)
def test_parse_path_refuses_anything_outside(raw):
    with pytest.raises(ToolError):
        parse_path(raw)


def test_parse_path_and_line_numbers():
    assert parse_path("/memories").name is None
    assert parse_path("/memories/user/").folder == "user"
    assert parse_path("/memories/user/m_0123456789ab.md").card_id == "m_0123456789ab"
    assert parse_path("/memories/notes.md").scope == "project"
    assert numbered("a\nb\nc", [2, -1]) == "     2\tb\n     3\tc"
    with pytest.raises(ToolError):
        numbered("a", [2, 3])


def test_the_adapter_sends_the_entry_the_sdk_types_unchanged():
    from anthropic.types import MemoryTool20250818Param

    from memagent.features.claude_memory_tool import ClaudeMemoryToolFeature
    from memagent.llm.anthropic import build_params
    from memagent.llm.types import ModelRequest, text_block

    (memory,) = ClaudeMemoryToolFeature(lambda: None).tools()  # type: ignore[arg-type, return-value]
    entry = memory.schema()
    fields = MemoryTool20250818Param.__annotations__  # the SDK's own spelling of the entry
    assert set(entry) == {name for name, kind in fields.items() if "Required" in str(kind)} == {"type", "name"}
    assert "memory_20250818" in str(fields["type"]) and "memory" in str(fields["name"])
    other = {"name": "read_file", "description": "Read.", "input_schema": {"type": "object", "properties": {}}}
    request = ModelRequest(
        system=[text_block("s")],
        messages=[{"role": "user", "content": [text_block("hi")]}],
        tools=[entry, other],
        max_tokens=100,
    )
    assert build_params(request, "claude-sonnet-5-5")["tools"][0] == {"type": "memory_20250818", "name": "memory"}


def test_plan_mode_reads_but_refuses_every_write(run_cli, project):
    _, (listed, created) = run_memory(
        run_cli,
        project,
        [
            {"command": "view", "path": "/memories"},
            {"command": "create", "path": "/memories/plan.md", "file_text": "The build uses make."},
        ],
        "--permission-mode",
        "plan",
    )
    assert not listed.get("is_error") and created["is_error"] is True
    assert active_cards(project) == []


def test_rename_names_a_card_and_moving_it_to_user_asks(run_cli, project):
    _, (created, renamed, viewed, moved) = run_memory(
        run_cli,
        project,
        [
            {"command": "create", "path": "/memories/a.md", "file_text": "Migrations live in db/migrations."},
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/db-notes.md"},
            {"command": "view", "path": "/memories/db-notes.md"},
            {"command": "rename", "old_path": "/memories/db-notes.md", "new_path": "/memories/user/db.md"},
        ],
    )
    assert not created.get("is_error") and not renamed.get("is_error"), content(renamed)
    assert "     1\tMigrations live in db/migrations." in content(viewed)
    assert moved["is_error"] is True and "saves a user memory" in content(moved)
    (card,) = active_cards(project)
    assert card.scope == "project" and card.content == "Migrations live in db/migrations."
