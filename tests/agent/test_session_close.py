"""Closing a session: the last memory extraction may be skipped, nothing else is."""

from __future__ import annotations

from memagent.config import Settings
from memagent.features.memory import MemoryFeature
from memagent.llm.scripted import ScriptedModel, reply
from memagent.runtime import SessionOptions, open_session


class ImpatientLearner:
    """A learner whose final wait is interrupted by Ctrl-C."""

    def __init__(self):
        self.submitted = []
        self.failed_attempts, self.reports, self.failures = 0, [], []  # nothing failed before the Ctrl-C
        self.pipeline = type("Pipeline", (), {"processed_ids": frozenset()})()

    def submit(self, messages, ids, reason):
        self.submitted.append(reason)
        return True

    def close(self, timeout):
        raise KeyboardInterrupt


class ClosableService:
    closed = False

    def close(self):
        self.closed = True


def test_ctrl_c_while_waiting_for_extraction_still_closes_everything(tmp_path):
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("hi")]))
    list(session.agent.run_turn("remember that we always deploy from the main branch"))
    learner, service = ImpatientLearner(), ClosableService()
    memory = MemoryFeature(
        service,
        learner,
        settings=Settings(),
        profile=lambda: None,
        current_task=lambda: None,
        warn=session.warnings.append,
    )
    memory.after_turn(session.agent.conversation)
    session.features.append(memory)
    warnings = session.close()
    assert learner.submitted == ["session_end"]
    assert service.closed  # the store was closed although the wait was cut short
    assert warnings == ["memory extraction at session end skipped (interrupted)"]
    assert session.transcript._closed  # the transcript was still flushed and closed
    assert session.close() == []  # a second close is a no-op
