"""A forget in another process that lands while a card is being corrected, merged or updated
wins: the card's file never comes back after "Erased" was reported. The interleaving is forced
(the other process's forget runs at the moment the writer has read the card and not yet
written), on real files with the real cross-process lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def forget_midway(writer, other, card_id: str, monkeypatch):
    """Run ``other.forget([card_id])`` when ``writer`` next embeds (after reading, before writing)."""
    real_embed = writer.core.embed
    erased: list[int] = []

    def embed_then_forget(texts):
        if not erased:
            erased.append(other.forget([card_id]))
        return real_embed(texts)

    monkeypatch.setattr(writer.core, "embed", embed_then_forget)
    return erased


def test_an_edit_racing_a_forget_never_brings_the_card_back(open_service, paths, monkeypatch):
    writer, other = open_service("s1"), open_service("s2")
    card = writer.save("The release train leaves every second Tuesday", "fact").card
    erased = forget_midway(writer, other, card.id, monkeypatch)
    result = writer.correct(card.id, "The release train leaves every second Thursday")
    assert erased == [1]
    assert result.status == "refused" and "forgotten" in result.reason
    assert not list(paths.memory.rglob(f"{card.id}.md"))
    assert open_service("s3").get(card.id) is None


def test_a_metadata_update_racing_a_forget_does_not_resurrect(open_service, paths, monkeypatch):
    """Variant: decay, archival and review write a card's metadata back."""
    writer, other = open_service("s1"), open_service("s2")
    card = writer.save("Feature flags live in config/flags.yaml", "fact").card
    real_read = writer.core.read_file

    def read_then_forget(store, card_id):
        found = real_read(store, card_id)
        other.forget([card_id])
        return found

    monkeypatch.setattr(writer.core, "read_file", read_then_forget)
    assert writer.update_card(card.id, confidence=0.75) is None
    assert not list(paths.memory.rglob(f"{card.id}.md"))


def test_a_restatement_racing_a_forget_does_not_resurrect(open_service, paths, monkeypatch):
    """Variant: saving a near-duplicate strengthens the stored card (a rewrite)."""
    writer, other = open_service("s1"), open_service("s2")
    card = writer.save("Use ruff for linting the Python code", "decision", confidence=0.8).card
    real_judge = writer.saving.judge_new_card

    def judge_then_forget(*args, **kwargs):
        decision = real_judge(*args, **kwargs)
        if decision.other is not None:
            other.forget([decision.other.id])
        return decision

    monkeypatch.setattr(writer.saving, "judge_new_card", judge_then_forget)
    writer.save("Use ruff for linting the Python code", "decision", confidence=0.95)
    assert not (paths.memory / "cards" / f"{card.id}.md").exists()


def test_concurrent_cli_edit_and_forget_agree(run_cli, project):
    """Through the real CLI, two processes at once: whenever forget says "Erased 1", the card's
    file is gone afterwards."""
    env_lexical = {"MEMAGENT_EMBEDDER": "lexical"}
    env = {**os.environ, **env_lexical}
    base = [sys.executable, "-m", "memagent", "-C", str(project), "memory"]
    for n in range(6):
        added = run_cli(
            "-C",
            str(project),
            "memory",
            "add",
            f"Round {n}: the cache lives in /var/cache/app{n}",
            "--json",
            env=env_lexical,
        )
        assert added.returncode == 0, added.stderr
        card_id = json.loads(added.stdout)["card"]["id"]
        edit = subprocess.Popen(
            [*base, "edit", card_id, f"Round {n}: the cache lives in /srv/cache/app{n}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        forget = subprocess.Popen(
            [*base, "forget", card_id, "--yes"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        forget_out, _ = forget.communicate(timeout=120)
        edit.communicate(timeout=120)
        if "Erased 1 memory" in forget_out:
            assert not list((project / ".memory").rglob(f"{card_id}.md")), f"round {n}: the card came back"
