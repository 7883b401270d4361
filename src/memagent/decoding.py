"""How memagent turns bytes it did not write into text, and back.

Input that is not UTF-8 (a prompt piped from a legacy tool, a Latin-1 source file) is decoded by
one policy, in this order:

1. a byte-order mark (UTF-8, UTF-16, UTF-32) decides;
2. valid UTF-8 is UTF-8;
3. a coding declaration in the first two lines (``# -*- coding: latin-1 -*-``, as Python, Emacs
   and vim write it) is used when it decodes the bytes;
4. text whose non-ASCII bytes come one or two at a time (the accented letters of Western
   European text) is Windows-1252, else Latin-1; anything else (Cyrillic, Greek, CJK, …) is what
   charset-normalizer detects;
5. bytes that none of these decode are decoded as UTF-8 with replacement characters (�), and the
   result says so (:attr:`Decoded.replaced`).

:func:`looks_binary` tells text from binary data (NUL bytes without a UTF-16/32 mark, or many
control characters). :func:`scrub` replaces lone surrogates (what Python's ``surrogateescape``
leaves of undecodable bytes) so that no such string reaches a file or the API.

A leaf: it imports nothing of memagent.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import TypeVar, overload

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
DECLARATION = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)|^.*?-\*-.*?coding:[ \t]*([-\w.]+)", re.MULTILINE)
SURROGATES = re.compile("[\ud800-\udfff]")
SHORT_RUN = 2
WESTERN_SHARE = 0.5  # at least this share of non-ASCII bytes in short runs: Western European text
CONTROL_SHARE = 0.01  # more control characters than this share: binary
SNIFF_BYTES = 8192
LABELS = {
    "cp1252": "windows-1252",
    "iso8859-1": "Latin-1",
    "cp932": "Shift-JIS (cp932)",
    "shift_jis": "Shift-JIS",
    "cp1251": "windows-1251",
    "euc_jp": "EUC-JP",
    "euc_kr": "EUC-KR",
    "big5": "Big5",
    "gb18030": "GB18030",
}
_CONTROL = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")


@dataclass(frozen=True)
class Decoded:
    """Text decoded from bytes, and how: enough to write it back the same way."""

    text: str
    encoding: str  # a Python codec name ("utf-8", "cp1252", "utf-16-le", …)
    bom: bytes = b""
    replaced: bool = False  # undecodable bytes became U+FFFD

    @property
    def is_utf8(self) -> bool:
        return codecs.lookup(self.encoding).name == "utf-8"

    @property
    def label(self) -> str:
        """How the encoding is named to people: ``UTF-8``, ``windows-1252``, ``UTF-16 (with BOM)``."""
        name = codecs.lookup(self.encoding).name
        if name.startswith("utf"):
            shown = name.upper().removesuffix("-LE").removesuffix("-BE") if self.bom else name.upper()
        else:
            shown = LABELS.get(name, name)
        return f"{shown} (with BOM)" if self.bom else shown

    def encode(self, text: str) -> bytes:
        """``text`` in this encoding, BOM first; UnicodeEncodeError for characters it cannot hold."""
        return self.bom + text.encode(self.encoding)


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (they cannot be written as UTF-8)."""
    return SURROGATES.sub("\ufffd", text) if SURROGATES.search(text) else text


ValueT = TypeVar("ValueT")


@overload
def scrub_value(value: str) -> str: ...
@overload
def scrub_value(value: ValueT) -> ValueT: ...
def scrub_value(value: object) -> object:
    """``value`` (JSON-like: dicts, lists, strings) with every string scrubbed; the same object
    when nothing in it needed it, else a copy of the parts that changed (of the same type: a
    list stays a list, a tuple a tuple)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        items = {key: scrub_value(item) for key, item in value.items()}
        return value if all(items[key] is value[key] for key in value) else items
    if isinstance(value, (list, tuple)):
        parts = [scrub_value(item) for item in value]
        return value if all(new is old for new, old in zip(parts, value)) else type(value)(parts)
    return value


def _bom(data: bytes) -> tuple[bytes, str] | None:
    for mark, encoding in BOMS:
        if data.startswith(mark):
            return mark, encoding
    return None


def looks_binary(head: bytes) -> bool:
    """Binary data rather than text: NUL bytes (without a UTF-16/32 byte-order mark), or more
    than 1% control characters once decoded."""
    if _bom(head):
        return False
    if b"\x00" in head:
        return True
    sample = head.decode("latin-1")
    return len(_CONTROL.findall(sample)) > CONTROL_SHARE * max(len(sample), 1)


def _strict(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _declared(data: bytes) -> str | None:
    head = b"\n".join(data.split(b"\n", 2)[:2])
    match = DECLARATION.search(head)
    if not match:
        return None
    name = (match.group(1) or match.group(2)).decode("ascii", "ignore")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _short_run_share(data: bytes) -> float:
    """Of the non-ASCII bytes, the share in runs of at most two (an accented letter, or two side
    by side as in "Größe"); the letters of Cyrillic, Greek or CJK words come in longer runs."""
    high = short = run = 0
    for byte in data + b"\x00":
        if byte >= 0x80:
            run += 1
            continue
        if run:
            high += run
            short += run if run <= SHORT_RUN else 0
            run = 0
    return short / high if high else 1.0


def _detected(data: bytes) -> str | None:
    """charset-normalizer's best guess, when it decodes the bytes exactly."""
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        return None
    return best.encoding if _strict(data, best.encoding) is not None else None


def _guess(data: bytes) -> str | None:
    declared = _declared(data)
    if declared and _strict(data, declared) is not None:
        return declared
    if _short_run_share(data[: 1 << 20]) >= WESTERN_SHARE:
        return "cp1252" if _strict(data, "cp1252") is not None else "latin-1"
    return _detected(data)


def decode(data: bytes) -> Decoded:
    """Bytes as text, by the module's policy; never raises."""
    found = _bom(data)
    if found:
        mark, encoding = found
        text = data[len(mark) :].decode(encoding, errors="replace")
        return Decoded(text, encoding, mark, replaced="\ufffd" in text and _strict(data[len(mark) :], encoding) is None)
    text = _strict(data, "utf-8")
    if text is not None:
        return Decoded(text, "utf-8")
    encoding = _guess(data)
    if encoding is not None:
        return Decoded(data.decode(encoding), encoding)
    return Decoded(data.decode("utf-8", errors="replace"), "utf-8", replaced=True)


def text_from_input(data: bytes, what: str) -> tuple[str, str | None]:
    """Bytes a user handed over (stdin, an argument) as text, and one line to tell them how it was
    decoded when it was not plain UTF-8 (None when it was). Binary data is decoded with
    replacement characters, NUL bytes included, and said so."""
    if looks_binary(data[:SNIFF_BYTES]):
        text = data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
        return (
            text,
            f"{what} looks like binary data ({len(data):,} bytes); sending it as text with undecodable bytes replaced by �",
        )
    decoded = decode(data)
    return decoded.text, describe(decoded, what)


def describe(decoded: Decoded, what: str) -> str | None:
    """One line for the user when ``what`` (``stdin``, a file name) was not plain UTF-8; else None."""
    if decoded.replaced:
        return f"{what} is not valid text in any encoding memagent recognises; undecodable bytes were replaced by �"
    if decoded.is_utf8:
        return None
    return f"{what} is not UTF-8; decoded it as {decoded.label}"


__all__ = ["Decoded", "decode", "describe", "looks_binary", "scrub", "scrub_value", "text_from_input"]
