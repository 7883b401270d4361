"""`memagent skills list|new`, including a procedure memory card turned into a skill."""

from __future__ import annotations

import json

import frontmatter

from memagent.skills import discover_skills


def test_new_then_list_then_refuse_a_duplicate(run_cli, project, isolated_env):
    created = run_cli("-C", str(project), "skills", "new", "deploy-app", "-d", "Deploy the app to staging.")
    assert created.returncode == 0, created.stderr
    assert created.stdout == "created .agents/skills/deploy-app/SKILL.md\n"
    post = frontmatter.load(project / ".agents" / "skills" / "deploy-app" / "SKILL.md")
    assert post.metadata == {"name": "deploy-app", "description": "Deploy the app to staging."}
    user_skill = isolated_env / "skills" / "notes"
    user_skill.mkdir(parents=True)
    (user_skill / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nbody\n")
    bad = project / ".claude" / "skills" / "bad"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\n: : :\n---\n")

    listed = run_cli("-C", str(project), "skills", "list")
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == [
        "deploy-app  Deploy the app to staging.  [project (.agents)]",
        "notes       Take notes.  [user]",
    ]
    assert f"memagent: warning: skill skipped: {bad / 'SKILL.md'}: bad front matter" in listed.stderr
    as_json = json.loads(run_cli("-C", str(project), "skills", "list", "--json").stdout)
    assert [s["name"] for s in as_json["skills"]] == ["deploy-app", "notes"] and len(as_json["problems"]) == 1

    again = run_cli("-C", str(project), "skills", "new", "deploy-app")
    assert again.returncode == 2 and "already exists" in again.stderr and again.stderr.count("\n") == 1
    bad_name = run_cli("-C", str(project), "skills", "new", "Bad Name")
    assert bad_name.returncode == 2 and "lowercase letters" in bad_name.stderr
    nothing = run_cli("-C", str(project), "skills", "new")
    assert nothing.returncode == 2 and "give a NAME or --from" in nothing.stderr


def test_a_procedure_card_becomes_a_skill(run_cli, paths, open_service):
    service = open_service()
    procedure = service.save(
        "To release: run the tests, bump the version in pyproject.toml, tag vX.Y.Z and push the tag.",
        "procedure",
        confidence=0.9,
        source="user",
    ).card
    fact = service.save("The CI runs on GitHub Actions with two workers.", "fact", confidence=0.9).card
    service.close()
    root = str(paths.root)

    made = run_cli("-C", root, "skills", "new", "--from", procedure.id)
    assert made.returncode == 0, made.stderr
    name = made.stdout.strip().split("/")[-2]
    assert name == "to-release-run-the-tests-bump-the"
    post = frontmatter.load(paths.root / ".agents" / "skills" / name / "SKILL.md")
    assert post.metadata["description"].startswith("To release: run the tests")
    assert post.metadata["source"] == f"memagent memory card {procedure.id}"
    assert "tag vX.Y.Z and push the tag." in post.content
    assert [s.name for s in discover_skills(paths.root, paths.home).skills] == [name]

    refused = run_cli("-C", root, "skills", "new", "--from", fact.id)
    assert refused.returncode == 1
    assert refused.stderr == f"memagent: memory {fact.id} is a fact card; only procedure cards become skills\n"
    missing = run_cli("-C", root, "skills", "new", "--from", "m_000000000000")
    assert missing.returncode == 1 and "no memory m_000000000000" in missing.stderr
