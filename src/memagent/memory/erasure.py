"""Forgetting: a card's file, its catalog row and every byte of its vector leave the store.

What a forget cannot reach is said, never hidden: a card file that git tracks is still in the
repository's history (:func:`git_tracked` tells, and the CLI explains how to purge it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from memagent.gitsafe import GitError, run_git
from memagent.memory.cards import SCOPES, MemoryCard
from memagent.memory.injection import Injection
from memagent.memory.storage import Store


@dataclass
class ForgetReport:
    erased: list[str] = field(default_factory=list)
    tracked: list[Path] = field(default_factory=list)  # erased files git still has in its history

    def __int__(self) -> int:
        return len(self.erased)


def git_tracked(paths: list[Path]) -> list[Path]:
    """Which of these files git tracks (or tracked: they are in the index or in HEAD)."""
    if not paths:
        return []
    root = paths[0].parent
    try:  # the repository's own git programs (fsmonitor, hooks, filters) must not run
        result = run_git(["ls-files", "--full-name", "--", *[str(p) for p in paths]], root)
    except GitError:
        return []
    if result.returncode != 0:
        return []
    names = {line.strip() for line in result.stdout.splitlines() if line.strip()}
    return [p for p in paths if any(str(p).endswith(n) for n in names)]


class Erasure(Injection):
    """The forgetting part of the service (see the module docstring)."""

    def forget(self, memory_ids: Iterable[str]) -> int:
        """Erase cards (and the older versions they superseded); returns how many were erased."""
        return len(self.forget_report(memory_ids).erased)

    def forget_report(self, memory_ids: Iterable[str]) -> ForgetReport:
        with self._lock, self._guard("forget"):
            targets: dict[str, set[str]] = {}
            for memory_id in dict.fromkeys(memory_ids):
                for card in self._with_predecessors(memory_id):
                    store = self._locate(card.id)
                    if store is not None:
                        targets.setdefault(store.label, set()).add(card.id)
            return self._erase(targets)

    def _with_predecessors(self, memory_id: str) -> list[MemoryCard]:
        out: list[MemoryCard] = []
        cursor = self._get_many([memory_id]).get(memory_id)
        seen: set[str] = set()
        while cursor is not None and cursor.id not in seen:
            out.append(cursor)
            seen.add(cursor.id)
            cursor = self._get_many([cursor.supersedes]).get(cursor.supersedes) if cursor.supersedes else None
        return out

    def forget_scope(self, scope: str, session_id: str | None = None) -> int:
        """Erase every card of ``scope`` (for ``session``, of one session when given)."""
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
        where, args = "scope = ?", [scope]
        if session_id is not None:
            where += " AND scope_id = ?"
            args.append(session_id)
        return len(self.forget_where(where, args).erased)

    def forget_session(self, session_id: str) -> ForgetReport:
        """Erase what one session taught (cards whose provenance names it)."""
        return self.forget_where("session = ?", [session_id])

    def forget_source(self, source: str) -> ForgetReport:
        """Erase every card from one source (user, assistant, tool, system)."""
        return self.forget_where("source = ?", [source])

    def forget_all(self) -> int:
        """Erase every card in both stores."""
        return len(self.forget_where("1 = 1", []).erased)

    def forget_where(self, where: str, args: list[str]) -> ForgetReport:
        with self._lock, self._guard("forget"):
            self._sync(vectors=False)
            targets = {s.label: set(s.open_catalog().ids_where(where, args)) for s in self._stores_in_use()}
            return self._erase(targets)

    def _erase(self, targets: dict[str, set[str]]) -> ForgetReport:
        report = ForgetReport()
        for label, ids in targets.items():
            if not ids:
                continue
            store: Store = self._stores[label]
            files = [p for p in (store.files.locate(i) for i in sorted(ids)) if p is not None]
            tracked = git_tracked([p for p in files if not store.files.is_private(p)])
            report.erased.extend(store.erase(sorted(ids)))
            report.tracked.extend(tracked)
        if report.erased and self.witness is not None:
            self.witness.ledger.forget(report.erased)
        if report.erased and self._on_forget is not None:
            self._on_forget(report.erased)
        return report


__all__ = ["Erasure", "ForgetReport", "git_tracked"]
