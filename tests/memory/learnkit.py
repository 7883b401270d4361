"""Helpers for the learning tests: a scripted extractor/consolidator and session builders."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memagent.config import ProjectPaths

# -- the scripted model behind the fake API ---------------------------------------------------


def request_text(body: dict[str, Any]) -> tuple[str, str]:
    """(system text, first user message text) of a Messages API request body."""
    system = body.get("system") or []
    system_text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
    content = body["messages"][0]["content"]
    user_text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    return system_text, user_text


def message_step(text: str) -> dict[str, Any]:
    return {"type": "message", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


CANDIDATE_RE = re.compile(r"^Candidate (\d+): \([^)]*\) (.*)$", re.M)
EXISTING_RE = re.compile(r"^\s+E(\d+): \([^)]*\) (.*)$", re.M)


def parse_consolidation(prompt: str) -> tuple[dict[int, str], dict[int, list[tuple[int, str]]]]:
    """Candidates by number, and the (handle, text) of the existing cards listed under each."""
    candidates: dict[int, str] = {}
    shown: dict[int, list[tuple[int, str]]] = {}
    current = None
    for line in prompt.splitlines():
        m = CANDIDATE_RE.match(line)
        if m:
            current = int(m.group(1))
            candidates[current] = m.group(2)
            shown[current] = []
            continue
        m = EXISTING_RE.match(line)
        if m and current is not None:
            shown[current].append((int(m.group(1)), m.group(2)))
    return candidates, shown


@dataclass
class Fact:
    """A planted fact: when ``trigger`` appears in an extraction request, ``memory`` is proposed."""

    trigger: str
    content: str
    memory_type: str = "fact"
    scope: str = "project"
    confidence: float = 0.9
    importance: float = 0.6
    files: list[str] = field(default_factory=list)
    quote: str | None = None

    def item(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "memory_type": self.memory_type,
            "scope": self.scope,
            "confidence": self.confidence,
            "importance": self.importance,
            "files": self.files,
            "quote": self.quote if self.quote is not None else self.trigger,
            "reasoning": "extra keys are ignored",
        }


def default_decider(candidate: str, existing: list[tuple[int, str]]) -> dict[str, Any]:
    """NOOP for the same text, UPDATE for the same subject (text before " is "), else ADD."""

    def subject(text: str) -> str:
        return text.split(" is ", 1)[0].strip().lower()

    for handle, text in existing:
        if text.strip().lower() == candidate.strip().lower():
            return {"action": "NOOP", "target": handle}
    for handle, text in existing:
        if " is " in candidate and subject(text) == subject(candidate):
            return {"action": "UPDATE", "target": handle}
    return {"action": "ADD", "target": None}


@dataclass
class Brain:
    """Answers extraction and consolidation requests by rule (a plausible, deterministic model)."""

    facts: list[Fact] = field(default_factory=list)
    decide: Callable[[str, list[tuple[int, str]]], dict[str, Any]] = default_decider
    extraction_answer: Callable[[str], str] | None = None  # overrides the fact rules
    consolidation_answer: Callable[[str], str] | None = None
    extraction_prompts: list[str] = field(default_factory=list)
    consolidation_prompts: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        system, prompt = request_text(body)
        self.systems.append(system)
        if "extract" in system.lower() and prompt.startswith("Session date:"):
            self.extraction_prompts.append(prompt)
            if self.extraction_answer is not None:
                return message_step(self.extraction_answer(prompt))
            items = [f.item() for f in self.facts if f.trigger in prompt]
            return message_step("Here you go:\n```json\n" + json.dumps({"memories": items}) + "\n```")
        if "ADD" in system and "CONTRADICT" in system:
            self.consolidation_prompts.append(prompt)
            if self.consolidation_answer is not None:
                return message_step(self.consolidation_answer(prompt))
            candidates, shown = parse_consolidation(prompt)
            actions = [{"candidate": n, **self.decide(text, shown[n])} for n, text in candidates.items()]
            return message_step(json.dumps({"actions": actions}))
        return message_step("unexpected request")


# -- building sessions --------------------------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def learn_facts(brain: Any, make_pipeline: Any, facts: list[Any], text: str | None = None, **kwargs: Any) -> Any:
    """Run one extraction over a short session whose user message names ``facts`` (or says
    ``text``), the scripted model answering with those facts; returns the pipeline's report."""
    brain.facts = facts
    pipeline = make_pipeline(**kwargs)
    session = Session()
    session.add(user(text or "Notes: " + "; ".join(f.trigger for f in facts)), assistant("ok"))
    return pipeline.process(session.messages, session.ids, "turns")


def tool_call(name: str, args: dict[str, Any], call_id: str, text: str = "Let me look.") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}, {"type": "tool_use", "id": call_id, "name": name, "input": args}],
    }


def tool_result(call_id: str, output: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}]}


@dataclass
class Session:
    """Messages with transcript-style ids ("1", "2", ...)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    def add(self, *messages: dict[str, Any]) -> list[str]:
        added = []
        for message in messages:
            self.messages.append(message)
            self.ids.append(str(len(self.ids) + 1))
            added.append(self.ids[-1])
        return added


def all_cards(service) -> list:
    return service.list(include_all=True, limit=1000)


def project_root(paths: ProjectPaths) -> Path:
    return paths.root


__all__ = [
    "Brain",
    "Fact",
    "Session",
    "all_cards",
    "assistant",
    "default_decider",
    "message_step",
    "parse_consolidation",
    "request_text",
    "tool_call",
    "tool_result",
    "user",
]
