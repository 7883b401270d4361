"""Find secrets and personal data in text and replace them before anything is written to disk.

A leaf room (it imports nothing else of memagent): transcripts, saved command outputs, task
files, the REPL history, the trust record and the memory write gate all use it.

What is found
    * credentials by their shape (:mod:`memagent.redact.keys`): detect-secrets' plugins plus the
      provider shapes it lacks, and private key blocks;
    * credentials by their context (:mod:`memagent.redact.phrases`): ``.env`` lines,
      ``password = …`` assignments, "the deploy password is …" in prose;
    * personal data (:mod:`memagent.redact.personal`): e-mail addresses, phone numbers, payment
      card numbers, IBANs.

Each finding names its *kind* and where it is, never the value, so a refusal can be shown to the
model or the user without leaking what it refused. :func:`redact` replaces every finding with a
placeholder naming its kind, e.g. ``[REDACTED:anthropic-key]`` or ``[REDACTED:email]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO

from memagent.redact import keys, personal, phrases
from memagent.redact.stream import CHUNK_BYTES
from memagent.redact.stream import RedactingWriter as _Writer

SECRET = "secret"
PERSONAL = "personal"


@dataclass(frozen=True)
class SecretFinding:
    """One finding: its kind ("Stripe secret key", "e-mail address"), its span, the slug used in
    placeholders, and whether it is a ``secret`` or ``personal`` data."""

    kind: str
    start: int
    end: int
    slug: str = "secret"
    category: str = SECRET

    @property
    def placeholder(self) -> str:
        return f"[REDACTED:{self.slug}]"


def _secret_candidates(text: str, lowered: str) -> Iterator[tuple[str, str, tuple[int, int]]]:
    yield from keys.key_blocks(text, lowered)
    for plugin in keys.PLUGINS:
        yield from plugin.findings(text, lowered)
    for shape in keys.SHAPES:
        yield from shape.findings(text, lowered)
    for phrase in phrases.PHRASES:
        for span in phrase.spans(text, lowered):
            yield phrase.kind, phrase.slug, span


def _personal_candidates(text: str) -> Iterator[tuple[str, str, tuple[int, int]]]:
    for kind, slug, finder in personal.DETECTORS:
        for span in finder(text):
            yield kind, slug, span


def _claim(
    findings: list[SecretFinding], candidates: Iterable[tuple[str, str, tuple[int, int]]], category: str
) -> None:
    """Add candidates that do not overlap a finding already made (earlier detectors win)."""
    for kind, slug, (start, end) in candidates:
        if end <= start or any(start < f.end and f.start < end for f in findings):
            continue
        findings.append(SecretFinding(kind, start, end, slug, category))


def find_secrets(text: str) -> list[SecretFinding]:
    """Every credential-looking span in ``text`` (non-overlapping, in order of position)."""
    findings: list[SecretFinding] = []
    _claim(findings, _secret_candidates(text, text.lower()), SECRET)
    return sorted(findings, key=lambda f: f.start)


def find_personal_data(text: str) -> list[SecretFinding]:
    """Every span of personal data in ``text`` (non-overlapping, in order of position)."""
    findings: list[SecretFinding] = []
    _claim(findings, _personal_candidates(text), PERSONAL)
    return sorted(findings, key=lambda f: f.start)


def find_sensitive(text: str) -> list[SecretFinding]:
    """Credentials and personal data (credentials win where they overlap), in order."""
    findings = find_secrets(text)
    _claim(findings, _personal_candidates(text), PERSONAL)
    return sorted(findings, key=lambda f: f.start)


def _kinds(findings: Iterable[SecretFinding]) -> list[str]:
    return list(dict.fromkeys(f.kind for f in findings))


def secret_kinds(text: str) -> list[str]:
    """The distinct kinds of credential found, in order of first appearance."""
    return _kinds(find_secrets(text))


def personal_data_kinds(text: str) -> list[str]:
    """The distinct kinds of personal data found, in order of first appearance."""
    return _kinds(find_personal_data(text))


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact(text: str, mask: str | None = None) -> str:
    """``text`` with every credential and every piece of personal data replaced by a placeholder
    naming its kind (``[REDACTED:github-token]``, ``[REDACTED:email]``), or by ``mask``."""
    if not text:
        return text
    findings = find_sensitive(text)
    if not findings:
        return text
    out, last = [], 0
    for finding in findings:
        out.append(text[last : finding.start])
        out.append(mask if mask is not None else finding.placeholder)
        last = finding.end
    out.append(text[last:])
    return "".join(out)


def redact_value(value: object) -> object:
    """Redact every string inside a JSON-like value (dicts, lists, strings), returning a copy
    only where something changed."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        items = [redact_value(item) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, dict):
        pairs = {key: redact_value(item) for key, item in value.items()}
        return value if all(pairs[k] is value[k] for k in value) else pairs
    return value


class RedactingWriter(_Writer):
    """A binary writer passing whole lines on to ``target`` with secrets and personal data
    redacted (see :class:`memagent.redact.stream.RedactingWriter`)."""

    def __init__(self, target: IO[bytes], chunk_bytes: int = CHUNK_BYTES) -> None:
        super().__init__(target, redact, chunk_bytes)


def copy_redacted(source: IO[bytes], target: IO[bytes], chunk_bytes: int = CHUNK_BYTES) -> None:
    """Copy ``source`` (from its current position) to ``target`` with secrets redacted."""
    with RedactingWriter(target, chunk_bytes) as writer:
        while data := source.read(chunk_bytes):
            writer.write(data)


__all__ = [
    "PERSONAL",
    "RedactingWriter",
    "SECRET",
    "SecretFinding",
    "contains_secret",
    "copy_redacted",
    "find_personal_data",
    "find_secrets",
    "find_sensitive",
    "personal_data_kinds",
    "redact",
    "redact_value",
    "secret_kinds",
]
