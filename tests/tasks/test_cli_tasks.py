"""`memagent tasks …` through the real typer app (CliRunner) and one real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memagent.cli.main import app
from memagent.tasks import TaskStore

TASK_KEYS = {
    "id",
    "subject",
    "description",
    "status",
    "blockedBy",
    "blocks",
    "owner",
    "created_at",
    "updated_at",
    "ready",
}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "120", "NO_COLOR": "1"})


def run(runner: CliRunner, project: Path, *args: str, code: int = 0):
    result = runner.invoke(app, ["tasks", *args, "-C", str(project)])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def run_json(runner: CliRunner, project: Path, *args: str, code: int = 0):
    return json.loads(run(runner, project, *args, "--json", code=code).stdout)


def seed(project: Path) -> TaskStore:
    store = TaskStore(project / ".tasks")
    store.create("design the schema", "tables and keys")
    store.create("write the code", blocked_by=[1])
    store.create("write tests", blocked_by=[1, 2])
    store.create("update docs", owner="ana")
    return store


def assert_task_schema(task: dict) -> None:
    assert set(task) >= TASK_KEYS
    assert isinstance(task["id"], int) and isinstance(task["subject"], str)
    assert task["status"] in {"pending", "in_progress", "completed", "cancelled"}
    assert all(isinstance(i, int) for i in task["blockedBy"] + task["blocks"])
    assert isinstance(task["ready"], bool)


# ------------------------------------------------------------------ reads


def test_list_table_marks_ready_tasks_and_shows_edges(runner, project):
    seed(project)
    out = run(runner, project, "list").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "Subject", "Status", "Owner", "Blocked", "by", "Blocks"]
    row1 = next(line for line in lines if "design the schema" in line)  # ids are plain: # starts a shell comment
    assert row1.split()[:2] == ["▶", "1"] and "ready" in row1 and "2, 3" in row1 and "#" not in row1
    row3 = next(line for line in lines if "write tests" in line)
    assert "▶" not in row3 and "pending" in row3 and "1, 2" in row3
    assert "ana" in next(line for line in lines if "update docs" in line)
    assert "4 tasks · ▶ 2 ready to start" in out


def test_bare_tasks_is_list_and_honours_json_and_a_root_before_tasks(runner, project):
    seed(project)
    assert "write tests" in run(runner, project).stdout
    result = runner.invoke(app, ["-C", str(project), "tasks", "--json"])
    assert result.exit_code == 0
    assert [t["id"] for t in json.loads(result.stdout)["tasks"]] == [1, 2, 3, 4]
    result = runner.invoke(app, ["-C", str(project), "tasks", "ready", "--json"])
    assert [t["id"] for t in json.loads(result.stdout)["tasks"]] == [1, 4]
    result = runner.invoke(app, ["tasks", "-C", str(project), "blocked"])
    assert result.exit_code == 0 and "write tests" in result.stdout


def test_list_json_schema(runner, project):
    seed(project)
    data = run_json(runner, project, "list")
    assert set(data) == {"tasks", "problems"} and data["problems"] == []
    for task in data["tasks"]:
        assert_task_schema(task)
    by_id = {t["id"]: t for t in data["tasks"]}
    assert by_id[1]["ready"] and by_id[1]["blocks"] == [2, 3] and by_id[1]["description"] == "tables and keys"
    assert by_id[3]["blockedBy"] == [1, 2] and not by_id[3]["ready"]


def test_ready_and_blocked(runner, project):
    seed(project)
    assert [t["id"] for t in run_json(runner, project, "ready")["tasks"]] == [1, 4]
    assert [t["id"] for t in run_json(runner, project, "blocked")["tasks"]] == [2, 3]
    table = run(runner, project, "blocked").stdout
    assert "write the code" in table and "design the schema" not in table
    empty = project.parent / "empty"
    empty.mkdir()
    assert run(runner, empty, "ready").stdout == "No ready tasks.\n"


def test_show(runner, project):
    seed(project)
    out = run(runner, project, "show", "3").stdout
    assert "task 3: write tests" in out
    assert "blocked by: 1 design the schema (pending); 2 write the code (pending)" in out
    data = run_json(runner, project, "show", "1")
    assert_task_schema(data)
    assert data["id"] == 1 and data["blocks"] == [2, 3]


def test_tree(runner, project):
    seed(project)
    out = run(runner, project, "tree").stdout
    assert out == (
        "Tasks\n"
        "├── 1 design the schema [ready]\n"
        "│   ├── 2 write the code [pending]\n"
        "│   │   └── 3 write tests [pending]\n"
        "│   └── 3 write tests [pending] (shown above)\n"
        "└── 4 update docs [ready]\n"
    )
    data = run_json(runner, project, "tree")
    assert [(line["id"], line["depth"], line["repeat"]) for line in data["lines"]] == [
        (1, 0, False),
        (2, 1, False),
        (3, 2, False),
        (3, 1, True),
        (4, 0, False),
    ]
    assert set(data["lines"][0]) == {"id", "depth", "subject", "status", "ready", "repeat", "missing", "detached"}


def test_tree_survives_a_hand_made_cycle_and_missing_tasks(runner, project):
    store = seed(project)
    (store.root / "task_5.json").write_text(
        json.dumps({"id": 5, "subject": "loop a", "status": "pending", "blockedBy": [6], "blocks": [6, 77]})
    )
    (store.root / "task_6.json").write_text(
        json.dumps({"id": 6, "subject": "loop b", "status": "pending", "blockedBy": [5], "blocks": [5]})
    )
    (store.root / "task_7.json").write_text("{ broken")
    result = run(runner, project, "tree")
    assert "Not reachable from a root" in result.stdout
    assert "5 loop a" in result.stdout and "6 loop b" in result.stdout and "77 (missing task)" in result.stdout
    assert "task_7.json: invalid JSON" in result.stderr
    data = run_json(runner, project, "tree")
    detached = [line["id"] for line in data["lines"] if line["detached"]]
    assert 5 in detached and 6 in detached
    assert any("dependency cycle" in p for p in data["problems"])


def test_tree_of_a_long_chain_stops_indenting(runner, project):
    store = TaskStore(project / ".tasks")
    for i in range(1, 41):
        store.create(f"step {i}", blocked_by=[i - 1] if i > 1 else [])
    lines = run(runner, project, "tree").stdout.splitlines()
    assert len(lines) == 41
    indents = [line.index("step") for line in lines[1:]]
    assert max(indents) <= 100  # guides stop growing well inside the 120 columns
    assert indents[-1] == indents[-5]  # the deepest tasks share one indent
    assert lines[-1].endswith("40 step 40 [pending] (depth 39)")


def test_empty_and_missing_project_data(runner, project):
    assert "No tasks." in run(runner, project, "list").stdout
    assert run_json(runner, project, "list") == {"tasks": [], "problems": []}
    assert "No tasks." in run(runner, project, "tree").stdout
    assert not (project / ".tasks").exists()


# ------------------------------------------------------------------ writes


def test_add_with_description_and_dependencies(runner, project):
    seed(project)
    out = run(runner, project, "add", "ship it", "--desc", "tag and push", "--after", "2", "--after", "#3,4").stdout
    assert out.strip() == "Created task 5: ship it [pending]"
    task = TaskStore(project / ".tasks").get(5)
    assert task.description == "tag and push" and task.blockedBy == [2, 3, 4]
    data = run_json(runner, project, "add", "more", "--owner", "bo")
    assert_task_schema(data)
    assert data["id"] == 6 and data["owner"] == "bo"


def test_update_status_owner_and_edges(runner, project):
    seed(project)
    run(runner, project, "update", "4", "--status", "in_progress", "--owner", "me")
    task = TaskStore(project / ".tasks").get(4)
    assert task.status == "in_progress" and task.owner == "me"
    run(runner, project, "update", "4", "--before", "3")
    assert TaskStore(project / ".tasks").get(3).blockedBy == [1, 2, 4]
    data = run_json(runner, project, "update", "2", "--after", "4")
    assert data["blockedBy"] == [1, 4]


def test_refusals_exit_1_with_one_line(runner, project):
    seed(project)
    cycle = run(runner, project, "update", "1", "--after", "3", code=1)
    assert cycle.stderr.count("\n") == 1 and "cycle 3 → 1" in cycle.stderr
    blocked = run(runner, project, "done", "3", code=1)
    assert blocked.stderr.startswith("memagent: task 3 cannot be set completed: it is blocked by 1")
    assert "--force" in blocked.stderr and blocked.stderr.count("\n") == 1
    missing = run(runner, project, "show", "42", code=1)
    assert missing.stderr == "memagent: task 42 does not exist\n"
    run(runner, project, "update", "42", "--status", "completed", code=1)
    run(runner, project, "add", "x", "--after", "42", code=1)
    assert TaskStore(project / ".tasks").get(3).status == "pending"


def test_usage_errors_exit_2(runner, project):
    seed(project)
    run(runner, project, "update", "1", "--status", "finished", code=2)
    run(runner, project, "update", "1", code=2)
    bad = run(runner, project, "add", "x", "--after", "two", code=2)
    assert "--blocked-by/--after expects task ids" in bad.stderr
    run(runner, project, "show", "abc", code=2)
    result = runner.invoke(app, ["tasks", "list", "-C", str(project / "no-such-dir")])
    assert result.exit_code == 2 and "is not a directory" in result.stderr


def test_done_and_force(runner, project):
    seed(project)
    out = run(runner, project, "done", "1").stdout
    assert out == "Completed task 1: design the schema [completed]\nReady now: 2\n"  # 4 was ready before
    run(runner, project, "done", "3", "--force")
    store = TaskStore(project / ".tasks")
    assert store.get(3).status == "completed" and store.get(2).blocks == []
    data = run_json(runner, project, "done", "2")
    assert data["status"] == "completed" and data["ready"] is False


def test_cancel(runner, project):
    seed(project)
    run(runner, project, "cancel", "1")
    assert [t["id"] for t in run_json(runner, project, "ready")["tasks"]] == [2, 4]


def test_check_and_fix(runner, project):
    store = seed(project)
    assert run(runner, project, "check").stdout == "Task graph OK.\n"
    data = json.loads((store.root / "task_2.json").read_text())
    data["blockedBy"] = [1, 99]
    (store.root / "task_2.json").write_text(json.dumps(data))
    (store.root / "task_8.json").write_text('{"id": 8, "subject": "x", "status": "pending", "owner": 3}')
    found = run(runner, project, "check", code=1)
    assert "problem: task_2.json: blockedBy names #99, which does not exist" in found.stdout
    assert "problem: task_8.json: 'owner' must be a string" in found.stdout
    report = run_json(runner, project, "check", code=1)
    assert report["ok"] is False and report["fixed"] == [] and len(report["problems"]) == 2

    fixed = run_json(runner, project, "check", "--fix", code=1)  # the unreadable file remains
    assert fixed["fixed"] == ["task_2.json: blockedBy names #99, which does not exist — removed"]
    assert fixed["remaining"] == ["task_8.json: 'owner' must be a string, got int; skipped"]
    (store.root / "task_8.json").unlink()
    assert run_json(runner, project, "check", "--fix") == {"ok": True, "problems": [], "fixed": [], "remaining": []}


def test_reads_warn_about_malformed_files_on_stderr_and_keep_going(runner, project):
    store = seed(project)
    (store.root / "task_9.json").write_text("[]")
    result = run(runner, project, "list")
    assert "write tests" in result.stdout
    assert result.stderr == "memagent: warning: task_9.json: expected a JSON object, got list; skipped\n"
    data = run_json(runner, project, "list")
    assert [t["id"] for t in data["tasks"]] == [1, 2, 3, 4]
    assert data["problems"] == ["task_9.json: expected a JSON object, got list; skipped"]


# ------------------------------------------------------------------ a real process


IMPORT_PROBE = """
import sys
sys.argv = ["memagent", "tasks", "list", "--json"]
from memagent.cli.main import run
try:
    run()
except SystemExit as exc:
    code = exc.code or 0
else:
    code = 0
heavy = sorted(m for m in ("anthropic", "chromadb", "onnxruntime") if m in sys.modules)
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
sys.exit(code)
"""


def test_the_installed_command_lists_without_heavy_imports(project):
    seed(project)
    exe = Path(sys.executable).parent / "memagent"
    listed = subprocess.run(
        [str(exe), "tasks", "list", "--json"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert [t["id"] for t in json.loads(listed.stdout)["tasks"]] == [1, 2, 3, 4]
    probe = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout)["tasks"][0]["subject"] == "design the schema"
    assert "HEAVY=\n" in probe.stderr, probe.stderr


def test_importtime_of_tasks_list_shows_no_sdk_or_vector_store(project):
    seed(project)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memagent", "tasks", "list"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "design the schema" in result.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "typer" in imported and "memagent" in imported  # the probe sees real imports
    assert not imported & {"anthropic", "chromadb", "onnxruntime"}


def test_core_modules_import_no_ui_or_sdk(project):
    code = (
        "import sys, memagent.tasks, memagent.todo, memagent.features.tasks, memagent.features.todos\n"
        "print(sorted(m for m in ('typer', 'rich', 'anthropic', 'chromadb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_user_text_is_printed_literally(runner, project):
    store = TaskStore(project / ".tasks")
    store.create("[bold]not markup[/bold] ünïcödé", "desc with [red]brackets[/red]", owner="[i]me[/i]")
    shown = run(runner, project, "show", "1").stdout
    assert "[bold]not markup[/bold] ünïcödé" in shown
    assert "owner:      [i]me[/i]" in shown and "desc with [red]brackets[/red]" in shown
    assert "[bold]not markup[/bold] ünïcödé" in run(runner, project, "list").stdout
    assert run_json(runner, project, "show", "1")["subject"] == "[bold]not markup[/bold] ünïcödé"
