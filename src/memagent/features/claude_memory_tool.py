"""Claude's own memory tool (``memory_20250818``) as a view of memagent's memory cards.

Claude models are trained on a client-side tool named ``memory`` whose commands (``view``,
``create``, ``str_replace``, ``insert``, ``delete``, ``rename``) work on files under
``/memories``. The tool entry sent to the Messages API is only ``{"type": "memory_20250818",
"name": "memory"}`` (no description, no schema: the model knows it); the model's calls come back
as ordinary ``tool_use`` blocks named ``memory`` whose input is ``{"command": …, "path": …, …}``.

Here ``/memories`` is no folder on disk. It is a view of the memory service:

* ``/memories/<card id>.md`` is one active project (or session) card, ``/memories/user/<card
  id>.md`` one user card; ``/memories/session/`` holds this session's session cards. A file the
  model creates under a name of its own (``/memories/notes.md``) is saved as a card and keeps
  that name for the rest of the session (both names work); a later session sees it by card id.
* Reading (``view``) lists cards, one readable line each, or shows one card's text with line
  numbers. An old card id (superseded by an edit) still leads to its current version.
* Every write goes where ``memory_save`` goes: the write gate (secrets, personal data,
  injection, near-duplicates, length), the supersede rules and the index. An edit
  (``str_replace``, ``insert``) is a correction: a new card superseding the old one, kept as
  history. A card written here is the model's: ``source: assistant``, whatever it edits.
* The one permission gate decides, from what each call declares: a view reads, a project write
  saves a project memory, anything touching ``/memories/user`` saves a user memory (asks in the
  default mode), ``delete`` erases a memory (asks, like ``memory_delete``).
* Paths are confined: only ``/memories`` and its two folders exist; ``..``, ``.``, hidden and
  odd names, deeper folders and any other absolute path are refused. Since nothing here maps a
  path onto the file system, no symlink can lead anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

from pydantic import Field, RootModel

from memagent.agent.feature import BaseFeature, SubagentContext
from memagent.jsontypes import JsonObject, JsonValue
from memagent.memory.cards import CARD_ID_RE, MemoryCard
from memagent.permissions.effects import Declaration, Effect, declares
from memagent.tools.base import RegisteredTool, Tool, ToolContext, ToolError, ToolInput

if TYPE_CHECKING:
    from memagent.memory.saving import SaveResult
    from memagent.memory.service import MemoryService

TOOL_TYPE = "memory_20250818"
TOOL_NAME = "memory"
ROOT = "/memories"
FOLDERS = {"": "project", "user": "user", "session": "session"}  # folder under /memories → card scope
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ -]{0,99}$")
MAX_LISTED = 200
MAX_CHAIN = 50
MEMORY_TYPES = ("preference", "fact", "skill", "habit", "event", "context", "constraint", "decision", "procedure")
T = TypeVar("T")


class ViewCommand(ToolInput):
    command: Literal["view"]
    path: str
    view_range: list[int] | None = None


class CreateCommand(ToolInput):
    command: Literal["create"]
    path: str
    file_text: str


class StrReplaceCommand(ToolInput):
    command: Literal["str_replace"]
    path: str
    old_str: str
    new_str: str = ""


class InsertCommand(ToolInput):
    command: Literal["insert"]
    path: str
    insert_line: int
    insert_text: str


class DeleteCommand(ToolInput):
    command: Literal["delete"]
    path: str


class RenameCommand(ToolInput):
    command: Literal["rename"]
    old_path: str
    new_path: str


Command = Annotated[
    ViewCommand | CreateCommand | StrReplaceCommand | InsertCommand | DeleteCommand | RenameCommand,
    Field(discriminator="command"),
]


class MemoryCommand(RootModel[Command]):
    """One call of the memory tool, as the model sends it."""


@dataclass(frozen=True)
class MemoryPath:
    """A path under ``/memories``: a folder (``name`` is None) or a file in one."""

    folder: str  # "" (the top: project cards), "user" or "session"
    name: str | None = None

    @property
    def scope(self) -> str:
        return FOLDERS[self.folder]

    @property
    def card_id(self) -> str | None:
        """The card id a name like ``m_3fa2c1d4e5f6.md`` spells, if it spells one."""
        stem = self.name[:-3] if self.name and self.name.endswith(".md") else self.name
        return stem if stem and CARD_ID_RE.match(stem) else None

    def text(self) -> str:
        folder = f"{ROOT}/{self.folder}" if self.folder else ROOT
        return f"{folder}/{self.name}" if self.name else folder


def parse_path(raw: str) -> MemoryPath:
    """``raw`` as a path under ``/memories``; ``ToolError`` with the reason when it is not one."""
    if not isinstance(raw, str) or raw != raw.strip() or "\x00" in raw or "\\" in raw:
        raise ToolError(f"invalid path {raw!r}: memory paths look like {ROOT}/notes.md")
    parts = raw.rstrip("/").split("/") if raw not in ("/", "") else [""]
    if parts[:2] != ["", "memories"]:
        raise ToolError(f"{raw}: only paths under {ROOT} exist for the memory tool")
    rest = parts[2:]
    for part in rest:
        if part in ("", ".", "..") or not NAME_RE.match(part):
            raise ToolError(
                f"{raw}: {part!r} is not an allowed name (letters, digits, '.', '_', '-', spaces; "
                "no '..', no hidden files)"
            )
    if not rest:
        return MemoryPath("")
    if len(rest) == 1:
        return MemoryPath(rest[0]) if rest[0] in FOLDERS else MemoryPath("", rest[0])
    if len(rest) == 2 and rest[0] in FOLDERS and rest[1] not in FOLDERS:
        return MemoryPath(rest[0], rest[1])
    raise ToolError(f"{raw}: {ROOT} has no such folder; memories live in {ROOT}, {ROOT}/user and {ROOT}/session")


def file_path(raw: str) -> MemoryPath:
    path = parse_path(raw)
    if path.name is None:
        raise ToolError(f"{path.text()} is a folder; name one memory file in it")
    return path


def command_effects(args: MemoryCommand) -> Declaration:
    """What a call does: reading, saving a project or a user memory, or erasing one."""
    command = args.root
    if isinstance(command, ViewCommand):
        return declares(Effect.READ)
    if isinstance(command, DeleteCommand):
        return declares(Effect.MEMORY_DELETE)
    raw = [command.old_path, command.new_path] if isinstance(command, RenameCommand) else [command.path]
    return declares(Effect.MEMORY_USER if any(_names_user_folder(p) for p in raw) else Effect.MEMORY_SAVE)


def _names_user_folder(raw: str) -> bool:
    try:
        return parse_path(raw).folder == "user"
    except ToolError:  # refused when it runs; declare the wider effect meanwhile
        return True


def numbered(text: str, view_range: list[int] | None = None) -> str:
    """Lines numbered from 1, right-aligned, tab-separated; ``view_range`` is ``[first, last]``
    (``last`` -1: to the end)."""
    lines = text.split("\n")
    first, last = 1, len(lines)
    if view_range is not None:
        if len(view_range) != 2:
            raise ToolError("view_range is [first_line, last_line] (last_line -1: to the end)")
        first, last = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
        if not 1 <= first <= len(lines) or not first <= last <= len(lines):
            raise ToolError(f"view_range {view_range} is outside the file's lines 1-{len(lines)}")
    return "\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(first, last + 1))


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _type_from_name(name: str) -> str:
    """A memory type named at the start of a file name (``decision-db.md``), else ``fact``."""
    lowered = name.lower()
    return next((kind for kind in MEMORY_TYPES if lowered.startswith(kind)), "fact")


@dataclass
class MemoryFiles:
    """The ``/memories`` view of a memory service. ``names``: the names the model gave cards in
    this session (a path text → card id), moved along when an edit supersedes a card."""

    service_factory: Callable[[], MemoryService]
    names: dict[str, str] = field(default_factory=dict)

    # -- looking up ------------------------------------------------------------------------

    def service(self) -> MemoryService:
        from memagent.memory.service import MemoryUnavailable

        try:
            return self.service_factory()
        except MemoryUnavailable as exc:
            raise ToolError(f"long-term memory is off: {exc}. Carry on without it.") from None

    def find(self, path: MemoryPath) -> MemoryCard | None:
        """The current card a file path names (an old card id leads to its newest version)."""
        card_id = path.card_id or self.names.get(path.text())
        if card_id is None:
            return None
        service = self.service()
        card = service.get(card_id)
        for _ in range(MAX_CHAIN):
            if card is None or card.active or not card.superseded_by:
                break
            card = service.get(card.superseded_by)
        if card is None or not card.active or card.scope != path.scope or not _visible(service, card):
            return None
        return card

    def existing(self, raw: str) -> tuple[MemoryPath, MemoryCard]:
        path = file_path(raw)
        card = self.find(path)
        if card is None:
            raise ToolError(f"The path {path.text()} does not exist. View {ROOT} to see the memory files.")
        return path, card

    def shown_name(self, card: MemoryCard) -> str:
        folder = f"{ROOT}/{card.scope}" if card.scope != "project" else ROOT
        chosen = [name for name, card_id in self.names.items() if card_id == card.id]
        return chosen[0] if chosen else f"{folder}/{card.id}.md"

    # -- view ------------------------------------------------------------------------------

    def view(self, command: ViewCommand) -> str:
        path = parse_path(command.path)
        if path.name is not None:
            _, card = self.existing(command.path)
            header = (
                f"{self.shown_name(card)}: memory card {card.id} ({card.memory_type}, {card.scope}, "
                f"confidence {card.confidence:.2f}, from {card.source}, {card.created_at.date().isoformat()})"
            )
            return f"{header}\n{numbered(card.content, command.view_range)}"
        return self.listing(path)

    def listing(self, path: MemoryPath) -> str:
        scopes = ["project", "user", "session"] if path.folder == "" else [path.scope]
        service = self.service()
        cards: list[MemoryCard] = []
        for scope in scopes:
            cards.extend(card for card in service.list(scope=scope, limit=MAX_LISTED) if _visible(service, card))
        cards.sort(key=lambda c: c.updated_at, reverse=True)
        head = (
            f"{path.text()}: memagent's long-term memory, one memory card per file, newest first "
            f"({len(cards)} shown). Folders: {ROOT}/user (your user's memories, in every project), "
            f"{ROOT}/session (this session only)."
        )
        lines = [head]
        if not cards:
            lines.append("(no memories yet)")
        for card in cards[:MAX_LISTED]:
            lines.append(
                f"- {self.shown_name(card)}  [{card.memory_type}, {card.updated_at.date().isoformat()}] "
                f"{_one_line(card.content)}"
            )
        return "\n".join(lines)

    # -- writes ----------------------------------------------------------------------------

    def create(self, command: CreateCommand, ctx: ToolContext) -> str:
        path = file_path(command.path)
        if self.find(path) is not None:
            raise ToolError(f"{path.text()} already exists; edit it with str_replace or insert, or delete it first")
        if path.card_id is not None:
            raise ToolError(f"{path.name} is a card id memagent gives; choose a name of your own (notes.md)")
        service = self.service()
        result = _call(
            lambda: service.save(
                command.file_text,
                _type_from_name(path.name or ""),
                path.scope,
                source="assistant",
                provenance=_provenance(ctx),
            )
        )
        card = _written(result)
        self.names[path.text()] = card.id
        if result.status == "duplicate":
            return (
                f"{path.text()} already says this as {self.shown_name(card)} ({result.reason}); "
                f"nothing new was saved, {path.text()} now names it."
            )
        return f"File created successfully at {path.text()} (memory card {card.id}).{_extra(result)}"

    def edit(self, raw_path: str, ctx: ToolContext, change: Callable[[str], str]) -> str:
        """A correction: the card's text changed by ``change``, saved as a new card superseding it."""
        path, card = self.existing(raw_path)
        new_text = change(card.content)
        if not new_text.strip():
            raise ToolError("the edit would leave the memory empty; delete the file instead")
        return self._correct(path, card, ctx, new_text)

    def _correct(
        self, path: MemoryPath, card: MemoryCard, ctx: ToolContext, new_text: str, scope: str | None = None
    ) -> str:
        service = self.service()
        fields: dict[str, object] = {"source": "assistant", "provenance": _provenance(ctx)}
        if scope is not None:
            fields["scope"] = scope
        result = _call(lambda: service.correct(card.id, new_text, **fields))
        new = _written(result)
        for name, card_id in list(self.names.items()):
            if card_id == card.id:
                self.names[name] = new.id
        if result.status == "duplicate":
            return f"Nothing changed: {self.shown_name(new)} already says this ({result.reason})."
        return (
            f"The memory file {path.text()} has been edited: card {new.id} now holds it and supersedes "
            f"{card.id} (kept as history).{_extra(result)}"
        )

    def delete(self, command: DeleteCommand) -> str:
        path, card = self.existing(command.path)
        erased = _call(lambda: self.service().forget([card.id]))
        if not erased:
            raise ToolError(f"The path {path.text()} does not exist.")
        self.names = {name: card_id for name, card_id in self.names.items() if card_id != card.id}
        older = f" with {erased - 1} older version(s)" if erased > 1 else ""
        return f"Deleted {path.text()}: memory card {card.id} is erased{older}."

    def rename(self, command: RenameCommand, ctx: ToolContext) -> str:
        """Within a folder only the name changes (for this session: cards are named by id on
        disk); into another folder the card moves to that scope, as a correction."""
        old, card = self.existing(command.old_path)
        new = file_path(command.new_path)
        if self.find(new) is not None:
            raise ToolError(f"{new.text()} already exists")
        if new.card_id is not None and new.card_id != card.id:
            raise ToolError(f"{new.name} is a card id memagent gives; choose a name of your own")
        self.names = {name: card_id for name, card_id in self.names.items() if card_id != card.id}
        if new.card_id is None:
            self.names[new.text()] = card.id
        if new.scope != old.scope:
            answer = self._correct(old, card, ctx, card.content, scope=new.scope)
            return answer.replace("has been edited", f"is now {new.text()}", 1)
        return (
            f"Renamed {old.text()} to {new.text()} for this session (memory card {card.id}; "
            f"later sessions list it as {self.folder_of(new)}/{card.id}.md)."
        )

    @staticmethod
    def folder_of(path: MemoryPath) -> str:
        return f"{ROOT}/{path.folder}" if path.folder else ROOT


def _visible(service: MemoryService, card: MemoryCard) -> bool:
    """What the model may see: not a repository card held back from an untrusted project, not
    another session's session card."""
    from memagent.memory.provenance import REPOSITORY

    if card.source == REPOSITORY and service.hold_repository:
        return False
    return card.scope != "session" or card.scope_id == service.session_id


def _provenance(ctx: ToolContext) -> dict[str, str]:
    found = {"session_id": ctx.session_id} if ctx.session_id else {}
    if ctx.agent:
        found["agent"] = ctx.agent
    return found


def _call(action: Callable[[], T]) -> T:
    from memagent.memory.service import MemoryUnavailable

    try:
        return action()
    except MemoryUnavailable as exc:
        raise ToolError(f"long-term memory failed: {exc}") from None


def _written(result: SaveResult) -> MemoryCard:
    if result.status == "refused" or result.card is None:
        raise ToolError(f"memory not saved: {result.reason}")
    return result.card


def _extra(result: SaveResult) -> str:
    if result.status == "superseded" and result.card is not None and result.card.supersedes:
        note = f" It supersedes memory card {result.card.supersedes}, which said the opposite."
    else:
        note = ""
    if "memory_max_cards" in result.reason:
        note += f" Note: {result.reason[result.reason.index('memory_max_cards') :]}."
    return note


def _replace(command: StrReplaceCommand) -> Callable[[str], str]:
    def change(text: str) -> str:
        count = text.count(command.old_str) if command.old_str else 0
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{command.old_str}` did not appear verbatim in {command.path}."
            )
        if count > 1:
            lines = [str(n) for n, line in enumerate(text.split("\n"), 1) if command.old_str in line]
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{command.old_str}` "
                f"(lines {', '.join(lines) or 'spanning several'}). Make it unique."
            )
        return text.replace(command.old_str, command.new_str, 1)

    return change


def _insert(command: InsertCommand) -> Callable[[str], str]:
    def change(text: str) -> str:
        lines = text.split("\n")
        if not 0 <= command.insert_line <= len(lines):
            raise ToolError(f"Invalid `insert_line` {command.insert_line}: it should be within [0, {len(lines)}].")
        return "\n".join(
            [*lines[: command.insert_line], *command.insert_text.split("\n"), *lines[command.insert_line :]]
        )

    return change


@dataclass
class ClaudeMemoryTool(Tool[MemoryCommand]):
    """The ``memory`` tool: sent as the Messages API's own entry, validated and run like any
    other tool."""

    def schema(self) -> JsonObject:
        return {"type": TOOL_TYPE, "name": TOOL_NAME}

    def summary(self, raw: JsonValue) -> str:
        if not isinstance(raw, dict):
            return ""
        where = raw.get("path") or (f"{raw.get('old_path')} → {raw.get('new_path')}" if "old_path" in raw else "")
        return _one_line(f"{raw.get('command', '?')} {where}", 80)


def memory_tool(files: MemoryFiles) -> ClaudeMemoryTool:
    def run(args: MemoryCommand, ctx: ToolContext) -> str:
        command = args.root
        if isinstance(command, ViewCommand):
            return files.view(command)
        if isinstance(command, CreateCommand):
            return files.create(command, ctx)
        if isinstance(command, StrReplaceCommand):
            return files.edit(command.path, ctx, _replace(command))
        if isinstance(command, InsertCommand):
            return files.edit(command.path, ctx, _insert(command))
        if isinstance(command, DeleteCommand):
            return files.delete(command)
        return files.rename(command, ctx)

    return ClaudeMemoryTool(
        name=TOOL_NAME,
        description="Claude's memory tool over memagent's memory cards (/memories).",
        input_model=MemoryCommand,
        handler=run,
        effects=command_effects,
    )


GUIDE = (
    f"Your memory directory {ROOT} (the `memory` tool) is memagent's long-term memory: each file is one "
    "memory card, so keep a file to one self-contained fact, preference, decision or procedure. Every write "
    "passes memagent's memory gate (no secrets or personal data; near-duplicates are merged) and an edit "
    f"keeps the older version as history. {ROOT}/user holds memories about the user, shown in every project."
)


class ClaudeMemoryToolFeature(BaseFeature):
    """Offers the ``memory`` tool over a memory service (see the module docstring)."""

    name = "claude_memory_tool"

    def __init__(self, service_factory: Callable[[], MemoryService]) -> None:
        self.files = MemoryFiles(service_factory)

    def tools(self) -> list[RegisteredTool]:
        return [memory_tool(self.files)]

    def system_text(self) -> str | None:
        return GUIDE

    def for_subagent(self, child: SubagentContext) -> ClaudeMemoryToolFeature:
        """The same store and the same names: a subagent's writes name it (``ToolContext.agent``)."""
        return self


def supported(model_capabilities: frozenset[str], enabled: bool) -> bool:
    """Whether a session offers the tool: the setting is on and the model was trained on it."""
    return enabled and "memory_tool" in model_capabilities


__all__ = [
    "ClaudeMemoryTool",
    "ClaudeMemoryToolFeature",
    "MemoryCommand",
    "MemoryFiles",
    "MemoryPath",
    "command_effects",
    "memory_tool",
    "numbered",
    "parse_path",
    "supported",
]
