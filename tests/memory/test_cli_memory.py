"""`memagent memory …` through typer's CliRunner: JSON schemas, exit codes, confirmation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from memagent.cli.main import app

CARD_KEYS = {
    "id",
    "content",
    "memory_type",
    "scope",
    "scope_id",
    "source",
    "provenance",
    "confidence",
    "importance",
    "status",
    "supersedes",
    "superseded_by",
    "task_hint",
    "files",
    "created_at",
    "updated_at",
    "last_used_at",
    "access_count",
    "backstory",
    "person",
    "relationship",
    "merged_from",
    "members",
}


@pytest.fixture
def cli(paths, embedder, monkeypatch):
    """Run ``memagent memory ARGS -C <project>``; the shared embedder replaces a fresh load."""
    monkeypatch.setattr("memagent.embedding.embedders.load_embedder", lambda *a, **k: embedder)
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, ["memory", *args, "-C", str(paths.root)], input=input)

    return run


def _json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_add_list_show_search_stats_json(cli):
    added = _json(cli("add", "The CI pipeline runs on GitHub Actions", "--type", "fact", "--json"))
    assert added["status"] == "added" and set(added["card"]) == CARD_KEYS
    card_id = added["card"]["id"]
    assert added["card"]["source"] == "user" and added["card"]["confidence"] == 0.9
    cli("add", "The user prefers vim keybindings", "--type", "preference", "--scope", "user")

    listed = _json(cli("list", "--json"))
    assert [c["content"] for c in listed] == [
        "The user prefers vim keybindings",
        "The CI pipeline runs on GitHub Actions",
    ]
    assert all(set(c) == CARD_KEYS for c in listed)
    assert [c["id"] for c in _json(cli("list", "--json", "--scope", "project"))] == [card_id]
    assert len(_json(cli("list", "--json", "--limit", "1", "--offset", "1"))) == 1

    edited = _json(cli("edit", card_id, "The CI pipeline runs on GitHub Actions and Buildkite", "--json"))
    assert edited["status"] == "superseded" and edited["card"]["supersedes"] == card_id
    shown = _json(cli("show", card_id, "--json"))
    assert set(shown) == {"card", "chain", "history", "file"} and shown["card"]["status"] == "superseded"
    assert shown["file"].startswith("project: ") and shown["file"].endswith(f".memory/cards/{card_id}.md")
    assert [link["id"] for link in shown["chain"]] == [card_id, edited["card"]["id"]]
    assert set(shown["chain"][0]) == {"id", "status", "created_at", "content"}
    assert [c["status"] for c in _json(cli("list", "--json", "--status", "superseded"))] == ["superseded"]
    assert len(_json(cli("list", "--json", "--all"))) == 3

    hits = _json(cli("search", "which CI do we use", "-k", "2", "--json"))
    assert hits and set(hits[0]) == {"score", "parts", "card", "history"}
    assert hits[0]["card"]["id"] == edited["card"]["id"] and hits[0]["score"] > 0
    assert [old["id"] for old in hits[0]["history"]] == [card_id]  # the corrected card, shown only here

    stats = _json(cli("stats", "--json"))
    assert {"total", "active", "by_status", "by_type", "by_scope", "stores", "embedder"} <= set(stats)
    assert stats["total"] == 3 and stats["active"] == 2 and stats["by_status"]["superseded"] == 1

    text = cli("show", card_id)
    assert text.exit_code == 0 and "Supersede chain" in text.stdout and "provenance" not in text.stdout


def test_refusals_and_errors_exit_1_with_one_line(cli, paths):
    refused = cli("add", "db password=" + "correct-horse-battery")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("memagent: not saved: looks like it contains a secret")
    assert "correct-horse" not in refused.stderr and refused.stderr.count("\n") == 1
    assert not paths.memory.exists()
    missing = cli("show", "m_000000000000")
    assert missing.exit_code == 1 and "no memory m_000000000000" in missing.stderr
    assert cli("forget", "--yes").exit_code == 2
    paths.memory.mkdir()
    (paths.memory / "chroma.sqlite3").write_bytes(b"garbage" * 100)  # an old-style store, damaged
    broken = cli("list")
    assert broken.exit_code == 1 and broken.stderr.startswith("memagent: memory unavailable:")
    assert "Traceback" not in broken.output


def test_damaged_index_is_reported_and_rebuilt_from_the_files(cli, paths):
    card_id = _json(cli("add", "The nightly build publishes wheels to the internal index", "--json"))["card"]["id"]
    (paths.memory / "local" / "index" / "chroma.sqlite3").write_bytes(b"")  # a 0-byte database
    found = cli("search", "where do nightly wheels go", "--json")
    assert found.exit_code == 0, found.output
    assert [h["card"]["id"] for h in json.loads(found.stdout)] == [card_id]
    assert "is empty; rebuilding the index from the card files" in found.stderr


def test_ids_prefixes_and_bad_ids(cli):
    card_id = _json(cli("add", "Staging deploys happen at 4pm", "--json"))["card"]["id"]
    assert _json(cli("show", card_id[:6], "--json"))["card"]["id"] == card_id
    nope = cli("forget", "m_nope", input="y\n")
    assert nope.exit_code == 1 and "no memory m_nope" in nope.stderr and "Erase" not in nope.output
    mixed = cli("forget", card_id, "m_0000000000ff", "--yes")
    assert mixed.exit_code == 1 and "no memory m_0000000000ff" in mixed.stderr
    assert _json(cli("list", "--json"))[0]["id"] == card_id  # nothing was erased
    edited = _json(cli("edit", card_id[:7], "Staging deploys happen at 5pm", "--json"))
    assert edited["card"]["supersedes"] == card_id
    stats = cli("stats")
    assert stats.stdout.startswith("1 active memory, 2 in all.")


def test_import_with_every_record_refused_exits_1(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"content": "x"}, {"nothing": "here"}]))
    result = cli("import", str(bad))
    assert result.exit_code == 1 and "Imported 0 of 2: 0 duplicates, 2 refused." in result.stdout


def test_list_show_forget_never_load_the_embedder(cli, paths, monkeypatch):
    card_id = _json(cli("add", "Logs are shipped to Loki", "--json"))["card"]["id"]

    def refuse(*args, **kwargs):
        raise AssertionError("the embedder was loaded")

    monkeypatch.setattr("memagent.embedding.embedders.load_embedder", refuse)
    assert _json(cli("list", "--json"))[0]["id"] == card_id
    assert _json(cli("show", card_id, "--json"))["card"]["content"] == "Logs are shipped to Loki"
    assert _json(cli("stats", "--json"))["active"] == 1
    assert _json(cli("forget", card_id, "--yes", "--json"))["erased"] == 1


def test_help_texts_name_every_choice(cli):
    runner = CliRunner()
    add_help = runner.invoke(app, ["memory", "add", "--help"], env={"COLUMNS": "200"}).stdout
    assert "session" in add_help and "--private" in add_help
    edit_help = runner.invoke(app, ["memory", "edit", "--help"], env={"COLUMNS": "200"}).stdout
    assert "Memory type of the corrected card" in edit_help


def test_forget_asks_for_confirmation(cli):
    card_id = _json(cli("add", "Staging deploys happen at 4pm", "--json"))["card"]["id"]
    declined = cli("forget", card_id, input="n\n")
    assert declined.exit_code == 1 and "nothing erased" in declined.stderr
    assert _json(cli("list", "--json"))[0]["id"] == card_id
    assert _json(cli("forget", card_id, "--yes", "--json"))["erased"] == 1
    assert _json(cli("list", "--json")) == []
    cli("add", "Prefers small pull requests", "--scope", "user")
    assert cli("forget", "--scope", "user").exit_code == 1  # no terminal to confirm on: nothing erased
    assert _json(cli("forget", "--scope", "user", "--yes", "--json"))["erased"] == 1
    cli("add", "Release notes are written by hand")
    assert cli("forget", "--all", input="y\n").exit_code == 0
    assert _json(cli("stats", "--json"))["total"] == 0


def test_export_import_jsonl_and_md(cli, tmp_path):
    cli("add", "The docs are deployed to Netlify", "--type", "fact")
    out = tmp_path / "export.json"
    assert cli("export", "-o", str(out)).exit_code == 0
    records = json.loads(out.read_text())
    assert len(records) == 1 and set(records[0]) == CARD_KEYS
    md = cli("export", "--format", "md")
    assert md.exit_code == 0 and "The docs are deployed to Netlify" in md.stdout and md.stdout.startswith("# ")

    jsonl = tmp_path / "cards.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"content": "Feature flags live in LaunchDarkly", "memory_type": "fact"},
                {"content": "The docs are deployed to Netlify"},
                {"content": "x"},
            ]
        )
    )
    report = _json(cli("import", str(jsonl), "--json"))
    assert report["added"] == 1 and report["duplicates"] == 1
    assert report["refused"] == [{"index": 2, "reason": report["refused"][0]["reason"]}]
    assert "too short" in report["refused"][0]["reason"]
    plain = cli("import", str(out))
    assert plain.exit_code == 0 and "Imported 0 of 1: 1 duplicates, 0 refused." in plain.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine"}\n{oops\n')
    broken = cli("import", str(bad))
    assert broken.exit_code == 1 and "bad.jsonl:2: not JSON" in broken.stderr


def test_reindex_command(cli):
    cli("add", "Benchmarks run with pytest-benchmark")
    result = cli("reindex")
    assert result.exit_code == 0 and "Re-embedded 1 memory with all-MiniLM-L6-v2/onnx (dim 384)" in result.stdout


def test_help_does_not_import_chromadb_or_anthropic():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from memagent.cli.main import app\n"
        "r = CliRunner().invoke(app, ['memory', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('chromadb', 'anthropic', 'onnxruntime', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_memory_alone_lists_and_group_root_option(cli, paths):
    cli("add", "Code review needs two approvals")
    runner = CliRunner()
    alone = runner.invoke(app, ["memory", "-C", str(paths.root)])
    assert alone.exit_code == 0 and "Code review needs two approvals" in alone.stdout
    grouped = runner.invoke(app, ["memory", "-C", str(paths.root), "list", "--json"])
    assert grouped.exit_code == 0 and json.loads(grouped.stdout)[0]["content"] == "Code review needs two approvals"
