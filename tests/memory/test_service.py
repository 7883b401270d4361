"""MemoryService: supersede chains, retrieval, injection blocks, citations, profile, listing."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from memagent.memory.cards import MemoryCard
from memagent.memory.profiles import render_profile
from memagent.memory.service import CITE_INSTRUCTION, format_block

BLOCK_RE = re.compile(
    r"^\[Memory#(m_[0-9a-f]{12})\] \((\w+), (\w+), conf (\d\.\d\d), (?:user-stated|agent-inferred|from tool "
    r"output, unverified), (session \S+(?: turn \d+)?|from \w+), (\d{4}-\d\d-\d\d)\) (.+)$"
)


def test_nothing_is_created_until_the_first_write(service, paths):
    assert service.search("anything at all") == []
    assert service.context_for_turn("what do we use for tests?") is None
    assert render_profile(service) is None
    assert service.stats()["total"] == 0
    assert not paths.memory.exists() and not paths.user_memory.exists()


def test_cards_go_to_their_store(service, paths):
    service.save("The user prefers short answers", "preference", "user")
    service.save("This repo uses tabs in Makefiles", "fact", "project")
    assert len(list((paths.user_memory / "cards").glob("m_*.md"))) == 1
    assert len(list((paths.memory / "cards").glob("m_*.md"))) == 1
    assert (paths.memory / "local" / "index" / "chroma.sqlite3").exists()
    assert (paths.memory / "local" / ".gitignore").read_text().splitlines()[-1] == "*"
    stats = service.stats()
    assert stats["stores"]["user"]["active"] == 1 and stats["stores"]["project"]["active"] == 1
    assert stats["by_scope"] == {"user": 1, "project": 1, "session": 0}


def test_supersede_chain_is_append_only(service):
    v1 = service.save("Tests run with pytest -n 4", "procedure", confidence=0.8).card
    v2 = service.correct(v1.id, "Tests run with pytest -n auto", source="user")
    assert v2.status == "superseded" and v2.card.supersedes == v1.id
    v3 = service.save("Tests run with pytest -n 8 on CI machines", "procedure", supersedes=v2.card.id)
    assert v3.status == "superseded"

    old = service.get(v1.id)
    assert old.status == "superseded" and old.superseded_by == v2.card.id
    assert old.content == "Tests run with pytest -n 4"  # the old text is kept
    assert [c.id for c in service.chain(v2.card.id)] == [v1.id, v2.card.id, v3.card.id]
    assert [c.status for c in service.chain(v1.id)] == ["superseded", "superseded", "active"]

    hits = service.search("how do tests run with pytest", k=5)
    assert [h.card.id for h in hits] == [v3.card.id]
    everything = service.search("how do tests run with pytest", k=5, include_inactive=True)
    # superseded cards are shown only with their successor, as its history (newest first)
    assert [h.card.id for h in everything] == [v3.card.id]
    assert [c.id for c in everything[0].history] == [v2.card.id, v1.id]

    again = service.correct(v1.id, "Tests run with pytest -n 2")
    assert again.status == "refused" and "already superseded" in again.reason
    assert service.correct("m_000000000000", "whatever text").status == "refused"


def test_correction_is_not_refused_as_a_duplicate_of_what_it_corrects(service):
    v1 = service.save("The API server listens on port 8080", "fact").card
    v2 = service.correct(v1.id, "The API server listens on port 8081")
    assert v2.status == "superseded"


def test_search_filters_and_scores(service):
    service.save("Use black for formatting Python code", "decision")
    service.save("The user likes concise commit messages", "preference", "user")
    service.save("Formatting is checked in CI by the lint job", "fact")
    hits = service.search("code formatting", k=5)
    assert hits and all(h.score > 0 for h in hits)
    assert hits == sorted(hits, key=lambda h: -h.score)
    assert {"dense", "lexical", "fused", "confidence"} <= set(hits[0].parts)
    only_decisions = service.search("code formatting", k=5, memory_type="decision")
    assert [h.card.memory_type for h in only_decisions] == ["decision"]
    only_user = service.search("commit messages", k=5, scope="user")
    assert only_user and all(h.card.scope == "user" for h in only_user)
    assert service.search("   ") == []


def test_session_cards_are_private_to_their_session(open_service):
    s1 = open_service("sess-one")
    card = s1.save("For this session, the focus is the parser rewrite", "context", "session").card
    assert card.scope_id == "sess-one"
    assert [h.card.id for h in s1.search("parser rewrite focus")] == [card.id]
    s2 = open_service("sess-two")
    assert s2.search("parser rewrite focus") == []
    no_session = open_service("")
    assert [h.card.id for h in no_session.search("parser rewrite focus")] == [card.id]
    refused = no_session.save("Some session-only note here", "context", "session")
    assert refused.status == "refused" and "session" in refused.reason


def test_context_for_turn_blocks(open_service):
    s1 = open_service("sess-a")
    decision = s1.save(
        "Use pytest-xdist to run the tests in parallel",
        "decision",
        confidence=0.9,
        provenance={"turn": 4, "quote": "let's parallelise"},
    ).card
    s1.save("The user's favourite editor is Helix", "preference", "user")
    s2 = open_service("sess-b")
    text = s2.context_for_turn("how should I run the tests?")
    assert text is not None
    lines = text.splitlines()
    assert lines[-1] == CITE_INSTRUCTION
    blocks = [BLOCK_RE.match(line) for line in lines if line.startswith("[Memory#")]
    assert blocks and all(blocks)
    first = next(b for b in blocks if b.group(1) == decision.id)
    assert first.groups()[1:6] == (
        "decision",
        "project",
        "0.90",
        "session sess-a turn 4",
        decision.created_at.date().isoformat(),
    )
    assert first.group(7) == "Use pytest-xdist to run the tests in parallel"
    assert lines[0] == "Relevant long-term memories:" and len(lines) == len(blocks) + 2


def test_context_for_turn_skips_trivial_and_irrelevant_turns(service):
    service.save("Use pytest-xdist to run the tests in parallel", "decision")
    assert service.context_for_turn("thanks!") is None
    assert service.context_for_turn("ok") is None
    assert service.context_for_turn("What is the capital of Mongolia's neighbour Kazakhstan?") is None


def test_vague_follow_up_uses_recent_context(service):
    card = service.save("The staging database costs 40 dollars a month", "fact").card
    text = service.context_for_turn("how much?", recent=["what does the staging database cost?"])
    assert text is not None and card.id in text


def test_format_block_without_session():
    card = MemoryCard(content="Line one\nline two", source="user", created_at=datetime(2026, 11, 20, tzinfo=UTC))
    assert format_block(card) == (
        f"[Memory#{card.id}] (fact, project, conf 0.80, user-stated, from user, 2026-11-20) Line one line two"
    )


@pytest.mark.parametrize(
    "source, label",
    [("user", "user-stated"), ("assistant", "agent-inferred"), ("tool", "from tool output, unverified")],
)
def test_format_block_carries_the_trust_of_its_source(source, label):
    card = MemoryCard(content="The API listens on port 8443.", source=source)
    assert f"conf 0.80, {label}, " in format_block(card)


def test_note_citations_updates_usage(service):
    cited = service.save("Releases are cut from main every Tuesday", "procedure").card
    other = service.save("The docs site is built with mkdocs-material", "fact").card
    text = f"Per [Memory#{cited.id}] releases go out Tuesday; [Memory#{cited.id}] again; [Memory#m_ffffffffffff]."
    assert service.note_citations(text) == [cited.id]
    after = service.get(cited.id)
    assert after.access_count == 1 and after.last_used_at is not None
    assert service.get(other.id).access_count == 0
    service.note_citations(f"[Memory#{cited.id}]")
    assert service.get(cited.id).access_count == 2
    assert service.note_citations("no citations here") == []


def test_profile_is_stable_and_budgeted(service, paths):
    assert render_profile(service, paths) is None
    service.save("The user prefers British spelling", "preference", "user", importance=0.9)
    service.save("Never push directly to main", "constraint", "project", importance=0.8)
    service.save("Ran the linter once on Monday", "event", "project")
    service.save("Minor preference for two blank lines", "preference", "project", importance=0.2)
    profile = render_profile(service, paths)
    assert profile is not None
    assert "British spelling" in profile and "Never push directly to main" in profile
    assert "Ran the linter" not in profile and "two blank lines" not in profile
    assert profile.index("User profile") < profile.index("Project profile")
    assert render_profile(service, paths) == profile
    small = render_profile(service, paths, max_tokens=40)  # a budget per profile (user, project)
    assert small is None or all(len(part.encode()) <= 160 for part in small.split("\n\n"))


def test_list_pages_newest_first(service):
    texts = [
        "The build uses setuptools",
        "Docker images are pushed to ghcr.io",
        "The changelog follows keep-a-changelog",
    ]
    ids = [service.save(text, "fact").card.id for text in texts]
    assert len(set(ids)) == 3
    v2 = service.correct(ids[0], "The build uses hatchling now").card
    newest_first = [c.id for c in service.list()]
    assert newest_first == [v2.id, ids[2], ids[1]]
    assert [c.id for c in service.list(limit=2, offset=1)] == [ids[2], ids[1]]
    assert [c.id for c in service.list(status="superseded")] == [ids[0]]
    assert len(service.list(include_all=True)) == 4
    assert service.list(memory_type="decision") == []


def test_stats_counts(service):
    a = service.save("Prefers pnpm over npm", "preference", "user").card
    service.save("The service runs on Kubernetes", "fact")
    service.correct(a.id, "Prefers pnpm over npm and yarn")
    stats = service.stats()
    assert stats["active"] == 2 and stats["total"] == 3
    assert stats["by_status"]["superseded"] == 1
    assert stats["by_type"]["preference"] == 1 and stats["by_type"]["fact"] == 1
    assert stats["embedder"]["dim"] == 384


def test_changes_from_another_process_are_seen(open_service):
    reader = open_service("r")
    assert reader.search("favourite database") == []
    writer = open_service("w")
    card = writer.save("The team's favourite database is PostgreSQL", "fact").card
    assert [h.card.id for h in reader.search("favourite database")] == [card.id]


def test_update_card_changes_metadata_and_moves_between_collections(service):
    card = service.save("The nightly job emails the on-call engineer", "fact").card
    archived = service.update_card(card.id, status="archived", importance=0.9)
    assert archived.status == "archived" and archived.importance == 0.9 and archived.updated_at >= card.updated_at
    assert service.search("nightly job emails") == []
    assert [h.card.id for h in service.search("nightly job emails", include_inactive=True)] == [card.id]
    restored = service.update_card(card.id, status="active")
    assert [h.card.id for h in service.search("nightly job emails")] == [restored.id]
    assert service.update_card("m_000000000000", status="archived") is None
    import pytest

    with pytest.raises(ValueError):
        service.update_card(card.id, content="new text")
    with pytest.raises(ValueError):
        service.update_card(card.id, confidence=3)


def test_person_and_query_reach_the_ranker(service):
    alice = service.save("Has a dog called Biscuit", "fact", "user", person="Alice", relationship="sister").card
    bob = service.save("Has a cat called Biscuit", "fact", "user", person="Bob", relationship="colleague").card
    hits = {h.card.id: h for h in service.search("what pet does Alice have called Biscuit?", k=2)}
    assert hits[alice.id].parts["person"] == 1.0 and hits[bob.id].parts["person"] == 0.0
    assert hits[alice.id].card.relationship == "sister"


WRITER = """
import sys
from memagent.config import Settings, project_paths
from memagent.embedding.embedders import load_embedder
from memagent.memory.service import MemoryService
service = MemoryService.open(project_paths(sys.argv[1]), Settings(), "writer", embedder=load_embedder("numpy"))
if sys.argv[2] == "add":
    print(service.save("Production runs in the us-east-2 region", "fact").card.id)
else:
    print(service.forget([sys.argv[3]]))
service.close()
"""


def test_writes_from_another_process_reach_dense_search(service, paths):
    """Chroma's embedded vector index is per process; the service reloads it on a foreign write."""
    import subprocess
    import sys

    own = service.save("The staging cluster runs in eu-west-1", "fact").card
    assert service.search("where is staging hosted")

    def writer(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", WRITER, str(paths.root), *args], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    other_id = writer("add")
    hits = {h.card.id: h for h in service.search("which region hosts production?")}
    assert other_id in hits and hits[other_id].parts["dense"] > 0.5
    assert writer("forget", own.id) == "1"
    assert own.id not in {h.card.id for h in service.search("where is the staging cluster?")}
    assert service.save("Deploys happen from the main branch only", "fact").status == "added"
