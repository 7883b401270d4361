"""An open session, and the protocol a front end drives it with.

A front end sends :mod:`memagent.protocol` operations with :meth:`Session.submit` and reads what
follows from :meth:`Session.events` (a turn's events, approval questions, what an operation
did); :meth:`Session.status` is the typed view a status line reads. :func:`memagent.runtime.open_session`
builds one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from memagent.agent.feature import Feature
from memagent.agent.loop import Agent
from memagent.channel import Channel, ChannelError
from memagent.checkpoints import CheckpointError, Restored
from memagent.claude_settings import ClaudeSettings
from memagent.config import ProjectPaths, Settings
from memagent.context.compaction import CompactingContext
from memagent.context.policy import ContextReport, PassThroughContext
from memagent.context.resume import fit_rebuilt
from memagent.context.rewind import RewindError, TurnPoint
from memagent.context.transcript import TranscriptWriter
from memagent.errors import one_line
from memagent.events import AgentEvent
from memagent.features.checkpoints import (
    CheckpointFeature,
    RewindPlan,
    plan_rewind,
    read_turns,
    record_for,
    restore_code,
)
from memagent.features.memory import MemoryFeature
from memagent.features.usage import UsageFeature
from memagent.llm.metered import meter_of
from memagent.llm.types import Message
from memagent.permissions import MODES
from memagent.pricing import UsageMeter
from memagent.protocol import (
    AnswerApproval,
    Cancel,
    Compact,
    Op,
    OpCompleted,
    OpRejected,
    PermissionsView,
    SessionEvent,
    SessionStatus,
    SetModel,
    SetPermissionMode,
    Submit,
)
from memagent.todo import TodoManager

F = TypeVar("F", bound=Feature)


@runtime_checkable
class ReportingContext(Protocol):
    """A context policy that can say what the next request carries (``/context``)."""

    def report(self) -> ContextReport: ...


@runtime_checkable
class Preparable(Protocol):
    """A model that can build its client ahead of the first call (the SDK imported, the pool made)."""

    def prepare(self) -> None: ...


@dataclass
class Session:
    """Everything a renderer needs to drive one session."""

    agent: Agent
    paths: ProjectPaths
    settings: Settings
    session_id: str
    transcript: TranscriptWriter
    todo: TodoManager
    features: list[Feature]
    memory_off_reason: str | None = None
    resumed_from: str | None = None
    warnings: list[str] = field(default_factory=list)
    trusted: bool = False  # the user trusts this project (its files may widen what memagent does)
    claude: ClaudeSettings = field(default_factory=ClaudeSettings)  # what Claude Code's settings files gave
    resume_note: str | None = None  # which session -c chose and why, for the user
    logical_session_id: str = ""  # one id across -c/-r (see logical_session_id()); headless output reports it
    channel: Channel = field(default_factory=Channel)  # the protocol's queue (memagent.protocol)

    def submit(self, op: Op) -> None:
        """Carry out a protocol operation; :meth:`events` then tells what followed (OpCompleted or
        OpRejected; a Submit's turn emits its own events)."""
        try:
            text = self._carry_out(op)
        except (ChannelError, RewindError, CheckpointError, ValueError) as exc:
            self.channel.emit(OpRejected(op, one_line(exc)))
            return
        if text is not None:
            self.channel.emit(OpCompleted(op, text))

    def submit_turn(self, text: str, turn: Callable[[], Iterator[AgentEvent]]) -> None:
        """Start a turn the front end composed itself — a prompt command: its ``!`cmd``` snippets
        through the gate, then its message — on the channel, exactly as a :class:`Submit` of
        ``text`` would run (OpRejected while a turn runs)."""
        try:
            self.channel.start(turn, on_end=self.agent.forget_cancel)
        except ChannelError as exc:
            self.channel.emit(OpRejected(Submit(text), one_line(exc)))

    def events(self, timeout: float | None = None) -> Iterator[SessionEvent]:
        """The events emitted since the last read, until the session is idle (see
        :meth:`memagent.channel.Channel.events`)."""
        return self.channel.events(timeout)

    def _carry_out(self, op: Op) -> str | None:
        if isinstance(op, Submit):
            self.channel.start(lambda: self.agent.run_turn(op.text), on_end=self.agent.forget_cancel)
            return None
        if isinstance(op, AnswerApproval):
            self.channel.answer(op)
            return None
        if isinstance(op, Cancel):
            self.channel.cancel(self.agent.cancel)
            return None
        if self.channel.busy:
            raise ChannelError("a turn is running; wait for it to end or cancel it")
        if isinstance(op, SetModel):
            return self._set_model(op.model)
        if isinstance(op, SetPermissionMode):
            return self._set_mode(op.mode)
        if isinstance(op, Compact):
            return self._compact(op.focus)
        self.rewind(self.plan_rewind(op.turn), code=op.code, conversation=op.conversation, forget=list(op.forget))
        return f"rewound to the start of turn {op.turn}"

    def _set_model(self, name: str) -> str:
        if not name or len(name.split()) != 1:
            raise ValueError(f"not a model id: {name!r}")
        before = self.status().model
        self.agent.config.model = name
        return f"model: {before} → {name}"

    def _set_mode(self, mode: str) -> str:
        if mode not in MODES:
            raise ValueError(f"unknown permission mode {mode!r}; use one of: {', '.join(MODES)}")
        gate = self.agent.gate
        before = gate.mode
        gate.policy = gate.policy.with_mode(mode)  # leaving bypassPermissions ends --yes too
        return f"permission mode: {before} → {mode}"

    def _compact(self, focus: str | None) -> str:
        if isinstance(self.agent.context, PassThroughContext):
            raise ValueError("this session does not compact its context")
        if not self.agent.conversation.messages:
            return "Nothing to compact yet."
        for event in self.agent.context.force_compact(self.agent.conversation, focus):
            self.channel.emit(event)
        return "Compacted."

    def status(self) -> SessionStatus:
        """The session as a status line shows it: model, mode, context used, cost."""
        agent, meter, context = self.agent, self.usage, self.agent.context
        threshold = 0
        used = meter.context_tokens if meter is not None else 0
        if isinstance(context, CompactingContext):
            threshold = context.threshold
            if meter is not None and meter.calls:
                try:
                    used = context.current_tokens(agent.conversation)
                except Exception:  # a status read never fails: the last response's figure stands
                    pass
        return SessionStatus(
            session_id=self.session_id,
            model=agent.config.model or agent.model.name,
            permission_mode=agent.gate.mode,
            context_tokens=used,
            compaction_threshold=threshold,
            cost=meter.cost if meter is not None else None,
            turns=agent.turns,
            busy=self.channel.busy,
            can_compact=not isinstance(context, PassThroughContext),
        )

    def usage_totals(self) -> UsageMeter | None:
        """A copy of the session's usage so far (safe to read while a background call runs)."""
        metered = meter_of(self.agent.model)
        return metered.snapshot() if metered is not None else self.usage

    def history(self) -> list[Message]:
        """The conversation's messages as they stand (a copy: the list may grow meanwhile)."""
        return list(self.agent.conversation.messages)

    def prepare_model(self) -> None:
        """Build the model client now, off the first turn's critical path (when the model can)."""
        metered = meter_of(self.agent.model)
        model = metered.inner if metered is not None else self.agent.model  # the adapter's own method
        if isinstance(model, Preparable):
            model.prepare()

    def tool_names(self) -> list[str]:
        """The tools the model is offered, in the order it sees them."""
        return self.agent.tools.names()

    def feature(self, kind: type[F]) -> F | None:
        """The session's feature of that class, if it has one."""
        return next((f for f in self.features if isinstance(f, kind)), None)

    def context_report(self) -> ContextReport | None:
        """What the next request carries, part by part (None: no context policy reports it)."""
        context = self.agent.context
        if isinstance(context, PassThroughContext) or not isinstance(context, ReportingContext):
            return None
        return context.report()

    def permissions(self) -> PermissionsView:
        """The gate's mode and rules, and where the mode came from."""
        gate = self.agent.gate
        source = self.claude.default_mode
        return PermissionsView(
            mode=gate.mode,
            rules=tuple(gate.describe()),
            asks_for=tuple(gate.policy.asks_for()),
            mode_source=f"{source[1]} (defaultMode: {source[0]})"
            if source is not None and source[0] == gate.mode
            else "",
        )

    @property
    def usage(self) -> UsageMeter | None:
        """Tokens and estimated cost of every model call (turns, summaries, memory extraction),
        by the metered model (:class:`memagent.llm.metered.MeteredModel`), else by the usage feature."""
        metered = meter_of(self.agent.model)
        if metered is not None:
            return metered.meter
        return next((f.meter for f in self.features if isinstance(f, UsageFeature)), None)

    @property
    def memory_feature(self) -> MemoryFeature | None:
        return self.feature(MemoryFeature)

    @property
    def memory(self):  # -> MemoryService | None (typed lazily: the store is optional)
        feature = self.memory_feature
        return feature.service if feature is not None else None

    @property
    def learner(self):  # -> BackgroundLearner | None
        feature = self.memory_feature
        return feature.learner if feature is not None else None

    @property
    def checkpoints(self) -> CheckpointFeature | None:
        return self.feature(CheckpointFeature)

    def rewind_points(self) -> list[TurnPoint]:
        """The user turns ``/rewind`` can go back to (an empty list before the first one)."""
        if self.checkpoints is not None:
            self.checkpoints.wait()
        if not self.transcript.path.exists():
            return []
        return read_turns(self.transcript.path)[0]

    def plan_rewind(self, turn: int) -> RewindPlan:
        """Where ``/rewind turn`` would go (between turns only); RewindError when it cannot."""
        if self.checkpoints is not None:
            self.checkpoints.wait()
        if self.transcript.pending:
            raise RewindError("the transcript is not fully written yet (see the warning above); try again later")
        return plan_rewind(self.transcript.path, turn)

    def rewind(
        self, plan: RewindPlan, *, code: bool = True, conversation: bool = True, forget: list[str] | None = None
    ) -> Restored | None:
        """Carry out a plan: files back as the turn's checkpoint recorded them (``code``), the
        conversation back to before the turn's message (``conversation``), the memory cards
        ``forget`` names erased. Raises CheckpointError when the files cannot be restored
        (nothing is changed then)."""
        checkpoints = self.checkpoints
        restored = restore_code(checkpoints.repo if checkpoints else None, plan) if code else None
        forgotten: list[str] = []
        if forget and self.memory is not None:
            forgotten = list(self.memory.forget_report(forget).erased)
        record = record_for(plan, code=code, conversation=conversation, restored=restored, forgotten=forgotten)
        if conversation:
            shelf = getattr(self.agent.context, "shelf", None)  # a text sent as a preview goes back as one
            messages = fit_rebuilt(plan.history.messages, plan.history.ids, plan.records, shelf)
            self.agent.rewind(record, messages, plan.history.ids, plan.point.number - 1, plan.records)
        else:
            self.agent.conversation.record(record)
        return restored

    def close(self) -> list[str]:
        """End the session: every feature closes (memory learns from what was not mined yet,
        with a bounded wait), then the transcript. Returns the warnings raised while closing
        (e.g. transcript records that could not be written). Safe to call twice."""
        already = len(self.warnings)
        features, self.features = self.features, []
        for feature in reversed(features):
            try:
                feature.close()
            except Exception as exc:  # closing must never mask the real exit
                self.warnings.append(f"while closing {feature.name}: {one_line(exc)}")
        try:
            self.transcript.close()
        except Exception as exc:
            self.warnings.append(f"while closing the transcript: {one_line(exc)}")
        if self.transcript.failure:
            self.warnings.append(self.transcript.failure)
            self.transcript.failure = None
        return self.warnings[already:]


__all__ = ["Session"]
