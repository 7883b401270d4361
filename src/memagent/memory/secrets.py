"""The secret and personal-data scanner, as the memory write gate uses it (it lives in
:mod:`memagent.redact`)."""

from __future__ import annotations

from memagent.redact import SecretFinding, find_secrets, personal_data_kinds, secret_kinds
from memagent.redact import redact as _redact


def redact(text: str, mask: str = "[REDACTED]") -> str:
    """``text`` with every finding replaced by ``mask`` (for logs; the gate refuses instead)."""
    return _redact(text, mask)


__all__ = ["SecretFinding", "find_secrets", "personal_data_kinds", "redact", "secret_kinds"]
