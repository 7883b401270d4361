"""What `memagent memory review` proposes beyond single cards: mature procedures as skills
(``memory.procedures``) and, from ``memagent memory reflect``, summaries of clusters of cards
(``memory.reflection``). Nothing here imports anthropic until a reflection asks the model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from memagent.cli.common import EXIT_FAILURE, JsonOption, RootOption, fail, print_json
from memagent.jsontypes import JsonObject
from memagent.ui.safe_text import printable

if TYPE_CHECKING:
    from memagent.config import Settings
    from memagent.memory.learning_history import LearningHistory
    from memagent.memory.procedures import SkillProposal
    from memagent.memory.service import MemoryService
    from memagent.paths import ProjectPaths

SKILL_FOLDER = ".claude"  # skills offered by review go where Claude Code finds them too
_SOURCE = re.compile(r"memagent memory card (m_[0-9a-f]{12})")


def skills_made_from_cards(root: Path) -> set[str]:
    """Card ids existing project skills were made from (their ``source`` line)."""
    found: set[str] = set()
    for folder in (".claude", ".agents"):
        for path in (root / folder / "skills").glob("*/SKILL.md"):
            try:
                found.update(_SOURCE.findall(path.read_text(encoding="utf-8", errors="replace")[:4000]))
            except OSError:
                continue
    return found


def skill_proposals(
    service: MemoryService, history: LearningHistory, paths: ProjectPaths, settings: Settings
) -> list[SkillProposal]:
    from memagent.memory.procedures import skill_proposals as proposals

    return proposals(service, history, settings.memory_skill_after_uses, skills_made_from_cards(paths.root))


def skill_proposal_json(proposal: SkillProposal) -> JsonObject:
    from memagent.cli.skills import skill_from_card

    name, _ = skill_from_card(proposal.card)
    return {
        "card": proposal.card.model_dump(mode="json"),
        "proposal": "skill",
        "maturity": proposal.maturity,
        "skill": f"{SKILL_FOLDER}/skills/{name}/SKILL.md",
        "repository": None,
    }


def review_skill_proposals(
    proposals: list[SkillProposal], history: LearningHistory, paths: ProjectPaths, interactive: bool
) -> None:
    """Offer each mature procedure as a skill; asks before writing (never without a terminal)."""
    from memagent.cli.skills import skill_from_card
    from memagent.memory.procedures import decline
    from memagent.skills import SkillError, write_new_skill

    many = len(proposals) != 1
    typer.echo(
        f"{len(proposals)} procedure{'s have' if many else ' has'} proved "
        f"{'themselves' if many else 'itself'} and could become {'skills' if many else 'a skill'}:"
    )
    for proposal in proposals:
        name, text = skill_from_card(proposal.card)
        target = f"{SKILL_FOLDER}/skills/{name}/SKILL.md"
        typer.echo(
            printable(
                f"  {proposal.card.id} (used or confirmed {proposal.maturity}×) {_short(proposal.card.content, 80)}"
            )
        )
        if not interactive:
            typer.echo(f"    make it a skill: memagent skills new --from {proposal.card.id}")
            continue
        choice = typer.prompt(f"  write {target}? [y]es, [n]ever, [s]kip", default="s").strip().lower()[:1]
        if choice == "y":
            try:
                write_new_skill(paths.root, name, text, folder=SKILL_FOLDER)
            except (SkillError, OSError) as exc:
                typer.echo(printable(f"    not written: {exc}"))
                continue
            typer.echo(f"    created {target}")
        elif choice == "n":
            decline(history, proposal)
            typer.echo("    not offered again")


def reflect_command(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the clusters; ask nothing, write nothing."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Find groups of related memories and propose one summary card for each (written by the
    model, waiting in `memagent memory review`; accepted, it links its members and replaces none)."""
    from memagent.cli.memory_learn import _open_service
    from memagent.config import load_settings
    from memagent.memory.learning_history import LearningHistory
    from memagent.memory.reflection import model_ask, reflect, report_json
    from memagent.memory.service import MemoryUnavailable

    service, paths = _open_service(ctx, root)
    try:
        ask = None
        if not dry_run:
            from memagent.runtime import SetupError, make_model

            settings = load_settings(paths)
            try:
                ask = model_ask(make_model(settings), settings.small_model)
            except SetupError as exc:
                fail(str(exc), exc.code)
        report = reflect(service, LearningHistory.for_paths(paths), service.embed_texts, ask)
    except MemoryUnavailable as exc:
        fail(f"memory unavailable: {exc}", EXIT_FAILURE)
    finally:
        service.close()
    if as_json:
        print_json(report_json(report, dry_run))
    else:
        _print_reflection(report, dry_run)
    if any(p.error for p in report.proposals):
        raise typer.Exit(EXIT_FAILURE)


def _print_reflection(report, dry_run: bool) -> None:
    if not report.clusters:
        typer.echo("Nothing to reflect on: no group of 3 or more related memories that was not summarised yet.")
        return
    many = len(report.clusters) != 1
    if dry_run:
        typer.echo(
            f"{len(report.clusters)} group{'s' if many else ''} of related memories "
            "(dry run: nothing asked, nothing written):"
        )
        for cluster in report.clusters:
            typer.echo(f"  {len(cluster.members)} memories (similarity {cluster.cohesion:.2f}):")
            for card in cluster.members:
                typer.echo(printable(f"    {card.id}  {_short(card.content, 90)}"))
        return
    done = [p for p in report.proposals if p.summary_id]
    typer.echo(f"Proposed {len(done)} summar{'ies' if len(done) != 1 else 'y'} (waiting in `memagent memory review`):")
    for proposal in report.proposals:
        members = ", ".join(proposal.cluster.ids)
        if proposal.summary_id:
            typer.echo(printable(f"  {proposal.summary_id} summarises {members}: {_short(proposal.content or '', 90)}"))
        else:
            typer.echo(printable(f"  {members}: {proposal.error}"))


def _short(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


__all__ = [
    "reflect_command",
    "review_skill_proposals",
    "skill_proposal_json",
    "skill_proposals",
    "skills_made_from_cards",
]
