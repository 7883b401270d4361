"""The learning history: an append-only JSONL log of what automatic learning decided, and why.

Where
    Decisions about project- and session-scope cards, and extraction-run summaries, go to
    ``<project>/.memory/local/history.jsonl`` (the part of the store git ignores: see
    ``memory.layout``); decisions about user-scope cards go to
    ``$MEMAGENT_HOME/memory/local/history.jsonl``, next to the store that holds them, so forgetting a
    user card never depends on which project wrote about it.

Records (one JSON object per line, every one with ``kind`` and ``time``)
    ``decision``  action (ADD, UPDATE, CONTRADICT, NOOP, DUPLICATE, REFUSED, SKIPPED, DROPPED),
                  card_id, target_id, content, reason, session_id, message_ids, source
    ``run``       one extraction run: session_id, reason, message_ids, candidates, counts,
                  input/output tokens, consolidation_calls and consolidation_failed (answers
                  unusable twice), error (if it failed: a model or store error, or an
                  extraction answer unusable twice)
    ``review``    a user's review verdict (keep, edit, forget) on a card
    ``pending``   an automatic card held back for review (``require_review``)
    ``decay``     a confidence change by hygiene: card_id, base, confidence
    ``mined``     what a catch-up mined of an earlier session: session_id, ids, stored, complete
                  (nothing of the session is left to mine); see ``memory.catchup``

Refused candidates are logged with their reason only, never their text: a refusal can be a
secret, and nothing refused may touch disk.

Erasure
    ``erase(ids)`` rewrites each file atomically (temp file + ``os.replace``) without the text of
    every record that mentions one of the ids (card or target), keeping id, action and time as a
    tombstone. It is what ``memagent memory forget`` must call.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.fsutil import atomic_write, make_dirs
from memagent.jsontypes import JsonMapping, JsonObject, json_int, json_list, json_str
from memagent.memory.layout import HISTORY_NAME as LAYOUT_HISTORY_NAME
from memagent.memory.layout import LOCAL_DIR, ensure_local, local_dir, migrate_layout

if TYPE_CHECKING:
    from memagent.config import ProjectPaths


HISTORY_NAME = LAYOUT_HISTORY_NAME
# Fields that may carry card text; ``erase`` drops them.
TEXT_FIELDS = ("content", "quote", "reason_text", "old_content", "new_content", "target_content")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def history_files(paths: ProjectPaths) -> tuple[Path, Path]:
    """(project history, user history) for a :class:`memagent.config.ProjectPaths`; a store of
    the earlier layout has its local files moved first (see ``memory.layout``)."""
    for root in (Path(paths.memory), Path(paths.user_memory)):
        migrate_layout(root, vectors=False)
    return local_dir(paths.memory) / HISTORY_NAME, local_dir(paths.user_memory) / HISTORY_NAME


class LearningHistory:
    """Append and read the two history files of one project. Safe to share between threads."""

    def __init__(self, project_file: Path, user_file: Path | None = None) -> None:
        self.project_file = Path(project_file)
        self.user_file = Path(user_file) if user_file is not None else None
        self._lock = threading.Lock()

    @classmethod
    def for_paths(cls, paths: ProjectPaths) -> LearningHistory:
        project, user = history_files(paths)
        return cls(project, user)

    def _file_for(self, scope: str | None) -> Path:
        if scope == "user" and self.user_file is not None:
            return self.user_file
        return self.project_file

    @property
    def files(self) -> list[Path]:
        return [f for f in (self.project_file, self.user_file) if f is not None]

    # -- writing --------------------------------------------------------------------------

    def append(self, record: JsonObject, *, scope: str | None = None) -> JsonObject:
        """Append one record (``kind`` required) to the file for ``scope``; returns it with its time."""
        stamped: JsonObject = {"kind": record["kind"], "time": record.get("time") or _now()}
        stamped.update({k: v for k, v in record.items() if k not in ("kind", "time") and v is not None})
        line = json.dumps(stamped, ensure_ascii=False, separators=(",", ":")) + "\n"
        target = self._file_for(scope)
        with self._lock:
            if target.parent.name == LOCAL_DIR:  # a store's local part: with the .gitignore that keeps it out of git
                ensure_local(target.parent.parent)
            else:
                make_dirs(target.parent)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        return stamped

    # -- reading --------------------------------------------------------------------------

    def records(self, kind: str | None = None) -> list[JsonObject]:
        """Every readable record of both files, oldest first; garbage lines are skipped."""
        found: list[JsonObject] = []
        for path in self.files:
            found.extend(_read(path))
        found.sort(key=lambda r: str(r.get("time", "")))
        if kind is not None:
            found = [r for r in found if r.get("kind") == kind]
        return found

    def history_for(self, card_id: str) -> list[JsonObject]:
        """Every record about ``card_id`` (as the card or as the target), oldest first."""
        return [r for r in self.records() if _mentions(r, {card_id})]

    def automatic_card_ids(self) -> list[str]:
        """Ids of the cards the learning pipeline created, newest first."""
        seen: dict[str, str] = {}
        for record in self.records("decision"):
            if record.get("action") in ("ADD", "UPDATE", "CONTRADICT") and record.get("card_id"):
                seen[str(record["card_id"])] = str(record.get("time", ""))
        return [cid for cid, _ in sorted(seen.items(), key=lambda kv: kv[1], reverse=True)]

    def pending_card_ids(self) -> set[str]:
        """Cards held back for review and not yet reviewed."""
        pending: set[str] = set()
        for record in self.records():
            card_id = record.get("card_id")
            if not card_id:
                continue
            if record.get("kind") == "pending":
                pending.add(str(card_id))
            elif record.get("kind") == "review":
                pending.discard(str(card_id))
        return pending

    # -- erasure --------------------------------------------------------------------------

    def erase(self, card_ids: Iterable[str]) -> int:
        """Remove the text of every record mentioning these ids; returns how many were scrubbed."""
        wanted = {str(i) for i in card_ids if i}
        if not wanted:
            return 0
        scrubbed = 0
        with self._lock:
            for path in self.files:
                scrubbed += _scrub_file(path, wanted)
        return scrubbed


def _read(path: Path) -> Iterator[JsonObject]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return
    except OSError:
        return
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(record, dict) and "kind" in record:
            yield record


def _mentions(record: JsonMapping, ids: set[str]) -> bool:
    if record.get("card_id") in ids or record.get("target_id") in ids:
        return True
    return any(i in ids for i in json_list(record.get("card_ids")) if isinstance(i, str))


def _scrub_file(path: Path, ids: set[str]) -> int:
    if not path.exists():
        return 0
    raw = path.read_bytes()
    out: list[bytes] = []
    scrubbed = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            # A garbage line cannot be attributed to a card; if it contains an erased id, drop it.
            if any(i.encode() in line for i in ids):
                scrubbed += 1
                continue
            out.append(line)
            continue
        if isinstance(record, dict) and _mentions(record, ids):
            cleaned = {k: v for k, v in record.items() if k not in TEXT_FIELDS}
            cleaned["erased"] = True
            scrubbed += 1
            out.append(json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        else:
            out.append(line)
    atomic_write(path, b"".join(line + b"\n" for line in out), durable=True)
    return scrubbed


# -- module-level helpers for the CLI and other areas ----------------------------------------


def history_for(paths: ProjectPaths, card_id: str) -> list[JsonObject]:
    """The learning history of one card, for ``memagent memory show ID``."""
    return LearningHistory.for_paths(paths).history_for(card_id)


def erase(paths: ProjectPaths, card_ids: Iterable[str]) -> int:
    """Erase the text of these cards from both history files (``forget`` calls this)."""
    return LearningHistory.for_paths(paths).erase(card_ids)


def describe_record(record: JsonMapping, card_id: str | None = None) -> str:
    """One line for ``memagent memory show ID``, e.g.
    ``2026-11-21 10:03  UPDATE  replaced m_… (session s1, message 12): model decision``."""
    when = str(record.get("time", ""))[:16].replace("T", " ")
    kind = record.get("kind")
    if kind == "decision":
        action = str(record.get("action", "?"))
        target, made = record.get("target_id"), record.get("card_id")
        if made and target and target != made:
            action += f" by {made}" if target == card_id else f" replacing {target}"
        elif target and not made and target == card_id:
            action += " (matched this card)"
        where = []
        if record.get("session_id"):
            where.append(f"session {record['session_id']}")
        if record.get("message_id"):
            where.append(f"message {record['message_id']}")
        origin = f" ({', '.join(where)})" if where else ""
        reason = f": {record['reason']}" if record.get("reason") else ""
        erased = " [text erased]" if record.get("erased") else ""
        return f"{when}  {action}{origin}{reason}{erased}"
    if kind == "review":
        return f"{when}  reviewed: {record.get('verdict', '?')}"
    if kind == "pending":
        return f"{when}  held for review ({record.get('action', 'ADD')})"
    if kind == "decay":
        return f"{when}  confidence decayed to {record.get('confidence')} (base {record.get('base')})"
    return f"{when}  {kind}"


def refusal_kind(reason: str | None) -> str:
    """A short, stable key for a gate refusal reason: the part before the first colon."""
    text = (reason or "unknown").strip()
    head = text.split(":", 1)[0].strip().lower()
    if head.startswith("looks like it contains a secret"):
        return "secret"
    if head.startswith("confidence"):
        return "low confidence"
    return head[:40] or "unknown"


def learning_stats(paths: ProjectPaths) -> JsonObject:
    """Extraction runs, decisions by action, gate refusals and drops by reason, tokens spent.

    For ``memagent memory stats`` (merged into its output by the command's owner).
    """
    hist = LearningHistory.for_paths(paths)
    runs = hist.records("run")
    decisions = hist.records("decision")
    by_action: dict[str, int] = {}
    refusals: dict[str, int] = {}
    drops: dict[str, int] = {}
    for record in decisions:
        action = str(record.get("action", "?"))
        by_action[action] = by_action.get(action, 0) + 1
        if action == "REFUSED":
            key = refusal_kind(json_str(record.get("reason")) or None)
            refusals[key] = refusals.get(key, 0) + 1
        elif action == "DROPPED":
            key = str(record.get("reason", "unknown"))[:60]
            drops[key] = drops.get(key, 0) + 1
    failed = [r for r in runs if r.get("error")]
    return {
        "extraction_runs": len(runs),
        "failed_runs": len(failed),
        "last_failure": failed[-1].get("error") if failed else None,
        "consolidation_calls": sum(json_int(r.get("consolidation_calls")) for r in runs),
        "consolidation_failed": sum(json_int(r.get("consolidation_failed")) for r in runs),
        "messages_processed": sum(len(json_list(r.get("message_ids"))) for r in runs if not r.get("error")),
        "candidates": sum(json_int(r.get("candidates")) for r in runs),
        "decisions": {action: n for action, n in sorted(by_action.items())},
        "gate_refusals": {kind: n for kind, n in sorted(refusals.items())},
        "dropped": {why: n for why, n in sorted(drops.items())},
        "input_tokens": sum(json_int(r.get("input_tokens")) for r in runs),
        "output_tokens": sum(json_int(r.get("output_tokens")) for r in runs),
        "last_run": runs[-1].get("time") if runs else None,
        "pending_review": len(hist.pending_card_ids()),
    }


__all__ = [
    "HISTORY_NAME",
    "LearningHistory",
    "describe_record",
    "erase",
    "history_files",
    "history_for",
    "learning_stats",
    "refusal_kind",
]
