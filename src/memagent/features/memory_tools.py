"""``memory_save``, ``memory_search``, ``memory_delete``, ``memory_stats``.

The service comes from ``service_factory`` on every call; when memory cannot be used the factory
raises :class:`~memagent.memory.service.MemoryUnavailable` and the model gets a one-line error
it can act on (carry on without memory). Gate refusals are errors too, with the gate's reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from memagent.llm.types import Message
from memagent.memory.cards import CARD_ID_PATTERN, MemoryType
from memagent.permissions.effects import Declaration, Effect, declares
from memagent.tools.base import Tool, ToolContext, ToolError, ToolInput, tool

if TYPE_CHECKING:
    from memagent.memory.saving import SaveResult
    from memagent.memory.service import MemoryService

ScopeName = Literal["project", "user", "session"]


class MemorySaveInput(ToolInput):
    content: str = Field(
        description="One self-contained fact, preference, decision or procedure, understandable without the chat."
    )
    memory_type: MemoryType = Field(description="What kind of memory this is.")
    scope: ScopeName = Field(
        "project",
        description="project: about this codebase (default); user: about the user, in every project; "
        "session: only for this session.",
    )
    confidence: float = Field(0.8, ge=0.0, le=1.0, description="How sure you are that it is true (0-1).")
    supersedes: str | None = Field(
        None,
        pattern=CARD_ID_PATTERN,
        description="Id of an existing memory this one corrects (it is kept as superseded).",
    )
    quote: str | None = Field(
        None,
        max_length=300,
        description="When the user asked you to remember this, their exact words (copied verbatim from "
        "their message): the memory is then recorded as stated by the user. Omit it for your own inferences.",
    )


class MemorySearchInput(ToolInput):
    query: str = Field(description="What to look for, in words.")
    k: int = Field(5, ge=1, le=20, description="How many memories to return.")
    memory_type: MemoryType | None = Field(None, description="Only memories of this type.")
    scope: ScopeName | None = Field(None, description="Only memories of this scope.")


class MemoryDeleteInput(ToolInput):
    memory_id: str = Field(pattern=CARD_ID_PATTERN, description="The id to forget, e.g. m_3fa2c1d4e5f6.")


class MemoryListInput(ToolInput):
    memory_type: MemoryType | None = Field(None, description="Only memories of this type.")
    scope: Literal["project", "user"] | None = Field(None, description="Only memories of this scope.")
    limit: int = Field(20, ge=1, le=200, description="How many to return, newest first.")


class MemoryStatsInput(ToolInput):
    pass


USER_SCOPE_REFUSED = (
    "memory not saved: user-scope memories are not accepted here (they would reach every project's "
    "profile); save it with scope 'project', or ask the user to start the server with --allow-user-scope"
)


def save_effects(args: MemorySaveInput) -> Declaration:
    """A user-scope card is shown in every project: it is a user memory, which asks first."""
    return declares(Effect.MEMORY_USER if args.scope == "user" else Effect.MEMORY_SAVE)


def _service(factory: Callable[[], MemoryService]) -> MemoryService:
    from memagent.memory.service import MemoryUnavailable

    try:
        return factory()
    except MemoryUnavailable as exc:
        raise ToolError(f"long-term memory is off: {exc}. Carry on without it.") from None


def _provenance(ctx: ToolContext, traced: dict | None = None) -> dict | None:
    """Where a saved card comes from: ``traced`` (the session, and the user's turn, message and
    quote when traced), and the subagent, when one saves (its own session is ``ctx.session_id``)."""
    found = dict(traced) if traced else ({"session_id": ctx.session_id} if ctx.session_id else {})
    if ctx.agent:
        found["agent"] = ctx.agent
    return found or None


def _call(action: Callable[[], object]):
    from memagent.memory.service import MemoryUnavailable

    try:
        return action()
    except MemoryUnavailable as exc:
        raise ToolError(f"long-term memory failed: {exc}") from None


Messages = Callable[[], tuple[Sequence[Message], Sequence[str]]]


def _attribution(args: MemorySaveInput, ctx: ToolContext, messages: Messages | None) -> tuple[str, dict, str]:
    """(source, provenance, note): ``user`` with the turn, message id and quote when the quote is
    the user's own words in this conversation; otherwise the agent's inference."""
    from memagent.memory.screening import trace_user_quote

    session = {"session_id": ctx.session_id} if ctx.session_id else {}
    if not args.quote:
        return "assistant", session, ""
    traced = trace_user_quote(args.quote, args.content, *messages()) if messages is not None else None
    if traced is None:
        return (
            "assistant",
            session,
            (
                " Recorded as your inference: the quote is not the user's words in this "
                "conversation (copy it verbatim from their message)."
            ),
        )
    return (
        "user",
        traced.provenance(ctx.session_id or None),
        f" Recorded as the user's words (message {traced.message_id}).",
    )


def _saved(result: SaveResult, note: str) -> str:
    if result.status == "refused" or result.card is None:
        raise ToolError(f"memory not saved: {result.reason}")
    card = result.card
    if result.status == "duplicate":
        return f"Already remembered as [Memory#{card.id}] ({result.reason}); nothing new was saved."
    if "memory_max_cards" in result.reason:  # the quota archived others: the user is told
        note += f" Note: {result.reason[result.reason.index('memory_max_cards') :]}."
    if result.status == "superseded":
        return f"Saved [Memory#{card.id}] ({card.memory_type}, {card.scope}); it supersedes [Memory#{card.supersedes}].{note}"
    return f"Saved [Memory#{card.id}] ({card.memory_type}, {card.scope}).{note}"


# Longer than 60 lines: four small tool handlers closing over one service, kept together.
def memory_tools(
    service_factory: Callable[[], MemoryService], messages: Messages | None = None, *, user_scope: bool = True
) -> list[Tool]:
    """The four memory tools bound to a service (obtained lazily, on each call). ``messages``
    gives the conversation (messages and their transcript ids) a ``quote`` is traced in.

    ``user_scope``: whether a user-scope card may be saved at all (``mcp serve`` refuses them
    unless told)."""

    @tool("memory_save", MemorySaveInput, key_argument="content", effects=save_effects)
    def memory_save(args: MemorySaveInput, ctx: ToolContext) -> str:
        """Save one durable memory (a fact, preference, decision, procedure...) for later sessions.
        It goes through a gate: secrets, near-duplicates, low confidence and very short or long
        texts are refused with a reason. To correct a memory, pass its id as `supersedes`. When the
        user asked you to remember something, pass their exact words as `quote`."""
        if args.scope == "user" and not user_scope:
            raise ToolError(USER_SCOPE_REFUSED)
        service = _service(service_factory)
        source, provenance, note = _attribution(args, ctx, messages)
        result = _call(
            lambda: service.save(
                args.content,
                args.memory_type,
                args.scope,
                confidence=args.confidence,
                source=source,
                provenance=_provenance(ctx, provenance),
                supersedes=args.supersedes,
            )
        )
        return _saved(result, note)

    @tool("memory_search", MemorySearchInput, key_argument="query", effects=declares(Effect.READ))
    def memory_search(args: MemorySearchInput, ctx: ToolContext) -> str:
        """Search long-term memory; returns ranked memories with ids and scores, best first.
        Cite a memory you rely on as [Memory#id]."""
        from memagent.memory.consolidation import trust_label

        service = _service(service_factory)
        hits = _call(lambda: service.search(args.query, args.k, memory_type=args.memory_type, scope=args.scope))
        if not hits:
            return "No matching memories."
        service.note_retrieved([hit.card.id for hit in hits])
        lines = []
        for hit in hits:
            card = hit.card
            content = " ".join(card.content.split())
            lines.append(
                f"[Memory#{card.id}] score {hit.score:.3f} ({card.memory_type}, {card.scope}, "
                f"conf {card.confidence:.2f}, {trust_label(card.source)}, {card.created_at.date().isoformat()}) "
                f"{content}{hit.history_note()}"
            )
        return "\n".join(lines)

    @tool("memory_delete", MemoryDeleteInput, key_argument="memory_id", effects=declares(Effect.MEMORY_DELETE))
    def memory_delete(args: MemoryDeleteInput, ctx: ToolContext) -> str:
        """Forget one memory by id: its text is erased from disk (with any older versions it superseded)."""
        service = _service(service_factory)
        erased = _call(lambda: service.forget([args.memory_id]))
        if not erased:
            raise ToolError(f"no memory with id {args.memory_id}; use memory_search to find the id")
        older = f" and {erased - 1} older version(s)" if erased > 1 else ""
        return f"Forgot [Memory#{args.memory_id}]{older}."

    @tool("memory_stats", MemoryStatsInput, effects=declares(Effect.READ))
    def memory_stats(args: MemoryStatsInput, ctx: ToolContext) -> str:
        """Counts of long-term memories by type, scope and status."""
        service = _service(service_factory)
        stats = _call(service.stats)

        def nonzero(counts: dict) -> str:
            shown = [f"{k} {v}" for k, v in counts.items() if v]
            return ", ".join(shown) or "none"

        return "\n".join(
            [
                f"{stats['active']} active memories ({stats['total']} including superseded/archived).",
                f"By type: {nonzero(stats['by_type'])}.",
                f"By scope: {nonzero(stats['by_scope'])}.",
                f"By status: {nonzero(stats['by_status'])}.",
                f"Embedder: {stats['embedder']['name']} (dim {stats['embedder']['dim']}).",
            ]
        )

    return [memory_save, memory_search, memory_delete, memory_stats]


def memory_list_tool(service_factory: Callable[[], MemoryService]) -> Tool:
    """``memory_list`` (offered by ``memagent mcp serve``; the session's agent searches instead)."""

    @tool("memory_list", MemoryListInput, effects=declares(Effect.READ))
    def memory_list(args: MemoryListInput, ctx: ToolContext) -> str:
        """List active long-term memories, newest first, with their ids (memory_search finds by meaning)."""
        service = _service(service_factory)
        cards = _call(lambda: service.list(memory_type=args.memory_type, scope=args.scope, limit=args.limit))
        if not cards:
            return "No memories yet."
        from memagent.memory.consolidation import trust_label

        return "\n".join(
            f"[Memory#{c.id}] ({c.memory_type}, {c.scope}, conf {c.confidence:.2f}, {trust_label(c.source)}, "
            f"{c.created_at.date().isoformat()}) {' '.join(c.content.split())}"
            for c in cards
        )

    return memory_list


__all__ = [
    "MemoryDeleteInput",
    "MemoryListInput",
    "MemorySaveInput",
    "MemorySearchInput",
    "MemoryStatsInput",
    "memory_list_tool",
    "memory_tools",
]
