"""Plain English for the parts of the CLI that typer (and its vendored click) word for us.

Two jobs, both applied to the built command tree so every sub-app benefits without each
command spelling it out:

- :func:`polish_help` — flags show no ``<bool>`` placeholder, list arguments read ``ID...``
  rather than ``<list[str]>``, and a choice option names its value (``--scope SCOPE``) and lists
  the choices in its help text, where they wrap between words instead of mid-word.
- :func:`usage_error_line` — a parameter error becomes one line a person can act on:
  ``--turns: 'abc' is not a whole number`` instead of pydantic's "Input should be a valid
  integer, unable to parse string as an integer".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # what typer.main.get_command returns, and the parameters in its tree
    from typer._click.core import Command, Context
    from typer.core import TyperArgument, TyperOption

    Parameter = TyperOption | TyperArgument

# pydantic error types → how to say them (``{input}`` is the value the user gave).
_PHRASES = {
    "int_parsing": "{input} is not a whole number",
    "int_type": "{input} is not a whole number",
    "int_from_float": "{input} is not a whole number",
    "float_parsing": "{input} is not a number",
    "float_type": "{input} is not a number",
    "bool_parsing": "{input} is not yes or no (use true/false)",
    "string_too_short": "must not be empty",
    "string_too_long": "is too long",
    "missing": "is required",
}
_TYPE_NAMES = {"int": "a whole number", "float": "a number", "bool": "yes or no", "str": "text"}


def _is_option(param: Parameter) -> bool:
    return getattr(param, "param_type_name", "") == "option"


def _is_argument(param: Parameter) -> bool:
    return getattr(param, "param_type_name", "") == "argument"


def _walk(command: Command) -> Iterator[Command]:
    yield command
    for sub in (getattr(command, "commands", None) or {}).values():
        yield from _walk(sub)


def _no_type(ctx: Context) -> None:
    return None


def _choices(param: Parameter) -> list[str]:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not getattr(descriptor, "is_choice", False):
        return []
    return [str(getattr(choice, "value", choice)) for choice in descriptor.choices or ()]


def _polish_param(param: Parameter) -> None:
    if _is_option(param) and getattr(param, "is_flag", False):
        param.metavar = ""  # a flag takes no value: nothing to show
        return
    choices = _choices(param)
    if choices and _is_option(param):
        longest = max(param.opts, key=len).lstrip("-")
        if param.metavar is None:
            param.metavar = longest.upper().replace("-", "_")
        help_text = param.help or ""
        if not all(choice in help_text for choice in choices):
            param.help = f"{help_text.rstrip()} One of: {', '.join(choices)}.".strip()
        return
    if _is_argument(param):
        if param.nargs != 1:
            if param.metavar is None:
                name = (param.name or "value").upper()
                param.metavar = name[:-1] if name.endswith("S") else name
            param.display_type_rich = _no_type
        elif param.metavar is not None:
            param.display_type_rich = _no_type  # ``ID`` says enough; ``<int>`` adds nothing


def _flag_help_option(command: Command) -> None:
    """The ``--help`` option is made on demand; give it no placeholder either."""
    make = command.get_help_option

    def get_help_option(ctx: Context) -> TyperOption | None:
        option = make(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = get_help_option


def polish_help(command: Command) -> Command:
    """Fix placeholders and choice lists in place on every parameter of the tree; returns it."""
    for cmd in _walk(command):
        for param in getattr(cmd, "params", ()):
            _polish_param(param)
        if hasattr(cmd, "get_help_option"):
            _flag_help_option(cmd)
    return command


def param_label(param: Parameter) -> str:
    """``--turns`` for an option (its longest name), ``ID`` for an argument."""
    if _is_option(param) and param.opts:
        return max(param.opts, key=len)
    metavar = getattr(param, "metavar", None)
    if metavar:
        return str(metavar).rstrip(".")
    return (getattr(param, "name", None) or "value").upper()


def _validation_phrase(cause: BaseException | None) -> str | None:
    errors = getattr(cause, "errors", None)  # pydantic's ValidationError, when typer coerced the value
    if not callable(errors):
        return None
    try:
        first = errors()[0]
    except (IndexError, TypeError):
        return None
    kind = first.get("type", "")
    given = first.get("input")
    shown = repr(given) if isinstance(given, str) else str(given)
    if kind in _PHRASES:
        return _PHRASES[kind].format(input=shown)
    if kind in ("enum", "literal_error"):
        expected = first.get("ctx", {}).get("expected", "")
        return f"{shown} is not one of {expected}".rstrip()
    if kind.startswith(("greater_than", "less_than")):
        limit = next(iter(first.get("ctx", {}).values()), "")
        relation = {
            "greater_than": "more than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }.get(kind, kind)
        return f"must be {relation} {limit} (got {shown})"
    message = _value_error_phrase(str(first.get("msg", "")))
    return message[:1].lower() + message[1:] if message else None


def _pass_through_phrase(message: str) -> str | None:
    match = re.fullmatch(r"Value (.+) is not a valid (.+?)\.?", message.strip())
    if not match:
        return None
    names = [part.strip() for part in match.group(2).split("|") if part.strip() != "None"]
    wanted = " or ".join(_TYPE_NAMES.get(name, name) for name in names) or "valid"
    return f"{match.group(1)} is not {wanted}"


def _value_error_phrase(message: str) -> str:
    text = re.sub(r"^[Vv]alue error, ", "", message.strip())
    return text.rstrip(".")


COMMENT_HINT = " (a word starting with # is a comment to the shell: for #3, quote it or drop the #)"


def _names_an_id(param: Parameter) -> bool:
    """An argument that takes an id a user may write as ``#3`` (its help says so: "2 or #2")."""
    return _is_argument(param) and "#" in str(getattr(param, "help", "") or "")


def usage_error_line(exc: Exception) -> str:
    """One plain line (without the ``memagent:`` prefix) for a typer/click usage error."""
    param = getattr(exc, "param", None)
    missing = type(exc).__name__ == "MissingParameter"
    if isinstance(exc, typer.BadParameter) and not missing:
        label = param_label(param) if param is not None else "value"
        phrase = (
            _validation_phrase(exc.__cause__) or _pass_through_phrase(exc.message) or _value_error_phrase(exc.message)
        )
        return f"{label}: {phrase}"
    if missing and param is not None:
        kind = "argument" if _is_argument(param) else "option"
        return f"missing {kind} {param_label(param)}" + (COMMENT_HINT if _names_an_id(param) else "")
    return exc.format_message().rstrip(".")


__all__ = ["param_label", "polish_help", "usage_error_line"]
