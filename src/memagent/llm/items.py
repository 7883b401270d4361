"""Typed conversation items: what a message is made of, as the rest of memagent reads it.

A message's content is stored as blocks in the transcript format (:doc:`docs/transcript.md`:
the Messages API's block shapes, plus memagent's ``injected`` field). Every reader outside
``llm/`` goes through this module instead of looking at a block's ``"type"``:

* :func:`item` turns one stored block into an item; :func:`items` does a whole content list;
* :func:`block` turns an item back into its stored block (``block(item(b)) == b`` for every
  block memagent writes);
* :func:`wire_block` is the block as the Messages API gets it: the same, minus memagent's own
  fields, so an injected text reaches the model exactly as its text says.

The items:

* :class:`Text` — words the user typed or the model wrote;
* :class:`Injected` — text memagent put into the conversation itself (memories, a summary, a
  reminder …); its :class:`~memagent.markers.Marker` is a field, stored as ``"injected"`` beside
  the text, never guessed from the text's opening words;
* :class:`ToolUse` — a tool call of the model; :class:`ToolResult` — its answer (text, or text
  and images; an answer memagent wrote itself, such as the placeholder of an elided result,
  carries its marker too);
* :class:`Image`, :class:`Thinking` (also redacted thinking);
* :class:`OtherBlock` — any other block (a document, a server tool's block, a type a later API
  adds), kept byte for byte so nothing is lost on a round trip.

Terminal-free and SDK-free: the core reads it, :mod:`memagent.llm.anthropic` maps it to the wire.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from memagent.jsontypes import JsonMapping, JsonObject, JsonValue, json_object
from memagent.llm.types import Block, Message
from memagent.markers import Marker

INJECTED_FIELD = "injected"
"""The stored block's field naming an injected text's kind (``Marker.key``); never sent."""


@dataclass(frozen=True)
class Text:
    """Words of the user or the model. ``citations`` are kept as the API gave them."""

    text: str
    citations: tuple[JsonObject, ...] = ()


@dataclass(frozen=True)
class Injected:
    """Text memagent added: ``text`` is exactly what the model reads, ``kind`` says what it is."""

    kind: Marker
    text: str


@dataclass(frozen=True)
class ToolUse:
    """A tool call of the model."""

    id: str
    name: str
    input: JsonObject = field(default_factory=dict)


@dataclass(frozen=True)
class Image:
    """An image: ``source`` as the API takes it (``{"type": "base64", "media_type", "data"}``)."""

    source: JsonObject


@dataclass(frozen=True)
class OtherBlock:
    """A block memagent has no item for; ``raw`` is kept as it came."""

    raw: JsonObject

    @property
    def kind(self) -> str:
        return str(self.raw.get("type", ""))


ResultPart = Text | Image | OtherBlock


@dataclass(frozen=True)
class ToolResult:
    """The answer to the tool call ``tool_use_id``: a string, or parts (text and images).
    ``marker`` is set when memagent wrote the answer itself (an elided result's placeholder)."""

    tool_use_id: str
    content: str | tuple[ResultPart, ...] = ""
    is_error: bool = False
    marker: Marker | None = None

    @property
    def text(self) -> str:
        """The answer's text: the string, or its text parts joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content if isinstance(part, Text))

    @property
    def has_non_text(self) -> bool:
        return not isinstance(self.content, str) and any(not isinstance(p, Text) for p in self.content)


@dataclass(frozen=True)
class Thinking:
    """The model's thinking; ``redacted`` holds the encrypted form of a redacted block."""

    thinking: str = ""
    signature: str = ""
    redacted: str | None = None


Item = Text | Injected | ToolUse | ToolResult | Image | Thinking | OtherBlock

# Content block types the Messages API accepts back in a request.
API_BLOCK_TYPES = frozenset(
    {
        "text",
        "image",
        "document",
        "search_result",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)


# ------------------------------------------------------------------ stored block -> item


def item(raw: JsonMapping) -> Item:
    """The item a stored (or wire) block is. Never raises: a malformed block is an OtherBlock."""
    kind = raw.get("type")
    try:
        if kind == "text":
            return _text_item(raw)
        if kind == "tool_use":
            return ToolUse(str(raw["id"]), str(raw["name"]), _tool_input(raw.get("input")))
        if kind == "tool_result":
            return _result_item(raw)
        source = raw.get("source")
        if kind == "image" and isinstance(source, dict):
            return Image(dict(source))
        if kind == "thinking":
            return Thinking(str(raw.get("thinking", "")), str(raw.get("signature", "")))
        if kind == "redacted_thinking":
            return Thinking(redacted=str(raw.get("data", "")))
    except (KeyError, TypeError, ValueError):
        pass
    return OtherBlock(_json_copy(raw))


def _tool_input(value: object) -> JsonObject:
    """A tool call's input: a JSON object; anything else (absent, null) is none."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError("a tool call whose input is not an object")
    return dict(value)


def _json_copy(raw: JsonMapping) -> JsonObject:
    """A stored block kept as it came: a mapping read from JSON holds only JSON values."""
    return json_object(dict(raw))


def _text_item(raw: JsonMapping) -> Text | Injected:
    text = raw.get("text")
    if not isinstance(text, str):
        raise TypeError("a text block without text")
    marker = Marker.from_key(raw.get(INJECTED_FIELD))
    if marker is not None:
        return Injected(marker, text)
    citations = raw.get("citations")
    return Text(
        text, tuple(json_object(c) for c in citations if isinstance(c, dict)) if isinstance(citations, list) else ()
    )


def _result_item(raw: JsonMapping) -> ToolResult:
    content = raw.get("content", "")
    body: str | tuple[ResultPart, ...]
    if isinstance(content, list):
        parts = [item(part) for part in content if isinstance(part, Mapping)]
        body = tuple(p if isinstance(p, (Text, Image)) else OtherBlock(block(p)) for p in parts)
    else:
        body = "" if content is None else str(content)
    return ToolResult(
        str(raw["tool_use_id"]), body, bool(raw.get("is_error")), Marker.from_key(raw.get(INJECTED_FIELD))
    )


def items(content: object) -> list[Item]:
    """The items of a message's content (a bare string is one text; non-blocks are skipped)."""
    if isinstance(content, str):
        return [Text(content)] if content else []
    if not isinstance(content, (list, tuple)):
        return []
    return [item(b) for b in content if isinstance(b, Mapping)]


def message_items(message: JsonMapping) -> list[Item]:
    """The items of a message (``{"role", "content"}``) or a transcript ``message`` record."""
    return items(message.get("content"))


# ------------------------------------------------------------------ item -> stored block


def block(value: Item) -> Block:
    """The stored block of an item (the transcript format)."""
    if isinstance(value, Text):
        out: Block = {"type": "text", "text": value.text}
        if value.citations:
            out["citations"] = [dict(c) for c in value.citations]
        return out
    if isinstance(value, Injected):
        return {"type": "text", "text": value.text, INJECTED_FIELD: value.kind.key}
    if isinstance(value, ToolUse):
        return {"type": "tool_use", "id": value.id, "name": value.name, "input": dict(value.input)}
    if isinstance(value, ToolResult):
        return _result_block(value)
    if isinstance(value, Image):
        return {"type": "image", "source": dict(value.source)}
    if isinstance(value, Thinking):
        if value.redacted is not None:
            return {"type": "redacted_thinking", "data": value.redacted}
        return {"type": "thinking", "thinking": value.thinking, "signature": value.signature}
    return dict(value.raw)


def _result_block(value: ToolResult) -> Block:
    content: JsonValue = value.content if isinstance(value.content, str) else [block(p) for p in value.content]
    out: Block = {"type": "tool_result", "tool_use_id": value.tool_use_id, "content": content}
    if value.is_error:
        out["is_error"] = True
    if value.marker is not None:
        out[INJECTED_FIELD] = value.marker.key
    return out


def wire_type(value: Item) -> str:
    """The Messages API's name of an item's block type (``text``, ``tool_use``, ``image`` …)."""
    return str(block(value).get("type", ""))


def blocks(values: Iterable[Item]) -> list[Block]:
    return [block(v) for v in values]


def wire_block(raw: JsonValue) -> JsonValue:
    """A stored block as the Messages API gets it: memagent's own fields removed (the
    ``injected`` kind, also inside a tool result's parts); every API field kept as is. A block
    with nothing to remove is returned itself, not copied."""
    if not isinstance(raw, dict):
        return raw
    content = raw.get("content")
    parts: list[JsonValue] = []
    if raw.get("type") == "tool_result" and isinstance(content, list):
        parts = [wire_block(p) for p in content]
    changed_parts = isinstance(content, list) and any(new is not old for new, old in zip(parts, content))
    if INJECTED_FIELD not in raw and not changed_parts:
        return raw
    out = {k: v for k, v in raw.items() if k != INJECTED_FIELD}
    if changed_parts:
        out["content"] = parts
    return out


def wire_message(message: Message) -> Message:
    """A message as the Messages API gets it (see :func:`wire_block`); shared when unchanged."""
    content = message["content"]
    blocks = [wire_block(b) for b in content]
    if all(new is old for new, old in zip(blocks, content)):
        return message
    return {"role": message["role"], "content": [json_object(b) for b in blocks]}


# ------------------------------------------------------------------ questions readers ask


def injected(kind: Marker, text: str) -> Block:
    """The stored block of an injected text of ``kind``."""
    return block(Injected(kind, text))


def kind_of(raw: JsonMapping) -> Marker | None:
    """The marker of an injected block (text or tool result), None for anything else."""
    value = item(raw)
    if isinstance(value, Injected):
        return value.kind
    return value.marker if isinstance(value, ToolResult) else None


def own_texts(message: JsonMapping) -> list[str]:
    """The texts of a message typed by the user or written by the model (no injected text)."""
    return [v.text for v in message_items(message) if isinstance(v, Text)]


def texts(message: JsonMapping) -> list[str]:
    """Every text of a message, injected ones included."""
    return [v.text for v in message_items(message) if isinstance(v, (Text, Injected))]


def tool_uses(content: object) -> list[ToolUse]:
    return [v for v in items(content) if isinstance(v, ToolUse)]


def tool_results(content: object) -> list[ToolResult]:
    return [v for v in items(content) if isinstance(v, ToolResult)]


def is_blank_text(raw: JsonMapping) -> bool:
    """A text block with nothing but whitespace (the API rejects it)."""
    value = item(raw)
    return isinstance(value, (Text, Injected)) and not value.text.strip()


def is_text(raw: JsonMapping) -> bool:
    return isinstance(item(raw), (Text, Injected))


def accepted_blocks(content: Iterable[object]) -> tuple[list[Block], list[str]]:
    """The blocks of ``content`` the Messages API accepts back (copies), and the sorted names of
    the types it would refuse (a newer format, a hand edit, a damaged file); non-blocks are skipped."""
    found = [json_object(dict(b)) for b in content if isinstance(b, Mapping) and "type" in b]
    refused = sorted({str(b["type"]) for b in found if b["type"] not in API_BLOCK_TYPES})
    return [b for b in found if b["type"] in API_BLOCK_TYPES], refused


def upgrade_legacy(content: Sequence[JsonValue]) -> list[JsonValue]:
    """A message's blocks from a transcript of an earlier version (no ``injected`` field yet):
    text that opens with a marker's words gets its kind written down, as that version meant it.
    Blocks that already say their kind, and everything not text, are returned unchanged."""
    out: list[JsonValue] = []
    for raw in content:
        if isinstance(raw, dict) and INJECTED_FIELD not in raw:
            marker = _legacy_marker(raw)
            if marker is not None:
                raw = {**raw, INJECTED_FIELD: marker.key}
        out.append(raw)
    return out


def _legacy_marker(raw: JsonMapping) -> Marker | None:
    text, content = raw.get("text"), raw.get("content")
    if raw.get("type") == "text" and isinstance(text, str):
        return Marker.legacy_kind(text)
    if raw.get("type") == "tool_result" and isinstance(content, str):
        marker = Marker.legacy_kind(content)  # only the elided result's placeholder was memagent's
        return marker if marker is Marker.ELIDED_RESULT else None
    return None


__all__ = [
    "INJECTED_FIELD",
    "API_BLOCK_TYPES",
    "Image",
    "Injected",
    "Item",
    "OtherBlock",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "block",
    "blocks",
    "injected",
    "is_blank_text",
    "is_text",
    "accepted_blocks",
    "item",
    "items",
    "kind_of",
    "message_items",
    "own_texts",
    "texts",
    "tool_results",
    "tool_uses",
    "upgrade_legacy",
    "wire_block",
    "wire_type",
    "wire_message",
]
