"""MCP input schemas made acceptable to the Messages API (checked by the strict fake's own rules)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeapi import check_request
from memagent.mcp_bridge.schemas import SchemaError, api_schema


def accepted(schema: dict) -> bool:
    body = {
        "model": "m",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "t", "description": "d", "input_schema": schema}],
    }
    return check_request(body) == []


def test_a_plain_object_schema_is_passed_on_unchanged_and_not_mutated():
    schema = {
        "type": "object",
        "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "required": ["a"],
    }
    assert api_schema(schema) == schema and api_schema(schema) is not schema


def test_anyof_branches_merge_with_only_the_common_required_keys():
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"path": {"type": "string"}, "mode": {"type": "string"}},
                "required": ["path", "mode"],
            },
            {
                "type": "object",
                "properties": {"url": {"type": "string"}, "mode": {"type": "string"}},
                "required": ["url", "mode"],
            },
        ],
        "description": "Open something.",
    }
    fixed = api_schema(schema)
    assert accepted(fixed) and not accepted(schema)
    assert fixed["type"] == "object" and set(fixed["properties"]) == {"path", "mode", "url"}
    assert fixed["required"] == ["mode"]
    assert fixed["description"] == "Open something. Give at least one of these shapes: (path, mode); (url, mode)"


def test_oneof_of_required_alternatives_without_types_and_a_conflicting_property():
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "oneOf": [
            {"required": ["id"]},
            {"properties": {"id": {"type": "string"}, "q": {"type": "string"}}, "required": ["q"]},
        ],
    }
    fixed = api_schema(schema)
    assert accepted(fixed)
    assert fixed["properties"]["id"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert "required" not in fixed and "exactly one of these shapes: (id); (q)" in fixed["description"]


def test_allof_merges_everything_and_follows_local_refs():
    schema = {
        "type": "object",
        "allOf": [{"$ref": "#/definitions/base"}, {"properties": {"b": {"type": "number"}}, "required": ["b"]}],
        "definitions": {"base": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}},
    }
    fixed = api_schema(schema)
    assert accepted(fixed) and fixed["required"] == ["a", "b"] and set(fixed["properties"]) == {"a", "b"}


@pytest.mark.parametrize(
    "schema, reason",
    [
        ({"oneOf": [{"type": "string"}, {"type": "object"}]}, "its top-level oneOf has a branch of type 'string'"),
        (
            {"anyOf": [{"$ref": "https://example.com/s.json"}]},
            "refers to 'https://example.com/s.json', which cannot be resolved",
        ),
        ({"allOf": [{"$ref": "#/$defs/missing"}]}, "refers to '#/$defs/missing', which is not defined"),
        ({"type": "array", "items": {}}, "its input schema is of type 'array', not an object"),
        ({"anyOf": "nonsense"}, "its top-level anyOf is not a list of schemas"),
        (["not", "a", "schema"], "its input schema is not a JSON object"),
    ],
)
def test_what_cannot_be_merged_is_refused_with_a_reason(schema, reason):
    with pytest.raises(SchemaError) as caught:
        api_schema(schema)
    assert reason in str(caught.value)


def test_a_missing_or_listed_type_becomes_object():
    assert api_schema({"properties": {"a": {"type": "string"}}})["type"] == "object"
    assert accepted(api_schema({"type": ["object", "null"], "properties": {}}))


_leaf = st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean"])})
_object = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(st.sampled_from("abcdef"), _leaf, max_size=4)},
    optional={"required": st.lists(st.sampled_from("abcdef"), max_size=3, unique=True)},
)


@given(st.lists(_object, min_size=1, max_size=4), st.sampled_from(["anyOf", "oneOf", "allOf"]))
def test_any_combination_of_objects_comes_out_accepted(branches, key):
    fixed = api_schema({key: branches})
    assert accepted(fixed)
    for branch in branches:
        assert set(branch["properties"]) <= set(fixed["properties"])
    if key != "allOf":
        common = set.intersection(*(set(b.get("required", [])) for b in branches))
        assert set(fixed.get("required", [])) == common


@pytest.mark.parametrize("defs", [["X"], "X", 3])
def test_definitions_that_are_not_an_object_refuse_the_schema_with_a_reason(defs):
    schema = {"anyOf": [{"$ref": "#/$defs/X"}], "$defs": defs}
    with pytest.raises(SchemaError, match="not defined"):
        api_schema(schema)


def test_a_branch_whose_properties_or_required_are_malformed_adds_nothing_of_them():
    schema = {
        "anyOf": [
            {"type": "object", "properties": ["a"], "required": "ab"},
            {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }
    flattened = api_schema(schema)
    assert flattened["properties"] == {"b": {"type": "string"}}
    assert "required" not in flattened  # "ab" is no list of names: nothing is required by both
    assert accepted(flattened)
