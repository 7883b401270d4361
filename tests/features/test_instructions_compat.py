"""Instruction files as Claude Code reads them: its files and their order, ``@~/`` imports kept in
the home folder, path rules and nested folders' files loaded when the work first reaches them
(once, marked, again after a compaction dropped them) — through the real loop."""

from __future__ import annotations

from pathlib import Path

from memagent.agent.loop import Agent, Approval
from memagent.context.conversation import Conversation
from memagent.features.instructions import InstructionsFeature, load_instructions
from memagent.llm.items import kind_of
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.llm.types import text_block
from memagent.markers import Marker
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(project with .git, $MEMAGENT_HOME, the user's home) with every kind of file."""
    project, mhome, user = tmp_path / "p", tmp_path / "mh", tmp_path / "u"
    files = {
        user / ".claude" / "CLAUDE.md": "USER-CLAUDE\n",
        user / ".claude" / "rules" / "style.md": "USER-RULE\n",
        mhome / "AGENTS.md": "MEMAGENT-HOME\n",
        project / "AGENTS.md": "ROOT-AGENTS\n",
        project / "CLAUDE.md": "ROOT-CLAUDE\n",
        project / ".claude" / "CLAUDE.md": "DOT-CLAUDE\n",
        project / ".claude" / "rules" / "b.md": "RULE-B\n",
        project / ".claude" / "rules" / "a" / "deep.md": "RULE-DEEP\n",
        project / ".claude" / "rules" / "py.md": '---\npaths:\n  - "src/**/*.py"\n---\nRULE-PY\n',
        project / "CLAUDE.local.md": "LOCAL\n",
        project / "src" / "CLAUDE.md": "SRC-CLAUDE\n",
        project / "src" / "api" / "AGENTS.md": "API-AGENTS\n",
        project / "src" / "api" / "CLAUDE.local.md": "API-LOCAL\n",
        project / "src" / "api" / "app.py": "print('app')\n",
        project / "src" / "api" / "notes.txt": "notes\n",
        project / "docs" / "CLAUDE.md": "DOCS-CLAUDE\n",
        project / "docs" / "guide.md": "guide\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (project / ".git").mkdir()
    return project, mhome, user


def test_every_file_claude_code_reads_in_its_order_and_path_rules_held_back(tmp_path):
    project, mhome, user = _tree(tmp_path)
    held: list = []
    loaded = load_instructions(project, mhome, user_home=user, held=held)
    assert [f.label for f in loaded.files] == [
        "~/.claude/CLAUDE.md",
        "~/.claude/rules/style.md",
        "$MEMAGENT_HOME/AGENTS.md",
        "AGENTS.md",
        "CLAUDE.md",
        ".claude/CLAUDE.md",
        ".claude/rules/a/deep.md",
        ".claude/rules/b.md",
        "CLAUDE.local.md",
    ]
    assert [h.path.name for h in held] == ["py.md"] and held[0].globs == ["src/**/*.py"]
    assert "RULE-PY" not in loaded.render() and "paths:" not in loaded.render()


def test_home_imports_stay_in_the_home_folder_and_need_trust_from_a_project(tmp_path):
    project, mhome, user = _tree(tmp_path)
    (user / "notes.md").write_text("HOME-NOTES\n")
    (user / ".claude" / "team.md").write_text("TEAM-NOTES\n")
    (user / ".ssh").mkdir()
    (user / ".ssh" / "id_rsa").write_text("PRIVATE-KEY\n")
    (tmp_path / "outside.md").write_text("OUTSIDE\n")
    (user / "escape.md").symlink_to(tmp_path / "outside.md")
    (user / ".claude" / "CLAUDE.md").write_text("USER-CLAUDE @~/notes.md @~/escape.md @~/../outside.md\n")
    (project / "CLAUDE.md").write_text("ROOT @~/.claude/team.md @~/.ssh/id_rsa\n")
    untrusted = load_instructions(project, mhome, user_home=user)
    text = untrusted.render()
    assert "HOME-NOTES" in text  # the user's own file may import from the home folder
    assert "OUTSIDE" not in text and "TEAM-NOTES" not in text and "PRIVATE-KEY" not in text
    notes = "\n".join(untrusted.notes)
    assert "~/.claude/CLAUDE.md: @~/escape.md refused (outside your home folder)" in notes
    assert "~/.claude/CLAUDE.md: @~/../outside.md refused (outside your home folder)" in notes
    assert "CLAUDE.md: @~/.claude/team.md refused (imports from your home folder need a trusted project)" in notes
    trusted = load_instructions(project, mhome, user_home=user, trusted=True)
    assert "TEAM-NOTES" in trusted.render() and "PRIVATE-KEY" not in trusted.render()
    assert "CLAUDE.md: @~/.ssh/id_rsa refused (a private folder of your home)" in trusted.notes


def make_agent(feature: InstructionsFeature, root: Path, script) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    agent = Agent(
        model=model,
        tools=ToolRegistry.of(builtin_tools()),
        tool_context=ToolContext(root=root),
        system=[text_block("s")],
        conversation=Conversation(),
        features=[feature],
        approver=lambda *a: Approval.ALLOW,
    )
    return agent, model


def _injected(request) -> list[str]:
    last = request.messages[-1]["content"]
    return [b["text"] for b in last if b.get("type") == "text" and kind_of(b) is Marker.INSTRUCTIONS]


def test_nested_files_and_path_rules_arrive_after_the_tool_results_that_reach_them_once(tmp_path):
    project, mhome, user = _tree(tmp_path)
    feature = InstructionsFeature(project, mhome, user_home=user)
    script = [
        reply(tool_call("read_file", {"path": "src/api/notes.txt"})),
        reply(tool_call("read_file", {"path": "src/api/app.py"})),
        reply(tool_call("grep", {"pattern": "x", "path": "src"}), tool_call("read_file", {"path": "docs/guide.md"})),
        reply(tool_call("read_file", {"path": "/etc/hostname"})),
        reply("done"),
    ]
    agent, model = make_agent(feature, project, script)
    list(agent.run_turn("look around"))
    first = _injected(model.requests[1])
    assert len(first) == 1 and first[0].startswith(
        "[Project instructions for src/api/, loaded when the work reached it:]"
    )
    for marker in ("SRC-CLAUDE", "API-AGENTS", "API-LOCAL"):
        assert marker in first[0]
    assert first[0].index("SRC-CLAUDE") < first[0].index("API-AGENTS") < first[0].index("API-LOCAL")
    second = _injected(model.requests[2])
    assert (
        len(second) == 1 and "RULE-PY" in second[0] and "SRC-CLAUDE" not in second[0]
    )  # the rule, not again the folder
    third = _injected(model.requests[3])
    assert len(third) == 1 and "DOCS-CLAUDE" in third[0] and "[Project instructions for docs/" in third[0]
    assert _injected(model.requests[4]) == []  # outside the project: nothing
    everything = "".join(str(r.messages) for r in model.requests[4:])
    assert everything.count("SRC-CLAUDE") == 1 and everything.count("RULE-PY") == 1
    assert [f.label for f in feature.later] == [
        "src/CLAUDE.md",
        "src/api/AGENTS.md",
        "src/api/CLAUDE.local.md",
        ".claude/rules/py.md",
        "docs/CLAUDE.md",
    ]


def test_a_compaction_that_drops_them_lets_them_load_again(tmp_path):
    project, mhome, user = _tree(tmp_path)
    feature = InstructionsFeature(project, mhome, user_home=user)
    agent, model = make_agent(
        feature, project, [reply(tool_call("read_file", {"path": "src/api/app.py"})), reply("ok")]
    )
    list(agent.run_turn("read the app"))
    dropped = list(agent.conversation.messages)
    feature.before_drop(dropped, [])
    assert feature.later == []
    agent2, model2 = make_agent(
        feature, project, [reply(tool_call("read_file", {"path": "src/api/app.py"})), reply("ok")]
    )
    list(agent2.run_turn("again"))
    again = _injected(model2.requests[1])
    assert len(again) == 1 and "API-AGENTS" in again[0] and "RULE-PY" in again[0]


def test_files_loaded_later_share_their_own_budget(tmp_path):
    project, mhome, user = _tree(tmp_path)
    (project / "src" / "CLAUDE.md").write_text("S" * 900)
    (project / "src" / "api" / "AGENTS.md").write_text("A" * 900)
    warned: list[str] = []
    feature = InstructionsFeature(project, mhome, max_chars=1000, user_home=user, warn=warned.append)
    agent, model = make_agent(
        feature, project, [reply(tool_call("read_file", {"path": "src/api/notes.txt"})), reply("ok")]
    )
    list(agent.run_turn("read"))
    (block,) = _injected(model.requests[1])
    assert "S" * 900 in block and "A" * 100 in block and "A" * 101 not in block and "[… 800 characters cut]" in block
    assert "src/api/CLAUDE.local.md left out: the budget for instruction files is used up" in block
