"""An MCP tool's input schema, made acceptable to the Messages API.

MCP allows any JSON Schema as a tool's input; the Messages API is stricter about the top level:
it must be ``"type": "object"`` and may not be a combination (``anyOf``, ``oneOf``, ``allOf``).
A request carrying one such tool is refused as a whole, so one careless server would break every
request of the session. :func:`api_schema` rewrites what it can and refuses the rest:

- a missing or list-valued top-level ``type`` becomes ``"object"``;
- ``allOf`` of object schemas is merged: every branch's properties, every branch's required keys;
- ``anyOf`` / ``oneOf`` of object schemas becomes one object with every branch's properties; a key
  is required only when every branch requires it, and the description lists the accepted shapes
  so the model still knows which fields go together;
- a branch that is not an object schema (``{"type": "string"}``), or a ``$ref`` that cannot be
  resolved inside the schema, cannot be merged: the tool is left out with that reason. An untyped
  branch (``{"required": ["id"]}``, the usual way to say "one of these fields") is an object.

Deeper levels are passed on as they are: the API accepts combinations inside properties.
"""

from __future__ import annotations

import copy

from memagent.jsontypes import JsonObject, JsonValue, json_list, json_object

COMBINATORS = ("allOf", "anyOf", "oneOf")
_MAX_SHAPES_LISTED = 6


class SchemaError(Exception):
    """A schema that cannot be made acceptable; ``str()`` is the one-line reason."""


def _resolve(branch: JsonValue, root: JsonObject) -> JsonObject:
    """A branch, following one local ``$ref`` (``#/$defs/X`` or ``#/definitions/X``)."""
    if not isinstance(branch, dict):
        raise SchemaError("a branch of its top-level combination is not a schema")
    ref = branch.get("$ref")
    if ref is None:
        return branch
    parts = str(ref).split("/")
    if len(parts) != 3 or parts[0] != "#" or parts[1] not in ("$defs", "definitions"):
        raise SchemaError(f"its top-level combination refers to {ref!r}, which cannot be resolved")
    target = json_object(root.get(parts[1])).get(parts[2])
    if not isinstance(target, dict):
        raise SchemaError(f"its top-level combination refers to {ref!r}, which is not defined")
    return {**target, **{k: v for k, v in branch.items() if k != "$ref"}}


def _is_object(branch: JsonObject) -> bool:
    """A branch that constrains an object: typed ``object``, or untyped (``{"required": ["a"]}``
    adds a constraint to the object around it)."""
    kind = branch.get("type")
    if kind is None:
        return not any(key in branch for key in ("enum", "const", "items"))
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _object_branches(schema: JsonObject, key: str, root: JsonObject) -> list[JsonObject]:
    branches = schema.get(key)
    if not isinstance(branches, list) or not branches:
        raise SchemaError(f"its top-level {key} is not a list of schemas")
    resolved = []
    for given in branches:
        branch = _resolve(given, root)
        if not _is_object(branch):
            kind = branch.get("type", "an untyped schema")
            raise SchemaError(f"its top-level {key} has a branch of type {kind!r}; only objects can be merged")
        resolved.append(_flatten(branch, root))
    return resolved


def _merge_properties(target: JsonObject, branch: JsonObject) -> None:
    for name, spec in json_object(branch.get("properties")).items():
        if name not in target:
            target[name] = spec
        elif target[name] != spec:
            known = target[name]
            existing = known.get("anyOf") if isinstance(known, dict) and len(known) == 1 else None
            options = list(existing) if isinstance(existing, list) else [known]
            if spec not in options:
                options.append(spec)
            target[name] = {"anyOf": options}


def _shape(branch: JsonObject) -> str:
    required = [str(key) for key in json_list(branch.get("required"))]
    title = branch.get("title") or branch.get("description")
    fields = ", ".join(required) if required else "no required fields"
    return f"{title}: {fields}" if isinstance(title, str) and title.strip() else fields


def _flatten(schema: JsonObject, root: JsonObject) -> JsonObject:
    """One object schema without a top-level combination (raises SchemaError when impossible)."""
    result = {key: value for key, value in schema.items() if key not in COMBINATORS}
    properties: JsonObject = dict(json_object(result.get("properties")))
    required: list[str] = [str(key) for key in json_list(result.get("required"))]
    notes: list[str] = []
    if "allOf" in schema:
        for branch in _object_branches(schema, "allOf", root):
            _merge_properties(properties, branch)
            required += [str(key) for key in json_list(branch.get("required")) if str(key) not in required]
    for key in ("anyOf", "oneOf"):
        if key not in schema:
            continue
        branches = _object_branches(schema, key, root)
        for branch in branches:
            _merge_properties(properties, branch)
        common = set.intersection(*(set(map(str, json_list(b.get("required")))) for b in branches))
        required += sorted(name for name in common if name not in required)
        shapes = [_shape(b) for b in branches[:_MAX_SHAPES_LISTED]]
        more = " …" if len(branches) > _MAX_SHAPES_LISTED else ""
        word = "exactly one" if key == "oneOf" else "at least one"
        notes.append(f"Give {word} of these shapes: " + "; ".join(f"({s})" for s in shapes) + more)
    result["type"] = "object"
    result["properties"] = properties
    if required:
        result["required"] = [*required]
    else:
        result.pop("required", None)
    if notes:
        result["description"] = " ".join([str(result.get("description") or "").strip(), *notes]).strip()
    return result


def api_schema(schema: JsonValue) -> JsonObject:
    """``schema`` rewritten for the Messages API (a copy); SchemaError when it cannot be."""
    if not isinstance(schema, dict):
        raise SchemaError("its input schema is not a JSON object")
    original = copy.deepcopy(schema)
    kind = original.get("type")
    if kind is not None and kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise SchemaError(f"its input schema is of type {kind!r}, not an object")
    if kind == "object" and not any(key in original for key in COMBINATORS):
        return original
    return _flatten(original, original)


__all__ = ["COMBINATORS", "SchemaError", "api_schema"]
