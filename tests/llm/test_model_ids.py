"""The configured model ids are ones the installed SDK knows and has not scheduled for retirement."""

from __future__ import annotations

from memagent.config import DEFAULT_MODEL, DEFAULT_SMALL_MODEL
from memagent.llm.anthropic import default_model_id, deprecated_models, known_model_ids


def test_the_sdk_model_list_is_read():
    ids = known_model_ids()
    assert len(ids) > 5 and all(i.startswith("claude-") for i in ids)


def test_the_default_model_is_in_the_sdk_model_list():
    assert default_model_id() == DEFAULT_MODEL
    assert DEFAULT_MODEL in known_model_ids()


def test_the_small_model_is_in_the_sdk_model_list():
    assert DEFAULT_SMALL_MODEL in known_model_ids()


def test_the_configured_models_are_not_deprecated():
    retiring = deprecated_models()
    for model in (DEFAULT_MODEL, DEFAULT_SMALL_MODEL):
        assert model not in retiring, f"{model} reaches end-of-life on {retiring.get(model)}; pick a current model"
