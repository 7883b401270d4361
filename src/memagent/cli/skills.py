"""``memagent skills``: list the skills memagent sees, create one, or turn a memory card into one."""

from __future__ import annotations

from pathlib import Path

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Skills (SKILL.md playbooks).")


@app.callback()
def skills_main(ctx: typer.Context, root: Path | None = RootOption) -> None:
    """Skills in .agents/skills/, .claude/skills/ and $MEMAGENT_HOME/skills/."""
    if root is not None:
        ctx.meta["skills_root"] = root


def _paths(ctx: typer.Context, root: Path | None):
    return resolve_paths(ctx, root or ctx.meta.get("skills_root"))


@app.command("list")
def list_skills(ctx: typer.Context, as_json: bool = JsonOption, root: Path | None = RootOption) -> None:
    """The skills found, with where they come from; broken SKILL.md files are named on stderr."""
    import sys

    from memagent.skills import discover_skills

    paths = _paths(ctx, root)
    index = discover_skills(paths.root, paths.home)
    if as_json:
        print_json({"skills": [s.as_dict() for s in index.skills], "problems": index.problems})
        return
    for problem in index.problems:
        sys.stderr.write(f"memagent: warning: {problem}\n")
    if not index.skills:
        sys.stdout.write("No skills. Create one with: memagent skills new NAME\n")
        return
    width = max(len(s.name) for s in index.skills)
    for skill in index.skills:
        sys.stdout.write(f"{skill.name.ljust(width)}  {skill.description}  [{skill.source}]\n")


@app.command("new")
def new_skill(
    ctx: typer.Context,
    name: str | None = typer.Argument(None, help="The skill's name (lowercase letters, digits, hyphens)."),
    from_card: str | None = typer.Option(None, "--from", help="Turn this procedure memory card (m_…) into the skill."),
    description: str | None = typer.Option(None, "--description", "-d", help="What the skill is for."),
    root: Path | None = RootOption,
) -> None:
    """Create .agents/skills/NAME/SKILL.md (a template, or the content of a procedure card)."""
    from memagent.skills import NEW_SKILL_BODY, SkillError, skill_markdown, write_new_skill

    paths = _paths(ctx, root)
    if from_card:
        name, text = _from_card(paths, from_card, name, description)
    else:
        if not name:
            fail("give a NAME or --from CARD_ID; usage: memagent skills new NAME", EXIT_USAGE)
        about = description or f"TODO: say when to use {name}"
        text = skill_markdown(name, about, NEW_SKILL_BODY.format(title=name, description=about))
    try:
        path = write_new_skill(paths.root, name, text)
    except SkillError as exc:
        fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        fail(f"cannot write the skill: {exc}", EXIT_FAILURE)
    shown = path.relative_to(paths.root) if path.is_relative_to(paths.root) else path
    typer.echo(f"created {shown}")


def _from_card(paths, card_id: str, name: str | None, description: str | None) -> tuple[str, str]:
    """(name, SKILL.md text) for a procedure card; exits with one line when it cannot."""
    from memagent.config import ConfigError, load_settings
    from memagent.embedding.embedders import LexicalOnlyEmbedder
    from memagent.memory.service import MemoryService, MemoryUnavailable

    try:
        settings = load_settings(paths)
        # reading one card by id needs no vectors: skip loading the embedding weights
        service = MemoryService.open(paths, settings, check_embedder=False, embedder=LexicalOnlyEmbedder())
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    except MemoryUnavailable as exc:
        fail(f"memory unavailable: {exc}", EXIT_FAILURE)
    try:
        card = service.get(card_id)
    except MemoryUnavailable as exc:
        fail(f"memory unavailable: {exc}", EXIT_FAILURE)
    finally:
        service.close()
    if card is None:
        fail(f"no memory {card_id}", EXIT_FAILURE)
    if card.memory_type != "procedure":
        fail(f"memory {card_id} is a {card.memory_type} card; only procedure cards become skills", EXIT_FAILURE)
    return skill_from_card(card, name, description)


def skill_from_card(card, name: str | None = None, description: str | None = None) -> tuple[str, str]:
    """(name, SKILL.md text in Claude Code's format) for a procedure card: front matter with name,
    description and the card it came from, the procedure as the body."""
    from memagent.skills import first_sentence, skill_markdown, slugify

    content = card.content.strip()
    skill_name = name or slugify(first_sentence(content, 60))
    about = description or first_sentence(content)
    body = f"# {skill_name}\n\n{content}\n"
    if card.backstory:
        body += f"\nBackground: {card.backstory}\n"
    return skill_name, skill_markdown(skill_name, about, body, {"source": f"memagent memory card {card.id}"})


__all__ = ["app", "skill_from_card"]
