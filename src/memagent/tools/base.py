"""Tool registry: each tool is a pydantic input model plus a handler, defined side by side.

The JSON schema sent to the model is derived from the input model, so the schema and the code
that validates and uses the input can never drift apart. Every failure (unknown tool, invalid
input, a handler raising :class:`ToolError` or anything else) becomes an error result the model
can read and act on; nothing here raises into the loop.

A :class:`Tool` is generic in its input model; the registry and the loop hold tools of many input
models at once, so they see each as a :class:`RegisteredTool` (everything but the input type) and
run a call through the :class:`BoundCall` its validation made.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError
from pydantic import JsonValue as PydanticJson

from memagent.jsontypes import JsonObject, JsonValue, json_object
from memagent.permissions.effects import UNDECLARED, Declaration


class ToolError(Exception):
    """A failure the model should see as an ``is_error`` tool_result. ``str()`` is the message."""


class ToolInput(BaseModel):
    """Base for tool inputs: unknown keys are rejected so typos surface as errors."""

    model_config = ConfigDict(extra="forbid")


class ToolCancelled(BaseException):
    """Raised by :attr:`ToolContext.progress` once the user cancelled the running call.

    A BaseException, like KeyboardInterrupt, so a tool's ``except Exception`` does not swallow
    it; a tool cleans up (kills what it started) and lets it propagate."""


ProgressCallback = Callable[[str], None]


@dataclass
class ToolContext:
    """What every tool may know about where it runs. Services are bound by closures instead."""

    root: Path
    session_id: str = ""
    outputs_dir: Path | None = None  # where capped outputs are saved in full
    bash_timeout: float = 120.0
    output_cap_chars: int = 30_000
    # Folders outside the root the file tools may also use (``--add-dir``), resolved.
    extra_roots: tuple[Path, ...] = ()
    # Set by the loop for the duration of one call: a long-running tool passes output chunks as
    # they come (an empty string is a heartbeat) and must call it regularly; it raises
    # ToolCancelled when the call was cancelled. None when nobody listens.
    progress: ProgressCallback | None = None
    # The subagent this call belongs to ("" for the session's own agent): what it saves (a
    # memory card) names it.
    agent: str = ""


@dataclass
class ToolOutcome:
    content: str
    is_error: bool = False
    # Image blocks (Messages-API shape) sent with the text in the tool_result, e.g. a screenshot
    # returned by an MCP server.
    images: list[JsonObject] = field(default_factory=list)
    # Facts about the run for code, not for the model (bash: ``exit_code``, ``output`` without the
    # exit line, ``timed_out``); what hooks see as ``tool_response`` is built from them.
    details: dict[str, JsonValue] = field(default_factory=dict)


InputT = TypeVar("InputT", bound=BaseModel)
Handler = Callable[[InputT, ToolContext], "str | ToolOutcome"]
# A call's input as Claude Code would spell it (``file_path`` absolute, ``old_string``, …), from
# the raw input and the project root.
InputView = Callable[[JsonObject, Path], JsonObject]


@dataclass(frozen=True)
class ClaudeName:
    """What Claude Code calls a tool and its input: the vocabulary of hooks and permission rules
    written for Claude Code (``Bash`` with ``command``, ``Edit`` with ``file_path``,
    ``old_string``, ``new_string``). memagent's own name stays valid beside it."""

    name: str
    view: InputView | None = None  # None: the input is spelled the same

    def input(self, raw: JsonObject, root: Path) -> JsonObject:
        return self.view(dict(raw), root) if self.view is not None else dict(raw)


def absolute(path: object, root: Path) -> str:
    """A path as Claude Code gives it to hooks: absolute (relative ones are under ``root``)."""
    candidate = Path(str(path)).expanduser()
    return str(candidate if candidate.is_absolute() else root / candidate)


# What a call does (memagent.permissions.effects): fixed, or read from the validated input.
Effects = Declaration | Callable[[InputT], Declaration]


@dataclass(frozen=True)
class BoundCall:
    """A validated call of one tool: its input, what it would do (for the gate) and how to run it."""

    input: BaseModel
    declare: Callable[[], Declaration]
    handle: Callable[[ToolContext], str | ToolOutcome]


@dataclass
class Tool(Generic[InputT]):
    name: str
    description: str
    input_model: type[InputT]
    handler: Handler[InputT]
    # What a call does, for the gate (which alone decides whether it runs). A tool that declares
    # nothing is taken to run code: it asks.
    effects: Effects[InputT] | None = None
    # The argument shown in a one-line summary of the call ("read_file src/app.py").
    key_argument: str | None = None
    # Long-running tools that report output through ``ToolContext.progress`` (bash) run on a
    # worker thread so the loop can show it live; the others run inline (a thread hand-off
    # costs milliseconds on a busy machine, on every call).
    streams_output: bool = False
    # Calls of this tool in one response may run at the same time (each in its own thread): the
    # ``task`` tool, whose subagents work side by side. Results still go back in call order.
    concurrent: bool = False
    # Claude Code's name for this tool and its input (hooks and rules written for Claude Code).
    claude: ClaudeName | None = None

    def claude_call(self, raw: JsonValue, root: Path) -> tuple[str, JsonObject]:
        """(name, input) of a call in Claude Code's vocabulary; the tool's own when it has none."""
        if self.claude is None:
            return self.name, dict(json_object(raw))
        return self.claude.name, self.claude.input(json_object(raw), root)

    def schema(self) -> JsonObject:
        schema: JsonObject = self.input_model.model_json_schema()
        schema.pop("title", None)
        for prop in json_object(schema.get("properties")).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        return {"name": self.name, "description": self.description, "input_schema": schema}

    def validate(self, raw: JsonValue) -> InputT:
        return self.input_model.model_validate(raw if raw is not None else {})

    def declare(self, parsed: InputT) -> Declaration:
        """What this call would do, from the validated input."""
        if self.effects is None:
            return UNDECLARED
        if isinstance(self.effects, Declaration):
            return self.effects
        return self.effects(parsed)

    def bind(self, raw: JsonValue) -> BoundCall:
        """The call ``raw`` asks for, validated; raises pydantic's ValidationError when invalid."""
        value = self.validate(raw)
        return BoundCall(value, lambda: self.declare(value), lambda ctx: self.handler(value, ctx))

    def summary(self, raw: JsonValue) -> str:
        """A short human line for the call, e.g. ``bash: pytest -q``."""
        if self.key_argument and isinstance(raw, dict) and raw.get(self.key_argument) is not None:
            value = str(raw[self.key_argument]).replace("\n", " ⏎ ")
            return value if len(value) <= 80 else value[:77] + "…"
        return ""


class RawArguments(RootModel[dict[str, PydanticJson]]):
    """A JSON object of any shape: the input of a :class:`RawSchemaTool`, validated by whoever
    runs it (its handler reads ``.root``)."""


@dataclass
class RawSchemaTool(Tool[RawArguments]):
    """A tool described by a ready-made JSON schema instead of a pydantic model.

    For tools defined elsewhere (an MCP server's): the schema is sent to the model as given and
    the input reaches the handler as :class:`RawArguments` (the JSON object in ``.root``); only
    "it is a JSON object" is checked here, the tool's owner validates the rest.
    """

    input_schema: JsonObject = field(default_factory=lambda: {"type": "object", "properties": {}})

    def schema(self) -> JsonObject:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


def tool(
    name: str,
    input_model: type[InputT],
    *,
    effects: Effects[InputT] | None = None,
    key_argument: str | None = None,
    description: str | None = None,
    claude: ClaudeName | None = None,
) -> Callable[[Handler[InputT]], Tool[InputT]]:
    """Decorator: the handler's docstring is the tool description unless one is given."""

    def wrap(fn: Handler[InputT]) -> Tool[InputT]:
        desc = description or inspect.cleandoc(fn.__doc__ or "").strip()
        if not desc:
            raise ValueError(f"tool {name!r} needs a description")
        return Tool(
            name=name,
            description=desc,
            input_model=input_model,
            handler=fn,
            effects=effects,
            key_argument=key_argument,
            claude=claude,
        )

    return wrap


def format_validation_error(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "input"
        problems.append(f"{loc}: {err.get('msg', 'invalid')}")
    return f"Invalid input for {tool_name}: " + "; ".join(problems)


class RegisteredTool(Protocol):
    """A tool as the registry, the loop and the front ends see it, whatever its input model:
    every :class:`Tool` is one. Its calls run through :meth:`bind`."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def input_model(self) -> type[BaseModel]: ...
    @property
    def key_argument(self) -> str | None: ...
    @property
    def streams_output(self) -> bool: ...
    @property
    def concurrent(self) -> bool: ...
    @property
    def claude(self) -> ClaudeName | None: ...

    def claude_call(self, raw: JsonValue, root: Path) -> tuple[str, JsonObject]: ...
    def schema(self) -> JsonObject: ...
    def bind(self, raw: JsonValue) -> BoundCall: ...
    def summary(self, raw: JsonValue) -> str: ...


@dataclass
class ToolRegistry:
    tools: dict[str, RegisteredTool] = field(default_factory=dict)
    _schemas: list[JsonObject] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, tools: Iterable[RegisteredTool]) -> ToolRegistry:
        registry = cls()
        for t in tools:
            registry.add(t)
        return registry

    def add(self, t: RegisteredTool) -> None:
        if t.name in self.tools:
            raise ValueError(f"duplicate tool name {t.name!r}")
        self.tools[t.name] = t
        self._schemas = None

    def get(self, name: str) -> RegisteredTool | None:
        return self.tools.get(name)

    def names(self) -> list[str]:
        return list(self.tools)

    def schemas(self) -> list[JsonObject]:
        """Stable order (registration order) keeps the cached prompt prefix byte-identical.

        Built once: pydantic schema generation costs milliseconds per tool on every request."""
        if self._schemas is None:
            self._schemas = [t.schema() for t in self.tools.values()]
        return self._schemas

    def parse(self, name: str, raw: JsonValue) -> tuple[RegisteredTool, BoundCall] | ToolOutcome:
        """Look up and validate; an error outcome when either fails."""
        t = self.tools.get(name)
        if t is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return ToolOutcome(f"Unknown tool {name!r}. Available tools: {known}.", is_error=True)
        try:
            return t, t.bind(raw)
        except ValidationError as exc:
            return ToolOutcome(format_validation_error(name, exc), is_error=True)

    def execute(self, t: RegisteredTool, call: BoundCall, ctx: ToolContext) -> ToolOutcome:
        try:
            result = call.handle(ctx)
        except ToolError as exc:
            return ToolOutcome(f"Error: {exc}", is_error=True)
        except Exception as exc:  # a bug in a tool must not end the session
            return ToolOutcome(f"Error: {t.name} failed: {type(exc).__name__}: {exc}", is_error=True)
        if isinstance(result, ToolOutcome):
            return result
        return ToolOutcome(str(result) if result is not None else "")

    def run(self, name: str, raw: JsonValue, ctx: ToolContext) -> ToolOutcome:
        parsed = self.parse(name, raw)
        if isinstance(parsed, ToolOutcome):
            return parsed
        return self.execute(parsed[0], parsed[1], ctx)
