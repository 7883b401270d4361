"""`memagent memory profile` and `memagent memory review` (registered on the `memory` app).

``profile`` prints the user and project profiles aggregated from active cards (``--json``).
``review`` first shows the cards forgotten here whose file came back (a ``git pull``, a checkout)
and asks erase again / keep for each (an interactive session asks the same before it starts:
:func:`offer_returned_cards`); then the repository's cards this machine did not write (see
``memory.provenance``) — every one in a project the user has not trusted, where they wait here
before they are used, and those that claim more than they earned in a trusted one — and asks
accept / forget / skip for each; ``--accept ID`` accepts without asking. Then it walks the newest
automatic cards — pending ones first when ``require_review`` is set — and asks, for each, keep /
edit / forget / skip / quit. Without a terminal on stdin it only lists them and says how to
review. Nothing here imports anthropic.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths
from memagent.jsontypes import JsonObject
from memagent.ui.safe_text import printable

if TYPE_CHECKING:
    from memagent.config import Settings
    from memagent.memory.hygiene import ReviewItem
    from memagent.memory.learning_history import LearningHistory
    from memagent.memory.provenance import Standing
    from memagent.memory.service import MemoryService
    from memagent.paths import ProjectPaths

WIDTH = 100
T = TypeVar("T")


def _open_service(ctx: typer.Context, root: Path | None) -> tuple[MemoryService, ProjectPaths]:
    from memagent.config import ConfigError, load_settings
    from memagent.memory.service import MemoryService, MemoryUnavailable

    paths = resolve_paths(ctx, root)
    try:
        settings = load_settings(paths)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    try:
        return MemoryService.open(paths, settings), paths
    except MemoryUnavailable as exc:
        fail(f"memory unavailable: {exc}", EXIT_FAILURE)


def _settings(paths: ProjectPaths):
    from memagent.config import load_settings

    return load_settings(paths)


def _guarded(action: Callable[[], T]) -> T:
    from memagent.memory.service import MemoryUnavailable

    try:
        return action()
    except MemoryUnavailable as exc:
        fail(f"memory unavailable: {exc}", EXIT_FAILURE)


def profile_command(
    ctx: typer.Context,
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
    max_tokens: int = typer.Option(400, "--max-tokens", min=50, help="Token budget of each profile."),
) -> None:
    """Show the user and project profiles aggregated from active memory cards."""
    from memagent.memory.profiles import load_profiles

    service, paths = _open_service(ctx, root)
    profiles = _guarded(lambda: load_profiles(service, paths, max_tokens))
    if as_json:
        print_json(profiles.as_dict())
        return
    text = profiles.render()
    if text is None:
        typer.echo("No profile yet: there are no active user or project memories.")
        return
    typer.echo(printable(text))


def _short(text: str, width: int = WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _describe(item: ReviewItem, root: Path) -> str:
    from memagent.memory.hygiene import stale_note

    card = item.card
    state = "PENDING " + (item.intended_action or "ADD") if item.pending else card.status
    where = f"session {card.provenance.session_id}" if card.provenance.session_id else f"from {card.source}"
    if card.provenance.turn is not None:
        where += f" turn {card.provenance.turn}"
    lines = [
        f"{card.id}  [{state}] {card.memory_type}, {card.scope}, conf {card.confidence:.2f}, {where}, "
        f"{card.created_at.date().isoformat()}",
        f"    {_short(card.content)}",
    ]
    if card.provenance.quote:
        lines.append(f'    quote: "{_short(card.provenance.quote, 80)}"')
    if card.members:
        lines.append(f"    summarises {', '.join(card.members)} (they stay as they are)")
    note = stale_note(card, root)
    if note:
        lines.append(f"    {note}")
    return "\n".join(lines)


def review_command(
    ctx: typer.Context,
    root: Path | None = RootOption,
    limit: int = typer.Option(20, "--limit", "-n", min=1, help="How many cards to review."),
    accept: list[str] | None = typer.Option(
        None,
        "--accept",
        help="Accept this repository card (id or unique prefix) as it is; repeatable.",
        show_default=False,
    ),
    as_json: bool = JsonOption,
) -> None:
    """Review repository cards this machine did not write (accept or forget), then the newest
    automatic memories (keep, edit or forget)."""
    from memagent.cli.memory_reflect import review_skill_proposals, skill_proposal_json, skill_proposals
    from memagent.memory.hygiene import review_queue
    from memagent.memory.learning_history import LearningHistory
    from memagent.trust import is_trusted

    service, paths = _open_service(ctx, root)
    if accept:
        _accept(service, accept)
        return
    came_back = _guarded(service.withheld)
    if came_back and not as_json:
        _review_came_back(service, came_back, _interactive_terminal())
    trusted = is_trusted(paths.home, paths.root)
    standings = _guarded(lambda: service.repository_cards(every_one=not trusted))[:limit]
    history = LearningHistory.for_paths(paths)
    items = _guarded(lambda: review_queue(service, history, limit))
    items = [item for item in items if item.card.source != "repository"]
    skills = _guarded(lambda: skill_proposals(service, history, paths, _settings(paths)))
    if as_json:
        print_json(
            [_came_back_json(card_id, path, when) for card_id, path, when in came_back]
            + [_standing_json(standing, held=not trusted) for standing in standings]
            + [
                {
                    "card": item.card.model_dump(mode="json"),
                    "pending": item.pending,
                    "intended_action": item.intended_action,
                    "target_id": item.target_id,
                    "repository": None,
                }
                for item in items
            ]
            + [skill_proposal_json(proposal) for proposal in skills]
        )
        return
    if standings:
        _review_repository(service, standings, trusted, _interactive_terminal())
    pairs = _guarded(service.near_duplicates)
    if pairs:
        _review_duplicates(service, pairs, _interactive_terminal())
    if skills:
        review_skill_proposals(skills, history, paths, _interactive_terminal())
    if not items:
        typer.echo("Nothing to review: no automatic memories are waiting.")
        return
    if not _interactive_terminal():
        for item in items:
            typer.echo(printable(_describe(item, paths.root)))
        typer.echo(
            f"{len(items)} automatic memor{'y' if len(items) == 1 else 'ies'} listed; "
            "run `memagent memory review` in a terminal to keep, edit or forget them."
        )
        return
    _interactive(service, history, paths, items)


def _came_back_text(path: Path) -> tuple[JsonObject | None, str]:
    """The card a returned file claims (as JSON) and one line of its text, or why it cannot be read."""
    from memagent.memory.cardfiles import CardFileError, CardFiles

    try:
        card, _ = CardFiles(path.parent).read_with_bytes(path)
    except CardFileError as exc:
        return None, str(exc)
    return card.model_dump(mode="json"), _short(card.content)


def _came_back_json(card_id: str, path: Path, when: str) -> JsonObject:
    card, _ = _came_back_text(path)
    return {
        "card": card,
        "pending": True,
        "intended_action": "forgotten_came_back",
        "target_id": card_id,
        "repository": {"file": str(path), "forgotten_at": when},
    }


def _review_came_back(service: MemoryService, came_back: list[tuple[str, Path, str]], interactive: bool) -> None:
    """Cards forgotten here whose file came back (a pull, a checkout): not used until the user
    keeps them; erase them again or keep them."""
    typer.echo(
        f"{len(came_back)} forgotten card{'' if len(came_back) == 1 else 's'} came back "
        "(a git pull or checkout?) and {} not used:".format("is" if len(came_back) == 1 else "are")
    )
    for card_id, path, when in came_back:
        _, text = _came_back_text(path)
        typer.echo(printable(f"{card_id}  forgotten {when[:10]}, file {path}\n    {text}"))
        if not interactive:
            continue
        choice = typer.prompt("  [e]rase again, [k]eep, [s]kip", default="s").strip().lower()[:1]
        if choice == "e":
            _guarded(lambda: service.forget_report([card_id], with_history=False))
            typer.echo("    erased (commit the deletion so the file does not come back)")
        elif choice == "k":
            _guarded(lambda: service.readmit([card_id]))
            typer.echo("    kept: it is used again")
    if not interactive:
        typer.echo(
            "Erase one again with `memagent memory forget ID`, or run `memagent memory review` "
            "in a terminal to keep it."
        )


def offer_returned_cards(paths: ProjectPaths, settings: Settings) -> None:
    """Before an interactive session: a card forgotten here whose file came back (a pull, a
    checkout) is not used until the user decides; ask now (erase again, keep, or skip)."""
    from memagent.memory.layout import TOMBSTONE_NAME, local_dir
    from memagent.memory.service import MemoryService, MemoryUnavailable

    if not (local_dir(paths.memory) / TOMBSTONE_NAME).is_file():
        return  # nothing was ever forgotten here: nothing to open
    try:
        service = MemoryService.open(paths, settings)
    except MemoryUnavailable:
        return  # the session says why when it opens memory itself
    try:
        came_back = service.withheld()
        if came_back:
            _review_came_back(service, came_back, interactive=True)
    except MemoryUnavailable as exc:
        sys.stderr.write(f"memagent: memory unavailable: {exc}\n")
    finally:
        service.close()


def _accept(service: MemoryService, ids: list[str]) -> None:
    for memory_id in ids:
        try:
            full = _guarded(lambda: service.resolve(memory_id))
        except LookupError as exc:
            fail(str(exc), EXIT_FAILURE)
        card = _guarded(lambda: service.accept(full))
        if card is None:
            fail(f"{full} is not a card of this project's store", EXIT_FAILURE)
        typer.echo(f"Accepted {full}: it now stands as its file says.")


def _standing_json(standing: Standing, held: bool) -> JsonObject:
    return {
        "card": standing.earned.model_dump(mode="json"),
        "pending": held,
        "intended_action": None,
        "target_id": None,
        "repository": {
            "claimed": standing.claimed.model_dump(mode="json"),
            "overclaims": [*standing.overclaims],
            "file": str(standing.path),
        },
    }


def _describe_standing(standing: Standing) -> str:
    earned = standing.earned
    claims = ", ".join(standing.overclaims)
    lines = [
        f"{earned.id}  [repository] {earned.memory_type}, counted as {earned.scope}, from the repository, "
        f"conf {earned.confidence:.2f}" + (f"; the file claims {claims}" if claims else ""),
        f"    {_short(earned.content)}",
    ]
    return "\n".join(lines)


def _review_repository(service: MemoryService, standings: list[Standing], trusted: bool, interactive: bool) -> None:
    """Card files this machine did not write (a clone, a pull, an edit by someone else)."""
    why = (
        "they claim more than they earned"
        if trusted
        else "this project is not trusted: they are not used until you accept them"
    )
    typer.echo(
        f"{len(standings)} repository card{'' if len(standings) == 1 else 's'} this machine did not write ({why}):"
    )
    for standing in standings:
        typer.echo(printable(_describe_standing(standing)))
        if not interactive:
            continue
        choice = typer.prompt("  [a]ccept, [f]orget, [s]kip", default="s").strip().lower()[:1]
        if choice == "a":
            _guarded(lambda: service.accept(standing.earned.id))
            typer.echo("    accepted")
        elif choice == "f":
            _guarded(lambda: service.forget([standing.earned.id]))
            typer.echo("    forgotten")
    if not interactive:
        typer.echo(
            "Accept one with `memagent memory review --accept ID`, or erase it with `memagent memory forget ID`."
        )


def _review_duplicates(service: MemoryService, pairs: list[tuple[str, str, float]], interactive: bool) -> None:
    """Cards that say the same thing (typically after merging two branches' memories)."""
    typer.echo(f"{len(pairs)} pair{'' if len(pairs) == 1 else 's'} of memories say the same thing:")
    for first, second, similarity in pairs:
        one, two = _guarded(lambda: (service.get(first), service.get(second)))
        if one is None or two is None:
            continue
        typer.echo(f"  ({similarity:.2f}) [1] {first}  {_short(one.content, 80)}")
        typer.echo(f"         [2] {second}  {_short(two.content, 80)}")
        if not interactive:
            continue
        choice = typer.prompt("  keep [1], keep [2], or [s]kip", default="s").strip().lower()[:1]
        if choice in ("1", "2"):
            keep, drop = (first, second) if choice == "1" else (second, first)
            _guarded(lambda: service.merge_near_duplicate(keep, drop))
            typer.echo(f"    kept {keep}; {drop} is now superseded by it")
    if not interactive:
        typer.echo("Run `memagent memory review` in a terminal to merge them.")


def _interactive_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _interactive(
    service: MemoryService, history: LearningHistory, paths: ProjectPaths, items: list[ReviewItem]
) -> None:
    from memagent.memory.hygiene import amend, approve, reject

    counts = {"keep": 0, "edit": 0, "forget": 0, "skip": 0}
    for number, item in enumerate(items, start=1):
        typer.echo(f"\n({number}/{len(items)}) " + printable(_describe(item, paths.root)))
        choice = typer.prompt("[k]eep, [e]dit, [f]orget, [s]kip, [q]uit", default="s").strip().lower()[:1]
        if choice == "q":
            break
        if choice == "k":
            _guarded(lambda: approve(service, history, item))
            counts["keep"] += 1
        elif choice == "e":
            new_text = typer.prompt("New text", default=item.card.content).strip()
            if not new_text or new_text == item.card.content:
                _guarded(lambda: approve(service, history, item))
                counts["keep"] += 1
                continue
            result = _guarded(lambda: amend(service, history, item, new_text))
            if result.status == "refused":
                typer.echo(f"    not changed: {result.reason}")
                counts["skip"] += 1
            else:
                typer.echo(f"    saved as {result.card.id}")
                counts["edit"] += 1
        elif choice == "f":
            _guarded(lambda: reject(service, history, item, paths))
            counts["forget"] += 1
        else:
            counts["skip"] += 1
    typer.echo(
        f"Reviewed: {counts['keep']} kept, {counts['edit']} edited, {counts['forget']} forgotten, "
        f"{counts['skip']} skipped."
    )


__all__ = ["profile_command", "review_command"]


def learn_command(
    ctx: typer.Context,
    root: Path | None = RootOption,
    session: str | None = typer.Option(
        None, "--session", help="Learn from this earlier session only (id or unique prefix).", show_default=False
    ),
    as_json: bool = JsonOption,
) -> None:
    """Learn now from earlier sessions' messages no extraction has mined yet (a killed session's
    last turns, a failed extraction); each message is mined once."""
    from memagent.config import load_settings
    from memagent.context.resume import ResumeError, session_path
    from memagent.features.memory import catch_up_now
    from memagent.memory.catchup import session_state
    from memagent.runtime import SetupError, make_model

    service, paths = _open_service(ctx, root)
    settings = load_settings(paths)  # read once already by _open_service: valid
    only = None
    if session is not None:
        try:
            only = session_path(paths.transcripts, session).stem
        except ResumeError as exc:
            fail(str(exc), EXIT_USAGE)
        if session_state(paths.memory, only) == "live":
            fail(f"session {only} is still running; it learns for itself", EXIT_FAILURE)
    try:
        model = make_model(settings)
    except SetupError as exc:
        fail(str(exc), exc.code)
    try:
        reports = catch_up_now(paths, settings, model, service, only=only)
    finally:
        service.close()
    if reports is None:
        fail(
            "another memagent process is learning from earlier sessions in this project; try again later", EXIT_FAILURE
        )
    _print_learned(reports, as_json)
    if any(r.error for r in reports):
        raise typer.Exit(EXIT_FAILURE)


def _print_learned(reports: list, as_json: bool) -> None:
    if as_json:
        print_json(
            [
                {
                    "session_id": r.session_id,
                    "stored": r.stored,
                    "messages": len(r.message_ids),
                    "summary": r.summary(),
                    "error": r.error,
                }
                for r in reports
            ]
        )
        return
    if not reports:
        typer.echo("Nothing new to learn: every earlier session's messages were mined.")
    for report in reports:
        typer.echo(printable(f"{report.session_id}: {len(report.message_ids)} messages, {report.summary()}"))
