"""The limits of automatic learning are kept on disk: every ``-p`` run is a new process, not a
new allowance (``memory_auto_writes_per_day``, ``memory.quota``)."""

from __future__ import annotations

import json
import threading

import pytest

from fakeapi import FakeAnthropic
from memagent.memory.gate import RateLimiter
from memagent.memory.quota import WriteLedger
from memory.learnkit import Brain, Fact

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
FACTS = [
    Fact("we always deploy with make ship", "The project deploys with make ship.", "procedure"),
    Fact("we always lint with ruff", "The project lints with ruff.", "procedure"),
    Fact("we always test with pytest -n 2", "The project runs its tests with pytest -n 2.", "procedure"),
]


@pytest.mark.timeout(600)  # several real CLI runs: slow on a loaded machine
def test_the_daily_limit_holds_across_three_print_runs(run_cli, project):
    (project / ".memagent.toml").write_text("memory_auto_writes_per_day = 2\n")  # a project may tighten it
    brain = Brain(facts=FACTS)
    for fact in FACTS:
        with FakeAnthropic(responder=brain) as fake:
            result = run_cli(
                "-C",
                str(project),
                "-p",
                f"Remember: {fact.trigger}.",
                env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL},
                timeout=180,
            )
            assert result.returncode == 0, result.stderr
    assert len(brain.extraction_prompts) == 3
    listing = run_cli("-C", str(project), "memory", "list", "--all", "--json", env=LEXICAL)
    contents = {c["content"] for c in json.loads(listing.stdout) if c["memory_type"] != "event"}
    assert contents == {FACTS[0].content, FACTS[1].content}
    history = [json.loads(line) for line in (project / ".memory" / "local" / "history.jsonl").read_text().splitlines()]
    refused = [r for r in history if r.get("action") == "REFUSED"]
    assert len(refused) == 1 and "already saved today" in refused[0]["reason"]


def test_an_untrusted_project_may_tighten_the_daily_limit_never_loosen_it(project):
    from memagent.config import load_settings_with_notices, project_paths

    paths = project_paths(project)
    (project / ".memagent.toml").write_text("memory_auto_writes_per_day = 100000\n")
    settings, _ = load_settings_with_notices(paths, {}, {}, trusted=False)
    assert settings.memory_auto_writes_per_day == 60
    (project / ".memagent.toml").write_text("memory_auto_writes_per_day = 5\n")
    settings, _ = load_settings_with_notices(paths, {}, {}, trusted=False)
    assert settings.memory_auto_writes_per_day == 5


def test_the_ledger_counts_every_write_once_across_threads_and_starts_a_new_day(tmp_path):
    day = ["2026-11-24"]
    ledger = WriteLedger(tmp_path, today=lambda: day[0])
    workers = [threading.Thread(target=lambda n=n: [ledger.add(f"s{n % 3}") for _ in range(10)]) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert ledger.counts("s0") == (20, 60)
    limiter = RateLimiter(limit=100, per_day=60, ledger=WriteLedger(tmp_path, today=lambda: day[0]))
    assert "today" in limiter.refusal("s9")
    day[0] = "2026-11-25"
    assert limiter.refusal("s9") is None and ledger.counts("s0") == (0, 0)
    (tmp_path / "auto_writes.json").write_text("{garbage")
    assert ledger.counts("s0") == (0, 0)  # unreadable: counts as empty, never fails a save
