"""Learning: extraction → screening → consolidation → store, in the background.

:class:`LearningPipeline` processes one slice of messages synchronously; :class:`BackgroundLearner`
runs it on a worker thread so that a reply is never delayed.

Each message is processed at most once. The pipeline keeps the set of message ids it has
mined (and claims ids while a run is in flight, so two overlapping triggers never mine the same
message); after a successful run it calls ``record({"type": "extraction", "ids": [...], ...})``
so the caller can write that to the transcript; :func:`processed_ids_from_records` rebuilds the
set from a transcript, and :func:`processed_ids_after_resume` maps it onto the new ids a resumed
session gives the messages it carries over.

Triggers (wired by the agent runtime), all off when ``settings.auto_extract`` is false (the
:class:`BackgroundLearner` then accepts nothing):
- every ``settings.extract_every_turns`` user turns: :func:`should_extract`;
- before a compaction drops messages: :func:`before_drop_hook` (exactly the dropped messages);
- at session end (``/exit``, end of ``-p``): submit everything, then ``drain(timeout)``;
- explicit "remember that…" goes through the ``memory_save`` tool, not through here.

Failures (model errors, a store that went away) are logged in ``warnings`` and retried once by
the background learner; they never reach the session.

``require_review`` (setting, default off): automatic cards are written with status
``archived`` and a ``pending`` history record; ``memagent memory review`` activates (keep/edit)
or forgets them. Corrections held for review replace their target only when approved.
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from memagent.jsontypes import JsonMapping, JsonObject, json_list
from memagent.llm.items import texts
from memagent.llm.types import ModelRequest, ResponseComplete, text_block, user_message
from memagent.memory.consolidation import Consolidator, Decision
from memagent.memory.extraction import (
    EXTRACTION_SYSTEM,
    SLICE_TOKENS,
    extraction_prompt,
    parse_extraction,
    render_messages,
    split_slice,
)
from memagent.memory.learning_history import LearningHistory, learning_stats
from memagent.memory.screening import Candidate, screen
from memagent.memory.steering import Steering, latest_summary

if TYPE_CHECKING:
    from memagent.config import ProjectPaths, Settings
    from memagent.llm.protocol import ChatModel
    from memagent.llm.types import Message
    from memagent.memory.service import MemoryService

log = logging.getLogger("memagent.memory.learning")

EXTRACTION_MAX_TOKENS = 2000
CONSOLIDATION_MAX_TOKENS = 800
EXTRACTION_RECORD = "extraction"


class LearningError(Exception):
    """A learning run failed (model or store); ``str()`` is a one-line reason. ``retry``: worth
    trying the same slice again at once (a model or store error), unlike an answer that was
    unusable twice in a row. ``report`` is what the failed run did."""

    def __init__(self, message: str, *, retry: bool = True, report: LearningReport | None = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.report = report


@dataclass
class LearningReport:
    """What one run did."""

    reason: str
    message_ids: list[str] = field(default_factory=list)
    candidates: int = 0
    decisions: list[Decision] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (item, why) never stored
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    consolidation_calls: int = 0
    consolidation_failures: int = 0  # consolidation answers that were unusable twice
    error: str | None = None
    session_id: str | None = None  # set by a catch-up: the earlier session mined

    @property
    def stored(self) -> list[str]:
        return [d.card_id for d in self.decisions if d.stored and d.card_id]

    def count(self, action: str) -> int:
        return sum(1 for d in self.decisions if d.action == action)

    def summary(self) -> str:
        """One line for the UI, e.g. ``learned 2 memories (1 update), 1 already known``."""
        if self.error:
            return f"memory learning failed: {self.error}"
        if self.consolidation_failures:
            return f"memory consolidation failed: {self.consolidation_failures} unusable answer(s)"
        new = len(self.stored)
        parts = [f"learned {new} memor{'y' if new == 1 else 'ies'}"]
        details = [f"{self.count(a)} {a.lower()}" for a in ("UPDATE", "CONTRADICT") if self.count(a)]
        if details:
            parts[0] += f" ({', '.join(details)})"
        known = self.count("NOOP") + self.count("DUPLICATE")
        if known:
            parts.append(f"{known} already known")
        if self.count("REFUSED"):
            parts.append(f"{self.count('REFUSED')} refused by the gate")
        return ", ".join(parts)


def processed_ids_from_records(records: Iterable[JsonMapping]) -> set[str]:
    """Message ids already mined, from a transcript's ``extraction`` records (for resume)."""
    done: set[str] = set()
    for record in records:
        if isinstance(record, dict) and record.get("type") == EXTRACTION_RECORD:
            done.update(str(i) for i in json_list(record.get("ids")))
    return done


def processed_ids_after_resume(
    old_records: Iterable[JsonMapping], old_ids: Sequence[str], new_ids: Sequence[str]
) -> set[str]:
    """Resume re-records the kept messages in the new session's transcript under new ids
    (``Resumed.ids`` → ``Conversation.ids``): carry the "already mined" mark across, pairwise."""
    done = processed_ids_from_records(old_records)
    return {str(new) for old, new in zip(old_ids, new_ids) if str(old) in done}


def auto_extract_enabled(settings: Settings | None) -> bool:
    """``settings.auto_extract`` (default on): false switches every automatic trigger off —
    periodic, before a compaction and at session end."""
    return bool(getattr(settings, "auto_extract", True))


def should_extract(turns_since_last: int, settings: Settings | None) -> bool:
    """The every-N-user-turns trigger; ``extract_every_turns`` ≤ 0 turns it off, and so does
    ``auto_extract = false``."""
    every = int(getattr(settings, "extract_every_turns", 10) or 0)
    return auto_extract_enabled(settings) and every > 0 and turns_since_last >= every


def is_user_turn(message: JsonMapping) -> bool:
    """A user message typed by the user (not only tool results)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(text.strip() for text in texts({"content": content}))


def _today() -> date:
    return datetime.now(UTC).date()


ServiceGetter = Callable[[], "MemoryService | None"]  # the open service, or None when memory is off


def _service_getter(service: MemoryService | ServiceGetter | None) -> ServiceGetter:
    """A getter for the service: a service (or ``None``) given as it is, or the getter given."""
    if service is None or not callable(service):
        return lambda: service
    return service


class LearningPipeline:
    """Extract memories from a slice of messages and consolidate them into the store.

    ``service`` is a :class:`~memagent.memory.service.MemoryService` or a callable returning one
    (or ``None`` when memory is off). ``record`` receives the transcript record of each
    successful run; it is called from the thread that runs :meth:`process`. ``count_tokens``
    estimates the tokens of a rendered slice for chunking (``llm.tokens.text_counter`` of the
    settings; default: the default chain).
    """

    def __init__(
        self,
        model: ChatModel,
        service: MemoryService | ServiceGetter | None,
        *,
        session_id: str,
        session_date: date | None = None,
        settings: Settings | None = None,
        history: LearningHistory | None = None,
        record: Callable[[JsonObject], None] | None = None,
        processed_ids: Iterable[str] = (),
        task_hint: Callable[[], str | None] | None = None,
        require_review: bool | None = None,
        slice_tokens: int = SLICE_TOKENS,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        self.model = model
        self._service = _service_getter(service)
        self.session_id = session_id
        self.session_date = session_date or _today()
        self.settings = settings
        self.history = history
        self.record = record
        self.task_hint = task_hint
        if require_review is None:
            require_review = bool(getattr(settings, "require_review", False))
        self.require_review = require_review
        self.slice_tokens = slice_tokens
        self.count_tokens = count_tokens  # the session's text counter; None: the default offline estimate
        self._processed: set[str] = {str(i) for i in processed_ids}
        self._claimed: set[str] = set()
        self._lock = threading.Lock()

    @property
    def processed_ids(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._processed)

    @property
    def model_name(self) -> str | None:
        return getattr(self.settings, "small_model", None)

    # -- claiming ---------------------------------------------------------------------------

    def _claim(self, messages: Sequence[JsonMapping], ids: Sequence[str]) -> tuple[list[JsonMapping], list[str]]:
        chosen: list[JsonMapping] = []
        chosen_ids: list[str] = []
        with self._lock:
            for message, message_id in zip(messages, ids):
                key = str(message_id)
                if key in self._processed or key in self._claimed or key in chosen_ids:
                    continue
                chosen.append(message)
                chosen_ids.append(key)
            self._claimed.update(chosen_ids)
        return chosen, chosen_ids

    def _release(self, ids: Sequence[str], done: bool) -> None:
        with self._lock:
            self._claimed.difference_update(ids)
            if done:
                self._processed.update(ids)

    # -- the run ----------------------------------------------------------------------------

    def process(
        self,
        messages: Sequence[JsonMapping],
        ids: Sequence[str],
        reason: str,
        task: str | None = None,
        summary: str | None = None,
    ) -> LearningReport:
        """Learn from the messages not yet processed. A long slice is sent in parts (each marked
        processed and recorded as it succeeds). ``task``: the task the cards are learned under
        (default: ``task_hint()`` now); ``summary``: the session's latest compaction summary, given to
        the extractor as context (``memory.steering``). Raises :class:`LearningError` on failure; the ids not
        yet done stay unprocessed so a retry can mine them."""
        chosen, chosen_ids = self._claim(messages, ids)
        report = LearningReport(reason=reason, message_ids=chosen_ids)
        if not chosen_ids:
            return report
        remaining = list(chosen_ids)
        try:
            for part, part_ids in split_slice(chosen, chosen_ids, self.slice_tokens, self.count_tokens):
                before = len(report.stored)
                self._run(part, part_ids, report, task, summary)
                self._release(part_ids, done=True)
                remaining = remaining[len(part_ids) :]
                if self.record is not None:
                    self.record(
                        {
                            "type": EXTRACTION_RECORD,
                            "ids": [*part_ids],
                            "reason": reason,
                            "stored": [*report.stored[before:]],
                        }
                    )
        except Exception as exc:  # a model or store failure of any kind: retryable, never fatal
            self._release(remaining, done=False)
            report.error = str(exc) if isinstance(exc, LearningError) else _one_line(exc)
            self._log_run(report)
            retry = exc.retry if isinstance(exc, LearningError) else True
            raise LearningError(report.error, retry=retry, report=report) from exc
        self._log_run(report)
        return report

    def _run(
        self,
        messages: list[JsonMapping],
        ids: list[str],
        report: LearningReport,
        task: str | None = None,
        summary: str | None = None,
    ) -> None:
        rendered = render_messages(messages, ids)
        if rendered.empty:
            return
        service = self._service()
        if service is None:
            raise LearningError("memory is off")
        prompt = extraction_prompt(rendered, self.session_date, Steering.of(self.settings, summary).render())
        parsed = None
        for _ in range(2):  # one retry on an unusable answer
            parsed = parse_extraction(self._ask(EXTRACTION_SYSTEM, prompt, EXTRACTION_MAX_TOKENS, report))
            if parsed.error is None:
                break
        assert parsed is not None
        if parsed.error is not None:  # a failure, counted and shown, never a run that "found nothing"
            raise LearningError(f"the extraction answer was unusable twice ({parsed.error})", retry=False)
        report.dropped.extend(("item", why) for why in parsed.dropped)
        screening = screen(parsed.memories, rendered, self.session_date)
        report.dropped.extend(screening.dropped)
        report.candidates += len(screening.candidates)
        for _, why in screening.dropped:
            self._log_dropped(why)
        if not screening.candidates:
            return
        consolidator = Consolidator(
            service=service,
            ask=lambda system, user: self._ask(system, user, CONSOLIDATION_MAX_TOKENS, report),
            session_id=self.session_id,
            task_hint=task or (self.task_hint() if self.task_hint else None),
            hold_for_review=self.require_review,
            record=self._log_decision,
        )
        report.decisions.extend(consolidator.run(screening.candidates))
        report.consolidation_calls += consolidator.model_calls
        report.consolidation_failures += consolidator.failures

    def _ask(self, system: str, prompt: str, max_tokens: int, report: LearningReport) -> str:
        request = ModelRequest(
            system=[text_block(system)],
            messages=[user_message(prompt)],
            max_tokens=max_tokens,
            model=self.model_name,
        )
        response = None
        for event in self.model.stream(request):
            if isinstance(event, ResponseComplete):
                response = event.response
        if response is None:
            raise LearningError("the model stream ended without a response")
        report.model_calls += 1
        report.input_tokens += response.usage.context_tokens
        report.output_tokens += response.usage.output_tokens
        return response.text()

    # -- history ----------------------------------------------------------------------------

    def _log_decision(self, decision: Decision) -> None:
        if self.history is None:
            return
        candidate: Candidate = decision.candidate
        record: JsonObject = {
            "kind": "decision",
            "action": decision.action,
            "card_id": decision.card_id,
            "target_id": decision.target_id,
            "reason": decision.reason,
            "session_id": self.session_id,
            "message_id": candidate.message_id,
            "source": candidate.source,
            "memory_type": candidate.memory_type,
            "scope": candidate.scope,
        }
        if decision.action != "REFUSED":  # a refusal may be a secret: its text never touches disk
            record["content"] = candidate.content
        self.history.append(record, scope=candidate.scope)
        if decision.pending and decision.card_id:
            self.history.append(
                {
                    "kind": "pending",
                    "card_id": decision.card_id,
                    "action": decision.action,
                    "target_id": decision.target_id,
                    "session_id": self.session_id,
                },
                scope=candidate.scope,
            )

    def _log_dropped(self, why: str) -> None:
        if self.history is None:
            return
        # Dropped candidates are logged without their text: an injection attempt may carry junk.
        self.history.append({"kind": "decision", "action": "DROPPED", "reason": why, "session_id": self.session_id})

    def _log_run(self, report: LearningReport) -> None:
        if self.history is None:
            return
        if not report.model_calls and report.error is None:
            return  # nothing worth a record (and no reason to create .memory/)
        counts: dict[str, int] = {}
        for decision in report.decisions:
            counts[decision.action] = counts.get(decision.action, 0) + 1
        try:
            self._append_run(report, counts)
        except OSError as exc:  # the history is a log: losing a line must not fail the run
            log.warning("cannot write the learning history: %s", exc)

    def _append_run(self, report: LearningReport, counts: dict[str, int]) -> None:
        assert self.history is not None
        self.history.append(
            {
                "kind": "run",
                "session_id": self.session_id,
                "reason": report.reason,
                "message_ids": [*report.message_ids],
                "candidates": report.candidates,
                "dropped": len(report.dropped),
                "counts": {action: n for action, n in counts.items()},
                "model_calls": report.model_calls,
                "consolidation_calls": report.consolidation_calls,
                "consolidation_failed": report.consolidation_failures,
                "input_tokens": report.input_tokens,
                "output_tokens": report.output_tokens,
                "error": report.error,
            }
        )


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


# -- the background worker ---------------------------------------------------------------------


@dataclass
class _Job:
    messages: list[JsonMapping]
    ids: list[str]
    reason: str
    task: str | None = None
    summary: str | None = None


class BackgroundLearner:
    """Runs a :class:`LearningPipeline` on one worker thread, in submission order.

    ``submit`` copies the messages and returns at once. A failed job is retried once after
    ``retry_delay`` seconds; a second failure is logged in ``warnings`` and dropped (its
    messages stay unprocessed, so the session-end run can still mine them). ``on_report`` (if
    given) is called on the worker thread with each finished :class:`LearningReport`.
    """

    def __init__(
        self,
        pipeline: LearningPipeline,
        *,
        retry_delay: float = 0.5,
        on_report: Callable[[LearningReport], None] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.retry_delay = retry_delay
        self.on_report = on_report
        self.warnings: list[str] = []
        self.reports: list[LearningReport] = []
        self.failures: list[LearningReport] = []  # jobs that failed for good (after the retry)
        self.failed_attempts = 0  # every failed run, retries included (each is a "run" in the history)
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._outstanding = 0
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, messages: Sequence[JsonMapping], ids: Sequence[str], reason: str, task: str | None = None) -> bool:
        """Queue a slice for learning (``task``: the task its cards are learned under); returns
        ``False`` when nothing in it is new, or when automatic extraction is off
        (:func:`auto_extract_enabled`)."""
        if self._closed or not auto_extract_enabled(self.pipeline.settings):
            return False
        done = self.pipeline.processed_ids
        fresh = [(m, str(i)) for m, i in zip(messages, ids) if str(i) not in done]
        if not fresh:
            return False
        job = _Job(copy.deepcopy([m for m, _ in fresh]), [i for _, i in fresh], reason, task, latest_summary(messages))
        with self._idle:
            self._outstanding += 1
        self._ensure_thread()
        self._queue.put(job)
        return True

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name="memagent-learning", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                self._run(job)
            finally:
                with self._idle:
                    self._outstanding -= 1
                    self._idle.notify_all()

    def _run(self, job: _Job) -> None:
        for attempt in (1, 2):
            try:
                report = self.pipeline.process(job.messages, job.ids, job.reason, job.task, job.summary)
            except Exception as exc:  # never let a learning failure reach the session
                message = f"memory learning ({job.reason}) failed (attempt {attempt}): {exc}"
                log.warning(message)
                self.warnings.append(message)
                self.failed_attempts += 1
                retry = getattr(exc, "retry", True)
                if attempt == 1 and retry:
                    time.sleep(self.retry_delay)
                    continue
                failed = getattr(exc, "report", None) or LearningReport(job.reason, job.ids, error=str(exc))
                self.failures.append(failed)
                return
            self.reports.append(report)
            if self.on_report is not None:
                try:
                    self.on_report(report)
                except Exception as exc:
                    self.warnings.append(f"memory learning report callback failed: {exc}")
            return

    @property
    def busy(self) -> bool:
        with self._idle:
            return self._outstanding > 0

    def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until every submitted job is done."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._idle:
            while self._outstanding > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout: float = 10.0) -> bool:
        """Drain, then stop the worker. Returns whether everything finished in time."""
        finished = self.drain(timeout)
        self._closed = True
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            if finished:
                self._thread.join(timeout=1.0)
        return finished


def before_drop_hook(learner: BackgroundLearner) -> Callable[[list[Message], list[str]], None]:
    """A ``CompactingContext(before_drop=[...])`` hook: learn from exactly the dropped messages."""

    def hook(messages: list[Message], ids: list[str]) -> None:
        learner.submit(messages, ids, "compaction")

    return hook


def on_forget(paths: ProjectPaths, card_ids: Iterable[str]) -> None:
    """What ``forget`` must also do: erase the cards' text from the learning history and drop
    cached profiles (they may quote the cards)."""
    from memagent.memory.profiles import invalidate_profiles

    ids = list(card_ids)
    LearningHistory.for_paths(paths).erase(ids)
    invalidate_profiles(paths)


__all__ = [
    "BackgroundLearner",
    "EXTRACTION_RECORD",
    "auto_extract_enabled",
    "LearningError",
    "LearningPipeline",
    "LearningReport",
    "before_drop_hook",
    "is_user_turn",
    "learning_stats",
    "on_forget",
    "processed_ids_after_resume",
    "processed_ids_from_records",
    "should_extract",
]
