"""The live message list of a session, mirrored to its transcript as it grows."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from memagent.context.transcript import TranscriptWriter
from memagent.llm.types import Block, Message


@dataclass
class Conversation:
    """Working memory: the messages the next request is built from.

    ``append`` records each message in the transcript before it joins the list, so what the
    model saw is always on disk first. Two user messages in a row (after a cancelled turn) are
    merged in memory; the transcript keeps both records and resume merges them the same way.
    """

    messages: list[Message] = field(default_factory=list)
    recorder: TranscriptWriter | None = None
    session_id: str = ""
    # transcript message id of each entry in ``messages`` (merged messages keep the first id)
    ids: list[str] = field(default_factory=list)

    def append(self, role: str, content: list[Block], usage: dict[str, int] | None = None) -> str:
        message = {"role": role, "content": copy.deepcopy(content)}
        message_id = self.recorder.message(message, usage=usage) if self.recorder else str(len(self.ids) + 1)
        if self.messages and self.messages[-1]["role"] == role:
            self.messages[-1] = {"role": role, "content": self.messages[-1]["content"] + message["content"]}
        else:
            self.messages.append(message)
            self.ids.append(message_id)
        return message_id

    def record(self, record: dict[str, Any]) -> None:
        """A non-message record (todo, compaction, extraction) — transcript only."""
        if self.recorder:
            self.recorder.append(record)

    def replace(self, messages: list[Message], ids: list[str]) -> None:
        """Swap in a compacted history. The transcript is never touched."""
        self.messages = messages
        self.ids = ids

    @property
    def last_role(self) -> str | None:
        return self.messages[-1]["role"] if self.messages else None
