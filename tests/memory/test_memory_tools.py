"""The memory tools through the tool registry, as the agent loop calls them."""

from __future__ import annotations

from memagent.features.memory_tools import memory_tools
from memagent.memory.service import MemoryUnavailable
from memagent.tools.base import ToolContext, ToolRegistry


def _registry(factory) -> ToolRegistry:
    return ToolRegistry.of(memory_tools(factory))


def test_names_and_inputs_match_the_design(service):
    schemas = {s["name"]: s["input_schema"] for s in _registry(lambda: service).schemas()}
    assert list(schemas) == ["memory_save", "memory_search", "memory_delete", "memory_stats"]
    assert set(schemas["memory_save"]["properties"]) == {
        "content",
        "memory_type",
        "scope",
        "confidence",
        "supersedes",
        "quote",
    }
    assert set(schemas["memory_save"]["required"]) == {"content", "memory_type"}
    assert set(schemas["memory_search"]["properties"]) == {"query", "k", "memory_type", "scope"}
    assert schemas["memory_search"]["required"] == ["query"]
    assert schemas["memory_delete"]["required"] == ["memory_id"]
    assert schemas["memory_stats"].get("properties", {}) == {}


def test_save_search_delete_stats(service, paths):
    registry = _registry(lambda: service)
    ctx = ToolContext(root=paths.root, session_id="sess-9")
    saved = registry.run(
        "memory_save", {"content": "Lint with ruff before committing", "memory_type": "procedure"}, ctx
    )
    assert not saved.is_error and saved.content.startswith("Saved [Memory#m_")
    card_id = saved.content.split("[Memory#")[1].split("]")[0]
    assert service.get(card_id).provenance.session_id == "sess-9"

    dup = registry.run("memory_save", {"content": "Lint with ruff before committing.", "memory_type": "procedure"}, ctx)
    assert not dup.is_error and f"Already remembered as [Memory#{card_id}]" in dup.content

    fixed = registry.run(
        "memory_save",
        {"content": "Lint with ruff and mypy before committing", "memory_type": "procedure", "supersedes": card_id},
        ctx,
    )
    assert not fixed.is_error and f"supersedes [Memory#{card_id}]" in fixed.content
    new_id = fixed.content.split("[Memory#")[1].split("]")[0]

    found = registry.run("memory_search", {"query": "what to run before a commit", "k": 3}, ctx)
    assert not found.is_error and found.content.startswith(f"[Memory#{new_id}] score ")
    assert f"\n[Memory#{card_id}]" not in found.content  # not a result of its own ...
    assert f"(corrects [Memory#{card_id}] of " in found.content  # ... only the history of its successor
    assert (
        registry.run("memory_search", {"query": "lint", "memory_type": "preference"}, ctx).content
        == "No matching memories."
    )

    stats = registry.run("memory_stats", {}, ctx)
    assert "1 active memories (2 including superseded/archived)" in stats.content
    assert "procedure 1" in stats.content

    deleted = registry.run("memory_delete", {"memory_id": new_id}, ctx)
    assert not deleted.is_error and "and 1 older version" in deleted.content
    missing = registry.run("memory_delete", {"memory_id": new_id}, ctx)
    assert missing.is_error and "no memory with id" in missing.content


def test_refusals_and_bad_input_are_error_results(service, paths):
    registry = _registry(lambda: service)
    ctx = ToolContext(root=paths.root)
    secret = registry.run("memory_save", {"content": "deploy key gh" + "p_" + "x" * 36, "memory_type": "fact"}, ctx)
    assert secret.is_error and "memory not saved" in secret.content and "GitHub token" in secret.content
    assert "x" * 36 not in secret.content
    low = registry.run(
        "memory_save", {"content": "Maybe the API is GraphQL", "memory_type": "fact", "confidence": 0.2}, ctx
    )
    assert low.is_error and "confidence" in low.content
    bad_type = registry.run("memory_save", {"content": "Something useful", "memory_type": "gossip"}, ctx)
    assert bad_type.is_error and "memory_type" in bad_type.content
    bad_id = registry.run("memory_delete", {"memory_id": "42"}, ctx)
    assert bad_id.is_error


def test_unavailable_memory_is_an_error_the_model_can_act_on(paths):
    def factory():
        raise MemoryUnavailable("memory store at /x/.memory cannot be opened: file is not a database")

    registry = _registry(factory)
    outcome = registry.run("memory_search", {"query": "anything"}, ToolContext(root=paths.root))
    assert outcome.is_error
    assert "long-term memory is off: memory store at /x/.memory cannot be opened" in outcome.content


def test_cross_session_recall(open_service, paths):
    """Session 1 saves through memory_save; session 2's first turn carries it as a citable block."""
    first = open_service("session-1")
    ctx = ToolContext(root=paths.root, session_id="session-1")
    saved = _registry(lambda: first).run(
        "memory_save", {"content": "The release checklist lives in docs/RELEASING.md", "memory_type": "fact"}, ctx
    )
    card_id = saved.content.split("[Memory#")[1].split("]")[0]
    first.close()

    second = open_service("session-2")
    block = second.context_for_turn("where is the release checklist?")
    assert block is not None
    assert f"[Memory#{card_id}] (fact, project, conf 0.80, agent-inferred, session session-1, " in block
    assert second.note_citations(f"It is in docs/RELEASING.md [Memory#{card_id}].") == [card_id]
