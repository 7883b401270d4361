"""Personal data: e-mail addresses, phone numbers, payment card numbers and IBANs.

Each detector is built to leave code and logs alone, since transcripts are full of both:

* e-mail: an address with a real top-level domain; the reserved example domains
  (``example.com``, ``*.test``, ``*.invalid``, ``localhost`` …), no-reply addresses, URL user
  names (``ssh://git@host/…``) and scp-style remotes (``git@github.com:org/app``) are not people;
* phone: found by the ``phonenumbers`` library's matcher (valid numbers only, with its own
  rules against dates and timestamps), in international form (``+44 20 7946 0958``) anywhere and
  in national form for :data:`DEFAULT_REGION`; a bare run of digits (an id, a timestamp, a line
  number) is never a phone — a number must be written with ``+`` or separators;
* payment card: 13 to 19 digits (bare, or in groups split by spaces or dashes) whose prefix
  belongs to a card network and whose Luhn check digit is right;
* IBAN: checked by the ``schwifty`` library (country, length, check digits).

A cheap pattern finds candidates first; the libraries (imported on first use) judge only those.
Patterns are compiled on first use (``re`` caches them), so importing this module costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

DEFAULT_REGION = "US"  # numbers written without a country code are read as this country's

Span = tuple[int, int]

_EMAIL = (
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24})"
    r"(?![\w-]|\.[A-Za-z0-9])"
)
_NOT_PEOPLE = r"(?i)(?:^|\.)(?:example(?:\.com|\.net|\.org)?|test|invalid|localhost|local)$"
_NO_REPLY = r"(?i)no-?reply"

# (patterns start with a character class, lookbehinds after it: Python's re then skips ahead fast)
_PHONE_CANDIDATE = r"[+(\d](?<![\w.+/:#=-][+(\d])[\d ().\-]{5,22}\d(?![\w/:-]|\.\d)"
# what looks like a phone to the pattern but never is: an IP address, a date, a dotted version
_NOT_A_PHONE = r"\d{1,3}(?:\.\d{1,3}){3}|\d{4}-\d{2}-\d{2}.*|\d{1,2}\.\d{1,3}(?:\.\d{1,4})+"
_MIN_PHONE_DIGITS, _MAX_PHONE_DIGITS = 7, 15
_WINDOW = 24  # characters of context the matcher sees on each side of a candidate

_CARD_CANDIDATE = r"\d(?<![\w.-]\d)(?:[ -]?\d){12,18}(?![\w-]|\.\d)"
# (prefix range as strings, allowed lengths): the card networks' number ranges
_CARD_NETWORKS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("4", "4", (13, 16, 19)),  # Visa
    ("51", "55", (16,)),  # Mastercard
    ("2221", "2720", (16,)),  # Mastercard
    ("34", "34", (15,)),  # American Express
    ("37", "37", (15,)),
    ("6011", "6011", (16, 17, 18, 19)),  # Discover
    ("644", "649", (16, 17, 18, 19)),
    ("65", "65", (16, 17, 18, 19)),
    ("3528", "3589", (16, 17, 18, 19)),  # JCB
    ("300", "305", (14,)),  # Diners Club
    ("36", "36", (14,)),
    ("38", "39", (14,)),
    ("62", "62", (16, 17, 18, 19)),  # UnionPay
)

_IBAN_CANDIDATE = r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])"


def emails(text: str) -> Iterator[Span]:
    if "@" not in text:
        return
    for match in re.finditer(_EMAIL, text):
        start, end = match.span()
        domain = match.group(1)
        if re.search(_NOT_PEOPLE, domain) or re.search(_NO_REPLY, text[start:end]):
            continue
        if text[max(0, start - 3) : start] == "://":
            continue  # the user name of a URL (ssh://git@host/…)
        if text[end : end + 1] == ":" and text[end + 1 : end + 2] not in ("", " ", "\n", "\t"):
            continue  # an scp-style remote: git@github.com:org/app.git
        yield start, end


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def phones(text: str, region: str = DEFAULT_REGION) -> Iterator[Span]:
    for candidate in re.finditer(_PHONE_CANDIDATE, text):
        raw = candidate.group(0)
        count = len(_digits(raw))
        if not _MIN_PHONE_DIGITS <= count <= _MAX_PHONE_DIGITS or raw.isdigit() or re.fullmatch(_NOT_A_PHONE, raw):
            continue
        span = _matched_phone(text, candidate.start(), candidate.end(), region)
        if span is not None:
            yield span


def _matched_phone(text: str, start: int, end: int, region: str) -> Span | None:
    """The span phonenumbers' matcher finds inside the candidate (seen with some context)."""
    from phonenumbers import Leniency, PhoneNumberMatcher

    left = max(0, start - _WINDOW)
    window = text[left : min(len(text), end + _WINDOW)]
    for match in PhoneNumberMatcher(window, region, leniency=Leniency.VALID):
        found_start, found_end = left + match.start, left + match.end
        if found_start < end and start < found_end and not match.raw_string.isdigit():
            return found_start, found_end
    return None


def _luhn_ok(number: str) -> bool:
    total = 0
    for position, ch in enumerate(reversed(number)):
        digit = int(ch)
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _card_network(number: str) -> bool:
    for low, high, lengths in _CARD_NETWORKS:
        prefix = number[: len(low)]
        if low <= prefix <= high and len(number) in lengths:
            return True
    return False


def _grouped_like_a_card(raw: str) -> bool:
    """Bare digits, or groups split by one kind of separator (4-4-4-4, 4-6-5 …)."""
    separators = {ch for ch in raw if not ch.isdigit()}
    if not separators:
        return True
    if len(separators) > 1:
        return False
    groups = raw.split(separators.pop())
    return 3 <= len(groups) <= 5 and all(3 <= len(g) <= 6 for g in groups)


def payment_cards(text: str) -> Iterator[Span]:
    for candidate in re.finditer(_CARD_CANDIDATE, text):
        raw = candidate.group(0)
        number = _digits(raw)
        if _grouped_like_a_card(raw) and _card_network(number) and _luhn_ok(number):
            yield candidate.span()


def ibans(text: str) -> Iterator[Span]:
    for candidate in re.finditer(_IBAN_CANDIDATE, text):
        from schwifty import IBAN
        from schwifty.exceptions import SchwiftyException

        try:
            IBAN(candidate.group(0))
        except (SchwiftyException, ValueError):
            continue
        yield candidate.span()


# (kind, slug, finder) in the order they claim overlapping text
DETECTORS = (
    ("e-mail address", "email", emails),
    ("IBAN", "iban", ibans),
    ("payment card number", "payment-card", payment_cards),
    ("phone number", "phone", phones),
)

__all__ = ["DEFAULT_REGION", "DETECTORS", "emails", "ibans", "payment_cards", "phones"]
