"""`memagent mcp serve` saves meet the same correction rule as `memagent memory add`: a new owner
supersedes the old card, a look-alike fact about another subject is added beside it."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from memagent.config import Settings, project_paths
from memagent.memory.service import MemoryService


def _text(result) -> str:
    return "\n".join(item.text for item in result.content if item.type == "text")


def _params(project) -> StdioServerParameters:
    env = {key: value for key, value in os.environ.items() if key.startswith(("MEMAGENT_", "ORT_", "ANONYMIZED_"))}
    env["PATH"] = os.environ.get("PATH", "")
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memagent", "mcp", "serve", "-C", str(project)], env=env
    )


async def _save_four(project) -> list[str]:
    info = Implementation(name="codex", version="1.0")
    replies = []
    async with Client(_params(project), client_info=info, cache=None, read_timeout_seconds=120) as client:
        for content in (
            "Alice owns billing.",
            "Bob owns billing now.",
            "Consumer A reads shard 1.",
            "Consumer B reads shard 2.",
        ):
            result = await client.call_tool("memory_save", {"content": content, "memory_type": "fact"})
            assert not result.is_error, _text(result)
            replies.append(_text(result))
    return replies


def test_mcp_saves_supersede_a_changed_owner_and_keep_look_alike_facts(project, embedder):
    replies = asyncio.run(asyncio.wait_for(_save_four(project), 240))
    alice = replies[0].split("[Memory#")[1].split("]")[0]
    assert f"it supersedes [Memory#{alice}]" in replies[1]
    assert "supersedes" not in replies[3] and "Already remembered" not in replies[3]
    service = MemoryService.open(project_paths(project), Settings(), embedder=embedder)
    try:
        active = sorted(card.content for card in service.list())
        assert service.get(alice).status == "superseded"
    finally:
        service.close()
    assert active == ["Bob owns billing now.", "Consumer A reads shard 1.", "Consumer B reads shard 2."]
