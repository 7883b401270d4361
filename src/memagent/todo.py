"""The session todo list the model keeps with the ``todo`` tool.

The model always sends the whole list; the manager validates it (at most 20 items, statuses
``pending``/``in_progress``/``completed``, at most one ``in_progress``) and answers with the
rendered list, or with a :class:`TodoError` whose message says exactly what to fix.

Nudging: the loop calls :meth:`TodoManager.note_round` once per model round. After three rounds
in a row without a ``todo`` call, while open items remain, :meth:`TodoManager.reminder` returns a
reminder block (:func:`memagent.markers.reminder`) to append after the tool results. It fires on
the 3rd quiet round and again every 3 quiet rounds after that (6th, 9th, …) rather than on every
round, so it stays a nudge and does not drown the conversation. The state (items and the quiet-round counter) round-trips
through :meth:`to_dict`/:meth:`from_dict` so it survives compaction and resume.
"""

from __future__ import annotations

from memagent import markers

PENDING = "pending"
IN_PROGRESS = "in_progress"
COMPLETED = "completed"
STATUSES = (PENDING, IN_PROGRESS, COMPLETED)
MARKS = {PENDING: "[ ]", IN_PROGRESS: "[>]", COMPLETED: "[x]"}
MAX_TEXT = 500


class TodoError(Exception):
    """An invalid todo list; ``str()`` tells the model what to change."""


class TodoManager:
    MAX_ITEMS = 20
    REMIND_AFTER_ROUNDS = 3

    def __init__(self, items: list[dict] | None = None) -> None:
        self._items: list[dict[str, str]] = validate_items(items or [], self.MAX_ITEMS)
        self._quiet_rounds = 0

    # ------------------------------------------------------------ the list

    def update(self, items: object) -> str:
        """Replace the whole list (validated first: on error the old list stays) and render it."""
        self._items = validate_items(items, self.MAX_ITEMS)
        self._quiet_rounds = 0
        return self.render()

    @property
    def items(self) -> list[dict]:
        return [dict(item) for item in self._items]

    def open_items(self) -> list[dict]:
        return [dict(item) for item in self._items if item["status"] != COMPLETED]

    def in_progress(self) -> dict | None:
        """The item being worked on, if any (e.g. the memory layer's ``task_hint``)."""
        return next((dict(i) for i in self._items if i["status"] == IN_PROGRESS), None)

    def render(self) -> str:
        if not self._items:
            return "No todos."
        lines = [f"{MARKS[item['status']]} #{item['id']} {item['text']}" for item in self._items]
        done = sum(1 for item in self._items if item["status"] == COMPLETED)
        lines.append(f"({done}/{len(self._items)} done)")
        return "\n".join(lines)

    # ------------------------------------------------------------ nudging

    def note_round(self, todo_called: bool) -> None:
        """Called by the loop once per model round."""
        self._quiet_rounds = 0 if todo_called else self._quiet_rounds + 1

    def reminder(self) -> str | None:
        quiet = self._quiet_rounds
        if quiet < self.REMIND_AFTER_ROUNDS or quiet % self.REMIND_AFTER_ROUNDS or not self.open_items():
            return None
        return markers.reminder(
            f"You have not updated your todo list for {quiet} rounds and "
            f"{len(self.open_items())} item(s) are still open. If your progress changed, call the "
            f"todo tool with the full updated list.\n{self.render()}"
        )

    # ------------------------------------------------------------ persistence

    def to_dict(self) -> dict:
        return {"items": self.items, "quiet_rounds": self._quiet_rounds}

    @classmethod
    def from_dict(cls, data: object) -> TodoManager:
        """Rebuild a saved manager. Raises :class:`TodoError` for data that is not a saved list."""
        if not isinstance(data, dict):
            raise TodoError("saved todo state must be an object with 'items'")
        manager = cls(data.get("items") or [])
        quiet = data.get("quiet_rounds", 0)
        manager._quiet_rounds = quiet if isinstance(quiet, int) and not isinstance(quiet, bool) and quiet >= 0 else 0
        return manager


def validate_items(items: object, limit: int = TodoManager.MAX_ITEMS) -> list[dict[str, str]]:
    """Check a proposed list; return normalised copies (ids as strings, text stripped)."""
    if not isinstance(items, list):
        raise TodoError("items must be a list of {id, text, status} objects")
    if len(items) > limit:
        raise TodoError(
            f"too many todo items ({len(items)}); the limit is {limit}. Merge related items or "
            "drop finished ones, then send the list again."
        )
    clean: list[dict[str, str]] = []
    for position, item in enumerate(items, start=1):
        clean.append(_validate_item(item, position))
    ids = [item["id"] for item in clean]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise TodoError(f"duplicate todo ids: {', '.join('#' + d for d in duplicates)}; give every item its own id")
    active = [item["id"] for item in clean if item["status"] == IN_PROGRESS]
    if len(active) > 1:
        raise TodoError(
            f"only one item can be in_progress at a time, but {', '.join('#' + a for a in active)} are; "
            "keep the one you are working on and set the others to pending or completed"
        )
    return clean


def _validate_item(item: object, position: int) -> dict[str, str]:
    if not isinstance(item, dict):
        raise TodoError(f"item {position} must be an object with id, text and status")
    raw_id = item.get("id", position)
    item_id = str(raw_id).strip().lstrip("#").strip() if isinstance(raw_id, (int, str)) else ""
    if isinstance(raw_id, bool) or not item_id or len(item_id) > 40:
        raise TodoError(f"item {position}: id must be a number or a short string")
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise TodoError(f"item #{item_id}: text is required")
    text = " ".join(text.split())
    if len(text) > MAX_TEXT:
        raise TodoError(f"item #{item_id}: text is {len(text)} characters; keep it under {MAX_TEXT}")
    status = item.get("status", PENDING)
    if status not in STATUSES:
        raise TodoError(f"item #{item_id}: status {status!r} is not valid; use pending, in_progress or completed")
    return {"id": item_id, "text": text, "status": status}
