"""The smaller rough edges, each through the real CLI: doctor and unreadable cards, memory stats'
embedder line, an empty memory search, plain task ids and the shell's ``#`` comment,
``tasks add --blocked-by``."""

from __future__ import annotations

import json

import pytest

from memagent.embedding.embedders import expected_embedder


def _bad_cards(project):
    cards = project / ".memory" / "cards"
    cards.mkdir(parents=True)
    (cards / "m_broken000001.md").write_text("---\nid: m_broken000001\n: [not yaml\n---\nbody\n")
    (cards / "m_broken000002.md").write_bytes(b"\x00\xff\xfe not a card")


def test_doctor_names_unreadable_card_files_instead_of_store_ok(run_cli, project):
    _bad_cards(project)
    report = run_cli("-C", str(project), "doctor", "--json", timeout=180)
    assert report.returncode == 0, report.stderr
    store = json.loads(report.stdout)["store"]
    assert store["status"] == "2 card files cannot be read (skipped)"
    assert any("m_broken000001.md: bad front matter" in p for p in store["unreadable_cards"])
    text = run_cli("-C", str(project), "doctor", timeout=180).stdout
    assert "store      ok" not in text and "store      2 card files cannot be read" in text
    assert "    ! " in text and "m_broken000002.md" in text


@pytest.fixture(scope="module")
def fresh_project_doctor(module_cli, tmp_path_factory) -> dict:
    """``doctor --json`` in a new project, run once for the tests that read it."""
    project = tmp_path_factory.mktemp("doctor") / "project"
    project.mkdir()
    report = module_cli("-C", str(project), "doctor", "--json", timeout=180)
    assert report.returncode == 0, report.stderr
    return json.loads(report.stdout)


def test_doctor_says_store_ok_when_every_card_reads(fresh_project_doctor):
    assert fresh_project_doctor["store"]["status"] == "ok"


def test_doctor_and_memory_stats_name_the_same_embedder(fresh_project_doctor):
    expected = expected_embedder()
    doctor = fresh_project_doctor["embedding"]
    assert (doctor["backend"], doctor["dim"]) == (expected["name"], expected["dim"])


def test_memory_stats_names_the_embedder_and_its_dimension(run_cli, project):
    expected = expected_embedder()
    stats = run_cli("-C", str(project), "memory", "stats")
    assert stats.returncode == 0, stats.stderr
    line = next(line for line in stats.stdout.splitlines() if "embedder:" in line)
    assert line.strip() == f"embedder: {expected['name']} ({expected['model_id']}, dim {expected['dim']})"
    assert "auto" not in line and "None" not in line
    data = json.loads(run_cli("-C", str(project), "memory", "stats", "--json").stdout)
    assert data["embedder"] == expected


def test_an_empty_memory_search_is_a_usage_error(run_cli, project):
    for query in ("", "   "):
        result = run_cli("-C", str(project), "memory", "search", query)
        assert result.returncode == 2 and result.stdout == ""
        [line] = result.stderr.splitlines()
        assert line.startswith("memagent: the search query is empty")


def test_task_ids_print_plain_and_a_missing_id_hints_at_the_shell_comment(run_cli, project):
    first = run_cli("-C", str(project), "tasks", "add", "design the schema")
    assert first.stdout == "Created task 1: design the schema [pending]\n" and "#" not in first.stdout
    run_cli("-C", str(project), "tasks", "add", "write the code")
    third = run_cli("-C", str(project), "tasks", "add", "write tests", "--blocked-by", "1,2")
    assert third.returncode == 0, third.stderr
    assert third.stdout == "Created task 3: write tests [pending]\n"
    shown = run_cli("-C", str(project), "tasks", "show", "3").stdout
    assert "blocked by: 1 design the schema (pending); 2 write the code (pending)" in shown and "#" not in shown
    for plain in ("3", "#3"):  # both spellings are accepted
        assert run_cli("-C", str(project), "tasks", "show", plain).returncode == 0
    listed = run_cli("-C", str(project), "tasks", "list").stdout
    assert "#" not in listed and "1, 2" in listed
    # `memagent tasks show #3` typed in a shell: the shell drops "#3" as a comment
    missing = run_cli("-C", str(project), "tasks", "show")
    assert missing.returncode == 2
    [line] = missing.stderr.splitlines()
    assert "missing argument ID" in line and "quote it or drop the #" in line
    run_cli("-C", str(project), "tasks", "add", "release")
    linked = run_cli("-C", str(project), "tasks", "update", "1", "--blocks", "4")
    assert linked.returncode == 0, linked.stderr
    assert json.loads(run_cli("-C", str(project), "tasks", "show", "4", "--json").stdout)["blockedBy"] == [1]


def test_task_errors_name_the_option_typed_and_print_plain_ids(run_cli, project):
    run_cli("-C", str(project), "tasks", "add", "first")
    run_cli("-C", str(project), "tasks", "add", "second", "--blocked-by", "1")
    bad = run_cli("-C", str(project), "tasks", "add", "x", "--blocked-by", "abc")
    assert bad.returncode == 2 and bad.stderr.startswith("memagent: --blocked-by/--after expects task ids"), bad.stderr
    missing = run_cli("-C", str(project), "tasks", "add", "x", "--blocked-by", "9")
    assert missing.returncode == 1 and "task 9 does not exist" in missing.stderr and "#" not in missing.stderr
    cycle = run_cli("-C", str(project), "tasks", "update", "1", "--blocked-by", "2")
    assert cycle.returncode == 1 and "cycle" in cycle.stderr and "#" not in cycle.stderr
    blocked = run_cli("-C", str(project), "tasks", "update", "2", "--status", "in_progress")
    assert blocked.returncode == 1 and "task 2 cannot be set in_progress: it is blocked by 1" in blocked.stderr
