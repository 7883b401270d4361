"""Which projects the user trusts: a record in ``$MEMAGENT_HOME``, never in the project.

A project's own files (``.memagent.toml``, ``.mcp.json``, hooks) are untrusted input until the
user trusts the project once (``memagent trust``); only then may they widen what memagent does.
The record is keyed by the project's resolved absolute root.
"""

from __future__ import annotations

import json
from pathlib import Path

TRUST_FILE = "trusted_projects.json"


def _record(home: Path) -> Path:
    return home / TRUST_FILE


def _load(home: Path) -> dict[str, dict]:
    try:
        data = json.loads(_record(home).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, OSError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return projects if isinstance(projects, dict) else {}


def project_key(root: Path) -> str:
    return str(Path(root).resolve())


def is_trusted(home: Path, root: Path) -> bool:
    """Has the user trusted the project at ``root``? A missing or unreadable record: no."""
    return project_key(root) in _load(home)


__all__ = ["is_trusted", "project_key"]
