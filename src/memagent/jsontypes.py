"""The shape of JSON data memagent did not write itself.

Wire blocks from the Messages API, a tool's input as the model sent it, MCP payloads, settings
files and transcript records read back from disk are JSON: their types are only known once a reader
looks. :data:`JsonValue` says so precisely, so a reader narrows with ``isinstance`` (or a pydantic
model) before using a field, instead of trusting a value of unchecked type.

A function that only reads JSON takes :data:`JsonMapping` (read-only, so a ``dict[str, str]`` is
accepted too); one that builds or stores it uses :data:`JsonObject`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

JsonValue: TypeAlias = "list[JsonValue] | dict[str, JsonValue] | str | bool | int | float | None"
"""What ``json.loads`` can return. For annotations only (a pydantic field uses ``pydantic.JsonValue``,
the same union, which it can validate); importing this module costs nothing."""

JsonObject: TypeAlias = "dict[str, JsonValue]"
"""A JSON object: a wire block, a message, a tool's input, a record."""

JsonMapping: TypeAlias = "Mapping[str, object]"
"""A JSON object only read: accepts any mapping with string keys."""


def json_object(value: object) -> JsonObject:
    """``value`` if it is a JSON object (a dict), else an empty one: for optional nested objects."""
    return value if isinstance(value, dict) else {}


def json_list(value: object) -> list[JsonValue]:
    """``value`` if it is a JSON array (a list), else an empty one."""
    return value if isinstance(value, list) else []


def json_str(value: object, default: str = "") -> str:
    """``value`` if it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def json_int(value: object, default: int = 0) -> int:
    """``value`` if it is an integer (not a boolean), else ``default``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


__all__ = ["JsonMapping", "JsonObject", "JsonValue", "json_int", "json_list", "json_object", "json_str"]
