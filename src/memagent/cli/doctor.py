"""`memagent doctor`: paths, model, key, versions."""

from __future__ import annotations

def doctor() -> None:
    """Show paths in use, the model, whether a key is set, and versions."""
