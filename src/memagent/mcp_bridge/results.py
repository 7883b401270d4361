"""MCP results as what the model reads: text plus image blocks.

A ``CallToolResult`` (:func:`convert_result`) and a ``ReadResourceResult``
(:func:`convert_contents`) are turned into the same :class:`CallOutcome`. Text content is
joined; images in a format the Messages API accepts become image blocks next to the text;
everything else (audio, binary resources, unsupported image types) is named in the text, with
its size, so the model knows it was there without reading base64. A resource *link* names the
resource and how to read it (the ``read_mcp_resource`` tool with the server and the URI).
Structured content is shown as JSON when the server sent no text. Long text is cut in the
middle, keeping its head and tail.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memagent.jsontypes import JsonObject

if TYPE_CHECKING:
    from mcp.types import (
        BlobResourceContents,
        CallToolResult,
        ContentBlock,
        GetPromptResult,
        ReadResourceResult,
        ResourceLink,
        TextResourceContents,
    )

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the Messages API limit per image
MAX_IMAGES = 8


@dataclass
class CallOutcome:
    """A finished MCP tool call, already in the agent's terms."""

    text: str
    is_error: bool = False
    images: list[JsonObject] = field(default_factory=list)


def cap_text(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n… [{cut} characters cut] …\n{text[-tail:]}"


def _image_block(data: str, mime: str) -> JsonObject | str:
    """An image block, or a one-line note saying why the image is not passed on."""
    if mime not in IMAGE_TYPES:
        return f"[image of type {mime} not shown: the model accepts {', '.join(IMAGE_TYPES)}]"
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return "[an image that is not valid base64 was left out]"
    if size > MAX_IMAGE_BYTES:
        return f"[a {size // 1024} KiB image was left out: over the {MAX_IMAGE_BYTES // 1024 // 1024} MiB limit]"
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def _blob_size(blob: str) -> int:
    return len(blob) * 3 // 4 - blob[-2:].count("=") if blob else 0


class _Collector:
    """Text pieces and image blocks, in order, with the image cap applied."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.texts: list[str] = []
        self.images: list[JsonObject] = []

    def image(self, data: str, mime: str) -> None:
        block = _image_block(data, mime)
        if isinstance(block, str):
            self.texts.append(block)
        elif len(self.images) < MAX_IMAGES:
            self.images.append(block)
        else:
            self.texts.append(f"[more than {MAX_IMAGES} images: the rest were left out]")

    def contents(self, resource: TextResourceContents | BlobResourceContents) -> None:
        """One ``TextResourceContents`` / ``BlobResourceContents``."""
        uri = str(resource.uri or "")
        mime = str(resource.mime_type or "")
        text = getattr(resource, "text", None)  # the one field telling the two kinds apart
        if isinstance(text, str):
            self.texts.append(f"[resource {uri}]\n{text}" if uri else text)
            return
        blob = str(getattr(resource, "blob", "") or "")
        if mime in IMAGE_TYPES:
            self.image(blob, mime)
            return
        self.texts.append(f"[binary resource {uri} ({mime or 'unknown type'}, {_blob_size(blob):,} bytes) not shown]")

    def link(self, item: ResourceLink) -> None:
        uri = str(item.uri or "")
        details = [str(v) for v in (item.name, item.mime_type) if v]
        about = f" ({', '.join(details)})" if details else ""
        description = " ".join(str(item.description or "").split())
        self.texts.append(
            f"[resource link {uri}{about}{': ' + description if description else ''} — read it with "
            f"read_mcp_resource(server={self.server!r}, uri={uri!r})]"
        )

    def block(self, item: ContentBlock) -> None:
        if item.type == "text":
            self.texts.append(str(item.text))
        elif item.type == "image":
            self.image(str(item.data), str(item.mime_type))
        elif item.type == "resource":
            self.contents(item.resource)
        elif item.type == "resource_link":
            self.link(item)
        else:
            self.texts.append(f"[{item.type or 'unknown'} content not shown]")

    def outcome(self, max_chars: int, is_error: bool = False) -> CallOutcome:
        text = cap_text("\n".join(self.texts), max_chars)
        if not text and self.images:
            text = f"({len(self.images)} image{'s' if len(self.images) > 1 else ''})"
        return CallOutcome(text, is_error, self.images)


def convert_result(result: CallToolResult, max_chars: int = 30_000, server: str = "") -> CallOutcome:
    """A tool's ``CallToolResult``: its content in order, else its structured content as JSON."""
    collected = _Collector(server)
    for item in result.content or []:
        collected.block(item)
    structured = result.structured_content
    if not collected.texts and structured is not None:
        collected.texts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    return collected.outcome(max_chars, bool(result.is_error))


def convert_contents(result: ReadResourceResult, max_chars: int = 30_000, server: str = "") -> CallOutcome:
    """A resource's ``ReadResourceResult``: every part of its ``contents``."""
    collected = _Collector(server)
    for item in result.contents or []:
        collected.contents(item)
    if not collected.texts and not collected.images:
        collected.texts.append("(the resource is empty)")
    return collected.outcome(max_chars)


def prompt_text(result: GetPromptResult, server: str = "", max_chars: int = 100_000) -> str:
    """A ``GetPromptResult`` as one message: every message's text in order (an assistant message
    is marked as such), resources inlined as :func:`convert_result` does, images named."""
    parts: list[str] = []
    for message in result.messages or []:
        collected = _Collector(server)
        collected.block(message.content)
        text = "\n".join(collected.texts)
        if collected.images:
            text += f"\n[{len(collected.images)} image(s) in the prompt not shown]"
        if text.strip():
            parts.append(text if message.role == "user" else f"(assistant) {text}")
    return cap_text("\n\n".join(parts), max_chars)


__all__ = ["CallOutcome", "IMAGE_TYPES", "cap_text", "convert_contents", "convert_result", "prompt_text"]
