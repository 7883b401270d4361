"""Context tools as a feature: ``compact`` (layer-3 compaction, asked through the shared
:class:`~memagent.context.policy.CompactionRequest`) and ``recall`` (exact earlier outputs and
searches over the append-only transcripts)."""

from __future__ import annotations

from pathlib import Path

from memagent.agent.feature import BaseFeature
from memagent.context.policy import CompactionRequest
from memagent.tools.base import Tool
from memagent.tools.context_tools import context_tools


class ContextToolsFeature(BaseFeature):
    name = "context"

    def __init__(self, requests: CompactionRequest, transcripts_dir: Path, session_id: str) -> None:
        self.requests = requests
        self.transcripts_dir = transcripts_dir
        self.session_id = session_id

    def tools(self) -> list[Tool]:
        return context_tools(self.requests, self.transcripts_dir, self.session_id)
