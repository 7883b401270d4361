"""An MCP ``CallToolResult`` as what the model reads: text plus image blocks.

Text content is joined; images in a format the Messages API accepts become image blocks next
to the text; everything else (audio, binary resources, unsupported image types) is named in the
text so the model knows it was there. Structured content is shown as JSON when the server sent
no text. Long text is cut in the middle, keeping its head and tail.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the Messages API limit per image
MAX_IMAGES = 8


@dataclass
class CallOutcome:
    """A finished MCP tool call, already in the agent's terms."""

    text: str
    is_error: bool = False
    images: list[dict[str, Any]] = field(default_factory=list)


def cap_text(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n… [{cut} characters cut] …\n{text[-tail:]}"


def _image_block(data: str, mime: str) -> dict[str, Any] | str:
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


def _resource_text(resource: Any) -> str:
    uri = str(getattr(resource, "uri", "") or "")
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return f"[resource {uri}]\n{text}" if uri else text
    mime = getattr(resource, "mime_type", None) or "binary"
    return f"[binary resource {uri} ({mime}) not shown]"


def convert_result(result: Any, max_chars: int = 30_000) -> CallOutcome:
    """``CallToolResult`` (duck-typed: ``content``, ``structured_content``, ``is_error``)."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for item in getattr(result, "content", None) or []:
        kind = getattr(item, "type", None)
        if kind == "text":
            texts.append(str(item.text))
        elif kind == "image":
            block = _image_block(str(item.data), str(item.mime_type))
            if isinstance(block, str):
                texts.append(block)
            elif len(images) < MAX_IMAGES:
                images.append(block)
            else:
                texts.append(f"[more than {MAX_IMAGES} images: the rest were left out]")
        elif kind == "resource":
            texts.append(_resource_text(item.resource))
        elif kind == "resource_link":
            texts.append(f"[resource link {getattr(item, 'uri', '')} ({getattr(item, 'name', '')})]")
        else:
            texts.append(f"[{kind or 'unknown'} content not shown]")
    structured = getattr(result, "structured_content", None)
    if not texts and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    text = cap_text("\n".join(texts), max_chars)
    if not text and images:
        text = f"({len(images)} image{'s' if len(images) > 1 else ''})"
    return CallOutcome(text, bool(getattr(result, "is_error", False)), images)


__all__ = ["CallOutcome", "IMAGE_TYPES", "cap_text", "convert_result"]
