"""Reading changed card files into a store's catalog: the step both depths of a sync end with
(``memory.store``). Under the store's lock and in one catalog transaction: each changed file is
read (a file that cannot be read is noted as a problem, once per version of it; a file of a
forgotten card that came back is refused), vanished ids are dropped, new arrivals are noted for
the correction rule, and the folder times and git commit the catalog now reflects are recorded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memagent.memory import arrivals
from memagent.memory.cardfiles import CardFileError, Stamp
from memagent.memory.catalog import Catalog
from memagent.memory.tombstones import came_back_reason

if TYPE_CHECKING:
    from memagent.memory.store import Store


def apply_changes(
    store: Store,
    catalog: Catalog,
    changed: dict[str, tuple[str, Stamp]],
    removed: list[str],
    *,
    folders: str | None,
    head: str | None,
) -> int:
    """Read ``changed`` files into the catalog and drop ``removed`` ids; record the folder
    times (after a full scan) and the git commit the catalog now reflects. Returns how many
    cards changed."""
    problems = catalog.known_problems()
    gone_problems = [p for p in problems if not Path(p).exists()]
    unchanged_meta = (folders is None or catalog.get_meta("folders") == folders) and (
        head is None or catalog.get_meta("git_head") == head
    )
    if not changed and not removed and not gone_problems and unchanged_meta:
        return 0
    with store.locked(), catalog.transaction() as db:
        tombstones = store.tombstones.all() if changed else {}
        arrived = []
        known_before = catalog.entries(list(changed)) if changed else {}
        for card_id, (path_text, stamp) in changed.items():
            if problems.get(path_text, ("", None))[1] == stamp:
                continue  # still the same bad file: reported already
            path = Path(path_text)
            if not path.exists():
                removed.append(card_id)  # removed since it was listed
                continue
            if card_id in tombstones:  # forgotten here; the file came back (a pull, a checkout)
                catalog.note_problem(db, path, came_back_reason(path, card_id, tombstones[card_id]), stamp)
                removed.append(card_id)
                continue
            try:
                card = store.files.read(path)
            except CardFileError as exc:
                catalog.note_problem(db, path, str(exc), stamp)
                removed.append(card_id)
                continue
            catalog.put(db, card, path, stamp, store.files.is_private(path))
            catalog.clear_problems(db, [path_text])
            if card_id not in known_before:
                arrived.append(card_id)
        arrivals.note(db, arrived)  # new files from outside still meet the correction rule
        catalog.remove(db, removed)
        catalog.clear_problems(db, gone_problems)
        if folders is not None:
            catalog.set_meta(db, "folders", folders)
        if head is not None:
            catalog.set_meta(db, "git_head", head)
    return len(changed) + len(removed)


__all__ = ["apply_changes"]
