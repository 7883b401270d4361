"""Forgetting: a card's file, its catalog row and every byte of its vector leave the store.

What a forget cannot reach is said, never hidden: a card file (or a committed vector cache file)
that git tracks is still in the repository's history (:func:`git_tracked` tells, and the CLI
explains how to purge it), and the session transcripts that hold the card's text are named:
transcripts are the user's record of what was said, deleted whole with ``memagent sessions rm``
and never rewritten here (a running session appends to its transcript).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memagent.gitsafe import GitError, run_git
from memagent.memory.cards import SCOPES, MemoryCard
from memagent.memory.core import MemoryCore
from memagent.memory.store import Store


@dataclass
class ForgetReport:
    erased: list[str] = field(default_factory=list)
    tracked: list[Path] = field(default_factory=list)  # erased files git still has in its history
    transcripts: list[str] = field(default_factory=list)  # sessions whose transcript holds an erased text

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


class Erasure:
    """The forgetting part of the service (see the module docstring), over the service's core."""

    def __init__(self, core: MemoryCore) -> None:
        self.core = core

    def forget(self, memory_ids: Iterable[str], *, with_history: bool = True) -> int:
        """Erase cards (and, with ``with_history``, the older versions they superseded); returns
        how many were erased."""
        return len(self.forget_report(memory_ids, with_history=with_history).erased)

    def forget_report(self, memory_ids: Iterable[str], *, with_history: bool = True) -> ForgetReport:
        """Erase exactly these cards, plus the chain of older versions each superseded when
        ``with_history`` (see :meth:`earlier_versions`)."""
        with self.core.lock, self.core.guard("forget"):
            targets: dict[str, set[str]] = {}
            withheld = {i: s.label for s in self.core.stores.values() for i in s.forgetting.withheld()}
            for memory_id in dict.fromkeys(memory_ids):
                if memory_id in withheld:  # forgotten before, its file came back: erase the file again
                    targets.setdefault(withheld[memory_id], set()).add(memory_id)
                    continue
                chain = self._with_predecessors(memory_id)
                for card in chain if with_history else chain[:1]:
                    store = self.core.locate(card.id)
                    if store is not None:
                        targets.setdefault(store.label, set()).add(card.id)
            return self._erase(targets)

    def withheld(self) -> list[tuple[str, Path, str]]:
        """(id, file, forgotten at) of every forgotten card whose file came back."""
        with self.core.lock, self.core.guard("read"):
            return [
                (i, path, when)
                for s in self.core.stores.values()
                for i, (path, when) in s.forgetting.withheld().items()
            ]

    def readmit(self, memory_ids: Iterable[str]) -> None:
        """Use cards whose file came back after a forget again (the user chose to keep them)."""
        ids = list(memory_ids)
        with self.core.lock, self.core.guard("readmit"):
            for store in self.core.stores.values():
                mine = [i for i in ids if i in store.forgetting.withheld()]
                if mine:
                    store.forgetting.readmit(mine)

    def earlier_versions(self, memory_id: str) -> list[str]:
        """The ids of the older versions a card superseded, newest first (what
        ``forget_report(..., with_history=True)`` erases beside it)."""
        with self.core.lock, self.core.guard("forget"):
            return [card.id for card in self._with_predecessors(memory_id)[1:]]

    def tombstoned(self) -> dict[str, str]:
        """Every forgotten id of both stores, with when it was forgotten."""
        found: dict[str, str] = {}
        for store in self.core.stores.values():
            found.update(store.forgetting.tombstoned())
        return found

    def revive(self, memory_ids: Iterable[str]) -> None:
        """Take ids off the tombstone lists: the user chose to have these cards again."""
        ids = list(memory_ids)
        for store in self.core.stores.values():
            store.forgetting.revive(ids)

    def _with_predecessors(self, memory_id: str) -> list[MemoryCard]:
        out: list[MemoryCard] = []
        cursor = self.core.get_many([memory_id]).get(memory_id)
        seen: set[str] = set()
        while cursor is not None and cursor.id not in seen:
            out.append(cursor)
            seen.add(cursor.id)
            cursor = self.core.get_many([cursor.supersedes]).get(cursor.supersedes) if cursor.supersedes else None
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
        with self.core.lock, self.core.guard("forget"):
            self.core.sync(vectors=False)
            targets = {s.label: set(s.open_catalog().ids_where(where, args)) for s in self.core.stores_in_use()}
            return self._erase(targets)

    def _erase(self, targets: dict[str, set[str]]) -> ForgetReport:
        report = ForgetReport()
        texts: list[str] = []
        for label, ids in targets.items():
            if not ids:
                continue
            store: Store = self.core.stores[label]
            files = [p for p in (store.files.locate(i) for i in sorted(ids)) if p is not None]
            shared = [p for p in files if not store.files.is_private(p)]
            tracked = git_tracked(shared + store.forgetting.committed_vector_files(sorted(ids)))
            texts.extend(_contents(shared + [p for p in files if store.files.is_private(p)]))
            report.erased.extend(store.forgetting.erase(sorted(ids)))
            report.tracked.extend(tracked)
        report.transcripts = self._transcripts_holding(report.erased, texts)
        if report.erased and self.core.witness is not None:
            self.core.witness.ledger.forget(report.erased)
        if report.erased and self.core.on_forget is not None:
            self.core.on_forget(report.erased)
        return report

    def _transcripts_holding(self, ids: list[str], texts: list[str]) -> list[str]:
        """The sessions of this project whose transcript holds an erased card's id or text."""
        folder = self.core.project_root / ".transcripts" if self.core.project_root is not None else None
        if not ids or folder is None or not folder.is_dir():
            return []
        needles = {f"[Memory#{i}]".encode() for i in ids}
        for content in texts:
            needles.add(json.dumps(content, ensure_ascii=False)[1:-1].encode("utf-8"))
            needles.add(json.dumps(content)[1:-1].encode("ascii"))
        found = []
        for path in sorted(folder.glob("*.jsonl")):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if any(needle in data for needle in needles):
                found.append(path.stem)
        return found


def _contents(paths: list[Path]) -> list[str]:
    """The text of each card file (as written), skipping one that cannot be read."""
    from memagent.memory.cardfiles import CardFileError, CardFiles

    found = []
    for path in paths:
        try:
            card, _ = CardFiles(path.parent).read_with_bytes(path)
        except CardFileError:
            continue
        found.append(card.content)
    return found


__all__ = ["Erasure", "ForgetReport", "git_tracked"]
