"""Task files never keep a secret or personal data: the subject, the description and the owner
are redacted before anything is written, through the store, the CLI and the model's tool."""

from __future__ import annotations

import json

from memagent.tasks import TaskStore

TOKEN = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4e5F6g7H8"
STRIPE = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc9x"


def on_disk(root) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_subject_description_and_owner_are_redacted(tmp_path):
    store = TaskStore(tmp_path / ".tasks")
    task = store.create(f"Rotate {TOKEN}", description=f"The old key {STRIPE} leaked", owner="ana@acme-corp.io")
    assert task.subject == "Rotate [REDACTED:github-token]"
    assert "[REDACTED:stripe-key]" in task.description and task.owner == "[REDACTED:email]"
    store.update(task.id, owner="+1 415-555-0132")
    data = on_disk(tmp_path / ".tasks")
    for value in (TOKEN, STRIPE, "ana@acme-corp.io", "415-555-0132"):
        assert value.encode() not in data


def test_tasks_add_through_the_cli_is_redacted(run_cli, project):
    """Variant: `memagent tasks add` with the secret on the command line."""
    added = run_cli("-C", str(project), "tasks", "add", f"Revoke {STRIPE} today", "--json")
    assert added.returncode == 0, added.stderr
    assert STRIPE not in added.stdout and json.loads(added.stdout)["subject"] == "Revoke [REDACTED:stripe-key] today"
    assert STRIPE.encode() not in on_disk(project / ".tasks")
