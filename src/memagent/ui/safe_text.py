"""Make untrusted text safe to show in a terminal.

Task subjects, memory cards, tool summaries, tool output and model text may hold terminal
control sequences (``ESC [ 2 J`` clears the screen, ``ESC ] 52`` writes the clipboard, cursor
moves can hide part of a command in an approval prompt) or bidirectional overrides that make
text read differently from what it is. :func:`printable` shows each such character as a visible
escape (``\\x1b``, ``\\u202e``) instead; newlines and tabs are kept. :func:`json_line` does the same
for machine-readable output without changing the data: every such character inside a JSON string
is written as a ``\\u`` escape of four hex digits, which any JSON parser reads back as the same character.
It imports nothing but :mod:`json`.
"""

from __future__ import annotations

import json

_C0 = [c for c in range(0x20) if c not in (0x09, 0x0A)]
_C1 = list(range(0x7F, 0xA0))  # DEL and the 8-bit controls (0x9b is a one-byte CSI)
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES: dict[int, str] = {code: f"\\x{code:02x}" for code in _C0 + _C1}
_ESCAPES.update({code: f"\\u{code:04x}" for code in _BIDI})
_ESCAPES[0x0D] = "\\r"


def printable(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control character except newline and tab shown as an escape.

    ``\\r\\n`` becomes ``\\n``; with ``newlines=False`` newlines are escaped too (one-line
    fields such as a task subject)."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    safe = text.translate(_ESCAPES)
    return safe if newlines else safe.replace("\n", "\\n")


_JSON_ESCAPES: dict[int, str] = {code: f"\\u{code:04x}" for code in [0x7F, *range(0x80, 0xA0), *_BIDI]}


def json_line(value: object) -> str:
    """``value`` as one line of JSON that a terminal cannot act on: C0 controls are escaped by
    JSON itself, DEL, the C1 controls and bidirectional overrides as ``\\u`` escapes here. Parsing
    it gives back exactly ``value``."""
    return json.dumps(value, ensure_ascii=False).translate(_JSON_ESCAPES)


def printable_data(value: object) -> object:
    """``value`` (JSON-like: dicts, lists, strings) with :func:`printable` applied to every string."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {key: printable_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [printable_data(item) for item in value]
    return value


__all__ = ["json_line", "printable", "printable_data"]
