"""A small harness: the real Agent, a FunctionModel brain, a real transcript and CompactingContext.

Tests get it through ``new_harness`` or the ``make_session`` fixture (conftest.py). The harness keeps a shadow copy of every
message the conversation ever appended, so tests can prove the transcript lost nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memagent.agent.feature import BaseFeature
from memagent.agent.loop import Agent
from memagent.config import Settings
from memagent.context.compaction import CompactingContext
from memagent.context.conversation import Conversation
from memagent.context.oversize import AttachmentShelf
from memagent.context.policy import CompactionRequest
from memagent.context.summary import SUMMARY_SYSTEM
from memagent.context.transcript import TranscriptWriter, read_records
from memagent.events import Notice, TurnEnded
from memagent.features.context import context_tools
from memagent.llm.invariants import request_problems
from memagent.llm.items import Injected
from memagent.llm.scripted import FunctionModel, reply
from memagent.llm.tokens import lazy_counter
from memagent.llm.types import ModelError, ModelRequest, ModelResponse, text_block
from memagent.markers import Marker
from memagent.tools.base import ToolContext, ToolError, ToolInput, ToolRegistry, tool

SMALL = "small-model"
SYSTEM = [text_block("You are a test agent.")]


class ReminderFeature(BaseFeature):
    """A test feature whose only hook is a reminder after each tool round."""

    def __init__(self, reminder: Callable[[list[str]], str | None]) -> None:
        self.reminder = reminder

    def after_tools(self, names: list[str]) -> Injected | None:
        text = self.reminder(names)
        return Injected(Marker.REMINDER, text) if text else None


class RecordingConversation(Conversation):
    """A Conversation that also remembers every message it was ever given (the ground truth)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.appended: list[dict[str, Any]] = []

    def append(self, role, content, usage=None, **kwargs):  # type: ignore[override]
        self.appended.append({"role": role, "content": copy.deepcopy(kwargs.get("whole") or content)})
        return super().append(role, content, usage, **kwargs)


class ReadInput(ToolInput):
    path: str


class BashInput(ToolInput):
    command: str


def file_text(path: str, size: int) -> str:
    """Deterministic, distinct content for a fake file."""
    line = f"# {path}: line of code that does something useful\n"
    body = (line * (size // len(line) + 1))[:size]
    return f"FILE {path}\n{body}"


def fake_tools(sizes: dict[str, int] | None = None) -> list:
    sizes = sizes if sizes is not None else {}

    @tool("read_file", ReadInput, key_argument="path")
    def read_file(args: ReadInput, ctx: ToolContext) -> str:
        """Read a file."""
        if args.path.startswith("missing"):
            raise ToolError(f"{args.path} does not exist")
        if args.path.startswith("cancel"):
            raise KeyboardInterrupt
        return file_text(args.path, sizes.get(args.path, 2_000))

    @tool("bash", BashInput, key_argument="command")
    def bash(args: BashInput, ctx: ToolContext) -> str:
        """Run a command."""
        return f"$ {args.command}\n" + ("ok\n" * 5)

    return [read_file, bash]


@dataclass
class Harness:
    root: Path
    session_id: str
    settings: Settings
    brain: Callable[[ModelRequest], ModelResponse]
    reinject: list = field(default_factory=list)
    before_drop: list = field(default_factory=list)
    summary: Callable[[ModelRequest], ModelResponse] | None = None
    sizes: dict[str, int] = field(default_factory=dict)
    reminders: list = field(default_factory=list)
    shelf: bool = False  # oversized text goes to .transcripts/<session>/attachments (as in a real session)

    def __post_init__(self) -> None:
        self.transcripts = self.root / ".transcripts"
        self.model = FunctionModel(self._answer)
        self.writer = TranscriptWriter.open(self.transcripts, self.session_id)
        self.writer.append({"type": "session_start", "session_id": self.session_id, "model": "main-model"})
        self.conversation = RecordingConversation(recorder=self.writer, session_id=self.session_id)
        tools = fake_tools(self.sizes)
        requests = CompactionRequest()
        tools += context_tools(requests, self.transcripts, self.session_id)
        registry = ToolRegistry.of(tools)
        self.policy = CompactingContext(
            model=self.model,
            settings=self.settings,
            session_id=self.session_id,
            transcript_name=f".transcripts/{self.session_id}.jsonl",
            system=SYSTEM,
            tools=registry.schemas(),
            reinject=self.reinject,
            before_drop=self.before_drop,
            requests=requests,
            shelf=self._shelf() if self.shelf else None,
        )
        self.agent = Agent(
            model=self.model,
            tools=registry,
            tool_context=ToolContext(root=self.root, session_id=self.session_id),
            system=SYSTEM,
            conversation=self.conversation,
            context=self.policy,
            auto_approve=True,
            features=[ReminderFeature(reminder) for reminder in self.reminders],
        )
        self.events: list[Any] = []

    def _shelf(self) -> AttachmentShelf:
        folder = self.transcripts / self.session_id / "attachments"
        return AttachmentShelf(
            folder,
            f".transcripts/{self.session_id}/attachments",
            self.settings.inline_limit_tokens,
            lazy_counter(self.settings.tokenizer),
        )

    def _answer(self, request: ModelRequest) -> ModelResponse:
        if request.system and request.system[0].get("text") == SUMMARY_SYSTEM:
            if self.summary is not None:
                return self.summary(request)
            return reply("## Goal\nthe summary of the dropped part")
        return self.brain(request)

    def turn(self, text: str) -> TurnEnded:
        events = list(self.agent.run_turn(text))
        self.events += events
        ended = [e for e in events if isinstance(e, TurnEnded)]
        assert len(ended) == 1
        return ended[0]

    def notices(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice)]

    def main_requests(self) -> list[ModelRequest]:
        return [r for r in self.model.requests if not _is_summary(r)]

    def summary_requests(self) -> list[ModelRequest]:
        return [r for r in self.model.requests if _is_summary(r)]

    def assert_requests_valid(self) -> None:
        for number, request in enumerate(self.model.requests):
            problems = request_problems(request.messages)
            assert problems == [], f"request {number}: {problems}"

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.writer.path).records

    def transcript_messages(self) -> list[dict[str, Any]]:
        return [{"role": r["role"], "content": r["content"]} for r in self.records() if r["type"] == "message"]


def _is_summary(request: ModelRequest) -> bool:
    return bool(request.system) and request.system[0].get("text") == SUMMARY_SYSTEM


def settings_for(threshold: int, **kwargs: Any) -> Settings:
    """The harness compacts at the threshold while the turn waits (``compaction_background`` off),
    so a test knows which request a compaction comes before; the background path has its own tests."""
    kwargs.setdefault("compaction_background", False)
    return Settings(compact_tokens=threshold, small_model=SMALL, **kwargs)


def new_harness(
    root: Path,
    brain: Callable[[ModelRequest], ModelResponse],
    *,
    threshold: int = 4_000,
    session_id: str = "20261121-100000-aaaa",
    **kwargs: Any,
) -> Harness:
    settings = kwargs.pop("settings", None) or settings_for(threshold)
    return Harness(root=root, session_id=session_id, settings=settings, brain=brain, **kwargs)


def failing_summary(request: ModelRequest) -> ModelResponse:
    raise ModelError("summary model overloaded")


class PlannedBrain:
    """Answers main-model requests from a queue; an Exception in the queue is raised; empty → "done"."""

    def __init__(self) -> None:
        self.queue: list[ModelResponse | BaseException] = []

    def add(self, *items: ModelResponse | BaseException) -> PlannedBrain:
        self.queue.extend(items)
        return self

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if not self.queue:
            return reply("done")
        item = self.queue.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item
