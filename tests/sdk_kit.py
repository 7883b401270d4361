"""Read memagent's headless output with the ``claude-agent-sdk``'s own machinery.

``parse_with_sdk(lines)`` feeds recorded stdout lines to the SDK's public ``query()`` through a
custom ``Transport`` (the SDK's documented seam for other transports): the SDK's control
handshake is answered, then the lines are handed over as if the CLI had written them, and every
message comes back as the SDK's own types (``SystemMessage``, ``AssistantMessage``,
``UserMessage``, ``ResultMessage``), parsed by the SDK's message parser. A line it cannot parse
raises there, as it would for a real client.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from claude_agent_sdk import Transport, query


class ReplayTransport(Transport):
    """Answers the SDK's ``initialize`` request, then replays ``lines`` once the prompt is sent."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.written: list[dict[str, Any]] = []
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._ready = False

    async def connect(self) -> None:
        self._ready = True

    async def write(self, data: str) -> None:
        message = json.loads(data)
        self.written.append(message)
        if message.get("type") == "control_request":
            await self._queue.put(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": message["request_id"], "response": {}},
                }
            )
        elif message.get("type") == "user":
            for line in self.lines:
                await self._queue.put(json.loads(line))
            await self._queue.put(None)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while (item := await self._queue.get()) is not None:
            yield item

    async def close(self) -> None:
        self._ready = False

    def is_ready(self) -> bool:
        return self._ready

    async def end_input(self) -> None:
        return None


def parse_with_sdk(stdout: str) -> list[Any]:
    """Every line of ``stdout`` as the SDK's message objects (the SDK skips no line memagent writes)."""
    lines = [line for line in stdout.splitlines() if line.strip()]

    async def collect() -> list[Any]:
        return [message async for message in query(prompt="replayed", transport=ReplayTransport(lines))]

    return asyncio.run(collect())


def memagent_cli(folder: Path, project: Path, *flags: str) -> str:
    """An executable that runs ``python -m memagent -C project *flags "$@"``: the ``cli_path``
    for the SDK's ``ClaudeAgentOptions``, which starts it like the ``claude`` binary."""
    script = folder / "memagent-cli"
    quoted = " ".join(f"'{part}'" for part in (sys.executable, "-m", "memagent", "-C", str(project), *flags))
    script.write_text(f'#!/bin/sh\nexec {quoted} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def sdk_env(fake_url: str) -> dict[str, str]:
    """What the SDK passes to memagent: the fake API and the suite's isolated home."""
    keep = ("HOME", "MEMAGENT_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PATH")
    return {
        **{k: os.environ[k] for k in keep if k in os.environ},
        "ANTHROPIC_BASE_URL": fake_url,
        "ANTHROPIC_API_KEY": "test-key",
    }


__all__ = ["ReplayTransport", "memagent_cli", "parse_with_sdk", "sdk_env"]
