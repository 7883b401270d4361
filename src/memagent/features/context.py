"""Context tools as a feature: ``compact`` (layer-3 compaction, asked through the shared
:class:`~memagent.context.policy.CompactionRequest`) and ``recall`` (exact earlier outputs and
searches over the append-only transcripts)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from memagent.agent.feature import BaseFeature, SubagentContext
from memagent.context.policy import CompactionRequest
from memagent.context.transcript import TranscriptError, iter_transcripts, read_records
from memagent.llm.items import Injected, Text, ToolResult, ToolUse, message_items
from memagent.permissions.effects import Effect, declares
from memagent.tools.base import RegisteredTool, ToolContext, ToolError, ToolInput, tool

MAX_HITS = 20
HIT_CHARS = 240


class CompactInput(ToolInput):
    focus: str | None = Field(
        default=None, description="What the summary must keep in detail (e.g. 'the failing auth tests')."
    )


class RecallInput(ToolInput):
    tool_use_id: str | None = Field(
        default=None,
        description="Id of an earlier tool call whose full output you need (from a [Previous: …] placeholder).",
    )
    query: str | None = Field(
        default=None, description="Text to search for in the full history (case-insensitive), when you have no id."
    )
    session: str | None = Field(
        default=None, description="Session id to look in (default: this session first, then older ones)."
    )


@dataclass
class FoundOutput:
    session_id: str
    tool_name: str
    content: str
    is_error: bool


def _session_order(transcripts_dir: Path, first: list[str]) -> list[Path]:
    paths = list(iter_transcripts(transcripts_dir))
    by_id = {p.stem: p for p in paths}
    ordered = [by_id[s] for s in first if s in by_id]
    return ordered + [p for p in reversed(paths) if p not in ordered]


def _records(path: Path) -> list[dict]:
    try:
        return read_records(path).records
    except TranscriptError:
        return []


def find_tool_output(transcripts_dir: Path, tool_use_id: str, sessions: list[str]) -> FoundOutput | None:
    """The original result of ``tool_use_id``, searching ``sessions`` first, then the newest others."""
    for path in _session_order(transcripts_dir, sessions):
        names: dict[str, str] = {}
        for record in _records(path):
            if record.get("type") != "message":
                continue
            for part in message_items(record):
                if isinstance(part, ToolUse):
                    names[part.id] = part.name
                elif isinstance(part, ToolResult) and part.tool_use_id == tool_use_id:
                    return FoundOutput(path.stem, names.get(tool_use_id, "tool"), part.text, part.is_error)
    return None


def _record_texts(record: dict, names: dict[str, str]) -> Iterator[tuple[str, str]]:
    """(where, text) pieces of one message record; results of ``recall`` itself are skipped."""
    message_id = record.get("id")
    for part in message_items(record):
        if isinstance(part, (Text, Injected)):
            yield f"message {message_id} ({record.get('role')})", part.text
        elif isinstance(part, ToolUse):
            names[part.id] = part.name
            yield f"{part.id} ({part.name} call)", json.dumps(dict(part.input), ensure_ascii=False)
        elif isinstance(part, ToolResult) and names.get(part.tool_use_id) != "recall":
            yield f"{part.tool_use_id} ({names.get(part.tool_use_id, 'tool')} output)", part.text


def search_transcripts(transcripts_dir: Path, query: str, sessions: list[str], limit: int = MAX_HITS) -> list[str]:
    """Lines of the history containing ``query`` (case-insensitive), newest sessions first."""
    needle = query.lower()
    hits: list[str] = []
    for path in _session_order(transcripts_dir, sessions):
        names: dict[str, str] = {}
        for record in _records(path):
            if record.get("type") == "compaction":
                for line in str(record.get("summary", "")).splitlines():
                    if needle in line.lower():
                        hits.append(f"{path.stem} compaction summary: {_around(line, needle)}")
                continue
            if record.get("type") != "message":
                continue
            for where, text in _record_texts(record, names):
                for line in text.splitlines():
                    if needle in line.lower():
                        hits.append(f"{path.stem} {where}: {_around(line, needle)}")
                        if len(hits) >= limit:
                            return hits
    return hits[:limit]


def _around(line: str, needle: str) -> str:
    line = line.strip()
    if len(line) <= HIT_CHARS:
        return line
    at = max(0, line.lower().find(needle) - HIT_CHARS // 3)
    snippet = line[at : at + HIT_CHARS]
    return ("…" if at else "") + snippet + ("…" if at + HIT_CHARS < len(line) else "")


def context_tools(requests: CompactionRequest, transcripts_dir: Path, session_id: str) -> list[RegisteredTool]:
    """``compact`` (asks the session's policy through ``requests``) and ``recall`` (reads the
    project's transcripts, this session's first)."""

    @tool("compact", CompactInput, key_argument="focus", effects=declares(Effect.SESSION))
    def compact(args: CompactInput, ctx: ToolContext) -> str:
        """Compact the conversation now: older messages are replaced by a structured summary and the
        newest turns stay verbatim (the todo list and tasks are re-added from their stores). Use it
        when you finish a phase of work and the earlier details are no longer needed, with a focus
        naming what the summary must keep. It runs before your next step; the full transcript
        stays on disk and recall can bring anything back."""
        requests.ask(args.focus)
        focus = f" focusing on: {args.focus}" if args.focus else ""
        where = f"{transcripts_dir.name}/{session_id}.jsonl"
        return f"Compaction scheduled{focus}. It runs before your next step; the full transcript stays in {where}."

    @tool("recall", RecallInput, key_argument="tool_use_id", effects=declares(Effect.READ))
    def recall(args: RecallInput, ctx: ToolContext) -> str:
        """Bring back what has left the context. With tool_use_id: the exact, full output of that
        earlier tool call (old outputs are shown as "[Previous: used … #<id>]" placeholders).
        With query: matching lines from the whole conversation history, including parts replaced
        by a compaction summary, each with the tool_use_id to recall in full."""
        if bool(args.tool_use_id) == bool(args.query):
            raise ToolError("give exactly one of tool_use_id (an id from a placeholder) or query (text to search for)")
        sessions = [args.session] if args.session else [session_id]
        if args.tool_use_id:
            found = find_tool_output(transcripts_dir, args.tool_use_id.strip(), sessions)
            if found is None:
                raise ToolError(
                    f"no tool output with id {args.tool_use_id!r} in {transcripts_dir.name}/; "
                    "copy the id from a [Previous: …] placeholder, or search with query"
                )
            return found.content
        hits = search_transcripts(transcripts_dir, str(args.query), sessions)
        if not hits:
            return f"No match for {args.query!r} in the transcripts."
        more = "" if len(hits) < MAX_HITS else f"\n(first {MAX_HITS} matches; refine the query for others)"
        return "\n".join(hits) + more

    return [compact, recall]


class ContextToolsFeature(BaseFeature):
    name = "context"

    def __init__(self, requests: CompactionRequest, transcripts_dir: Path, session_id: str) -> None:
        self.requests = requests
        self.transcripts_dir = transcripts_dir
        self.session_id = session_id

    def tools(self) -> list[RegisteredTool]:
        return context_tools(self.requests, self.transcripts_dir, self.session_id)

    def for_subagent(self, child: SubagentContext) -> ContextToolsFeature:
        """``compact`` compacts the subagent's own context; ``recall`` reads the transcripts."""
        return ContextToolsFeature(child.compaction_requests, self.transcripts_dir, child.session_id)
