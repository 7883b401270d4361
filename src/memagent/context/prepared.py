"""Background compaction: the summary written before it is needed.

When the context passes :data:`PREPARE_FRACTION` of the compaction threshold, the policy
(:mod:`memagent.context.compaction`) chooses the cut as it would at the threshold and starts a
:class:`Preparation`: one worker thread asks the summary model for the summary of the part before
the cut while the session goes on. At the threshold the prepared summary replaces that part, and
everything after the cut (including what arrived meanwhile) is kept verbatim. The turn never waits
for the summary unless the context is full (the request would not fit the model's window).

A preparation belongs to the exact messages it summarises: it is used only while they are still
the start of the conversation (same transcript ids, same message objects). A rewind, a manual
compaction or a resumed conversation makes it stale, and it is dropped unused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memagent.context.conversation import Conversation
from memagent.context.digest import deterministic_digest
from memagent.llm.types import Message

PREPARE_FRACTION = 0.75  # of the compaction threshold: start writing the summary in the background

# (summary, the model that wrote it or None for the rule-based digest, why it fell back)
Summary = tuple[str, "str | None", "str | None"]


@dataclass
class Preparation:
    """A summary of ``dropped`` (the first messages of the conversation) being written."""

    dropped: list[Message]
    dropped_ids: tuple[str, ...]
    started: float = field(default_factory=time.monotonic)
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _summary: Summary | None = field(default=None, repr=False)
    finished: float | None = None

    @property
    def cut(self) -> int:
        return len(self.dropped_ids)

    def ready(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def summary(self) -> Summary:
        """The result; only once :meth:`ready`."""
        if self._summary is None:
            raise RuntimeError("the summary is not ready")
        return self._summary

    def matches(self, conversation: Conversation) -> bool:
        """Are the summarised messages still the start of ``conversation``, with more after them?"""
        count = self.cut
        messages, ids = conversation.messages, conversation.ids
        if len(messages) <= count or tuple(ids[:count]) != self.dropped_ids:
            return False
        return all(current is summarised for current, summarised in zip(messages[:count], self.dropped))

    def _finish(self, summary: Summary) -> None:
        self._summary = summary
        self.finished = time.monotonic()
        self._done.set()


def start_preparation(
    dropped: Sequence[Message], dropped_ids: Sequence[str], write: Callable[[list[Message]], Summary]
) -> Preparation:
    """Start writing the summary of ``dropped`` in a daemon thread (a session that ends meanwhile
    does not wait for it); ``write`` never fails: anything it raises becomes the rule-based digest."""
    preparation = Preparation(list(dropped), tuple(dropped_ids))

    def run() -> None:
        try:
            summary = write(list(preparation.dropped))
        except Exception as exc:  # the summary call's own fallbacks failed too: condense by rule
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            summary = (deterministic_digest(preparation.dropped, reason), None, reason)
        preparation._finish(summary)

    threading.Thread(target=run, name="memagent-summary", daemon=True).start()
    return preparation


__all__ = ["PREPARE_FRACTION", "Preparation", "Summary", "start_preparation"]
