"""Export then import into a fresh project reproduces every card; the gate still applies."""

from __future__ import annotations

from memagent.config import project_paths


def test_round_trip_into_a_fresh_project(open_service, tmp_path, isolated_env):
    source = open_service("sess-x")
    a = source.save("The user prefers tea over coffee", "preference", "user", importance=0.8).card
    b = source.save("Migrations live in db/migrations", "fact", files=["db/migrations"]).card
    c = source.correct(b.id, "Migrations live in src/db/migrations").card
    d = source.save("Focus on the tokenizer bug this session", "context", "session").card
    source.note_citations(f"[Memory#{a.id}]")
    exported = source.export()
    assert {r["id"] for r in exported} == {a.id, b.id, c.id, d.id}
    assert [r["created_at"] for r in exported] == sorted(r["created_at"] for r in exported)
    source.forget_all()

    other_root = tmp_path / "other"
    other_root.mkdir()
    target = open_service("sess-y", paths=project_paths(other_root))
    progress = []
    # the user store is shared by every project: forgetting `a` there tombstoned its id for all of
    # them, so only a forced import brings it back
    assert [card_id for _, card_id, _ in target.import_cards([exported[0]]).forgotten] == [a.id]
    report = target.import_cards(exported, progress=lambda done, total: progress.append((done, total)), force=True)
    assert report.refused == [] and report.duplicates == 0 and report.added == 4
    assert progress[-1] == (4, 4)
    again = target.export()
    # an import is the user's act, not their words: every card comes back as project knowledge
    # the user vouched for (source import, user scope lowered to project); the rest is kept
    assert {r["source"] for r in again} == {"import"}
    assert {r["id"]: r["scope"] for r in again} == {a.id: "project", b.id: "project", c.id: "project", d.id: "session"}
    unchanged = (
        "content",
        "memory_type",
        "confidence",
        "importance",
        "status",
        "created_at",
        "supersedes",
        "superseded_by",
        "files",
        "provenance",
    )
    assert sorted(({k: r[k] for k in unchanged} for r in again), key=lambda r: r["content"]) == sorted(
        ({k: r[k] for k in unchanged} for r in exported), key=lambda r: r["content"]
    )
    assert target.get(b.id).status == "superseded" and target.get(b.id).superseded_by == c.id
    assert [x.id for x in target.chain(c.id)] == [b.id, c.id]

    second = target.import_cards(exported)
    assert second.added == 0 and second.duplicates == 4


def test_import_minimal_records_through_the_gate(service):
    records = [
        {"content": "Use uv to manage virtualenvs"},
        {
            "content": "The user is based in Lisbon",
            "memory_type": "fact",
            "scope": "user",
            "confidence": 0.9,
            "importance": 0.4,
            "created_at": "2025-03-01T12:00:00Z",
            "source": "user",
        },
        {"content": "Use uv for managing virtualenvs"},
        {"content": "token=" + "abcd1234efgh5678"},
        {"content": "ok"},
        {"memory_type": "fact"},
        {"content": "Unsure whether the API is REST", "confidence": 0.3},
        {"content": "Valid text but a bad type", "memory_type": "rumour"},
        {"content": "Explicit id card here", "id": "m_0123456789ab"},
        "not an object",
    ]
    report = service.import_cards(records)
    assert report.added == 3 and report.duplicates == 1
    reasons = dict(report.refused)
    assert set(reasons) == {3, 4, 5, 6, 7, 9}
    assert "secret" in reasons[3] and "abcd1234" not in reasons[3]
    assert "too short" in reasons[4]
    assert "missing content" in reasons[5]
    assert "confidence" in reasons[6]
    assert "memory_type" in reasons[7]
    assert service.list(scope="user") == []  # an imported card never claims the user's own scope
    lisbon = [card for card in service.list(scope="project") if "Lisbon" in card.content]
    assert len(lisbon) == 1 and lisbon[0].created_at.year == 2025 and lisbon[0].source == "import"
    assert service.get("m_0123456789ab") is not None
