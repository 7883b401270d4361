"""What ``memagent mcp serve`` offers other agents: the project's memory and task graph.

Not a feature of a session: a composition of the memory and task features' tools for another
front end (an MCP client), served over stdio by :mod:`memagent.mcp_bridge.server`.

Tools, in this order: ``memory_search``, ``memory_save``, ``memory_list``, ``memory_forget``,
``memory_stats``, ``task_create``, ``task_update``, ``task_list``, ``task_get``.

They are memagent's own tools, run by the same code: the same input schemas and validation, the
same write gate for memories (secrets, near-duplicates and low-confidence cards are refused with
the reason), the same locking (card and task stores are safe with several processes), the same
answers. Provenance: a memory saved over MCP records ``mcp:<client name>`` (the name the client
gave in ``initialize``) as its session, so ``memagent memory show`` tells which agent wrote it;
its source is ``assistant`` (an agent's inference, never the user's own words). Session-scoped memories
are refused: an MCP client has no memagent session. User-scope memories reach every project's
profile, so they are refused too unless the server was started with ``--allow-user-scope``.

The memory store is opened in the background when the server starts (loading the embedder takes
a moment) and on first use; if it cannot be opened, the memory tools answer with the reason and
the task tools keep working. Once its embedder has loaded, the server lends it to the user's other
memagent processes (``embedding.shared``; the ``shared_embedder`` setting), so a ``memagent -p``
run beside it loads none.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from memagent.features.memory_tools import memory_list_tool, memory_tools
from memagent.features.tasks import task_tools
from memagent.tools.base import Tool, ToolRegistry

if TYPE_CHECKING:
    from memagent.config import ProjectPaths, Settings
    from memagent.memory.service import MemoryService

INSTRUCTIONS = (
    "memagent's long-term memory and task graph for this project, shared by every agent on the "
    "machine. Search memory before answering questions about the project's conventions, decisions "
    "and the user's preferences; save durable facts (never secrets); cite memories as [Memory#id]."
)


class LazyMemory:
    """Opens the memory service once, on first use or from a warm-up thread; thread-safe."""

    def __init__(self, opener: Callable[[], MemoryService]) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._service: MemoryService | None = None
        self._error: Exception | None = None

    def __call__(self) -> MemoryService:
        with self._lock:
            if self._service is None and self._error is None:
                try:
                    self._service = self._opener()
                except Exception as exc:  # MemoryUnavailable or a broken install: say why, every time
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._service is not None
            return self._service

    def warm_up(self, then: Callable[[MemoryService], object] = lambda service: None) -> None:
        """Open the service on a daemon thread, then run ``then`` with it."""
        threading.Thread(target=self._quietly, args=(then,), name="memagent-mcp-memory", daemon=True).start()

    def _quietly(self, then: Callable[[MemoryService], object]) -> None:
        try:
            then(self())
        except Exception:  # reported to the client on the first memory call
            pass

    def close(self) -> None:
        """Close the service; when it is still being opened, do not wait for it (the client has
        gone; the opening thread is a daemon and writes nothing)."""
        if not self._lock.acquire(timeout=0.5):
            return
        try:
            if self._service is not None:
                self._service.close()
                self._service = None
        finally:
            self._lock.release()


def served_tools(
    service_factory: Callable[[], MemoryService], store_factory: Callable[[], object], *, allow_user_scope: bool = False
) -> list[Tool]:
    """The served tools, in a fixed order (``memory_delete`` is served as ``memory_forget``)."""
    by_name = {t.name: t for t in memory_tools(service_factory, user_scope=allow_user_scope)}
    memory = [
        by_name["memory_search"],
        by_name["memory_save"],
        memory_list_tool(service_factory),
        dataclasses.replace(by_name["memory_delete"], name="memory_forget"),
        by_name["memory_stats"],
    ]
    return memory + task_tools(store_factory)  # type: ignore[arg-type]


def serve_stdio(paths: ProjectPaths, settings: Settings, *, allow_user_scope: bool = False) -> None:
    """``memagent mcp serve``: blocks until the client hangs up."""
    from memagent.mcp_bridge.server import serve_registry
    from memagent.memory.mirror_lending import Lending
    from memagent.tasks import TaskStore

    def open_memory() -> MemoryService:
        from memagent.memory.service import MemoryService, MemoryUnavailable
        from memagent.trust import is_trusted

        if not settings.memory_enabled:
            raise MemoryUnavailable("memory is turned off in the settings")
        return MemoryService.open(
            paths, settings, session_id="", hold_repository_cards=not is_trusted(paths.home, paths.root)
        )

    def close() -> None:
        lending.close()
        memory.close()

    memory = LazyMemory(open_memory)
    lending = Lending(paths.home if settings.shared_embedder else None)
    registry = ToolRegistry.of(served_tools(memory, lambda: TaskStore(paths.tasks), allow_user_scope=allow_user_scope))
    memory.warm_up(then=lending.start)
    serve_registry(registry, paths.root, INSTRUCTIONS, on_exit=close)


__all__ = ["INSTRUCTIONS", "LazyMemory", "memory_list_tool", "serve_stdio", "served_tools"]
