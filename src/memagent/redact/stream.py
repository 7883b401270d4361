"""Redacting a stream (a long command's full output) without ever cutting a secret in two."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Self

CHUNK_BYTES = 1 << 20


def _open_key_block(data: bytes) -> bool:
    """A private key block starts in ``data`` and does not end there."""
    start = data.rfind(b"-----BEGIN ")
    return start >= 0 and b"-----END " not in data[start:]


class RedactingWriter:
    """A binary writer that passes whole lines on to ``target`` through ``redact``.

    Lines are collected up to about ``chunk_bytes`` (so a secret is never cut in two); a private
    key block that starts is held until its end line (up to 16 chunks). ``close`` (or leaving the
    ``with`` block) writes what is left; the target itself is not closed. Bytes that are not
    UTF-8 pass through unchanged.
    """

    def __init__(self, target: IO[bytes], redact: Callable[[str], str], chunk_bytes: int = CHUNK_BYTES) -> None:
        self._target = target
        self._redact = redact
        self._chunk = chunk_bytes
        self._pending = b""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_redacted(self, data: bytes) -> None:
        text = data.decode("utf-8", errors="surrogateescape")
        self._target.write(self._redact(text).encode("utf-8", errors="surrogateescape"))

    def write(self, data: bytes) -> int:
        self._pending += data
        if len(self._pending) < self._chunk:
            return len(data)
        cut = self._pending.rfind(b"\n") + 1
        ready = self._pending[:cut]
        if cut and (not _open_key_block(ready) or len(self._pending) >= 16 * self._chunk):
            self._write_redacted(ready)
            self._pending = self._pending[cut:]
        return len(data)

    def close(self) -> None:
        if self._pending:
            self._write_redacted(self._pending)
            self._pending = b""


__all__ = ["CHUNK_BYTES", "RedactingWriter"]
