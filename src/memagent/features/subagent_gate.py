"""What a subagent may do: its gate (the parent's, live, and read-only for a definition that lists
no tools) and the filter that picks its tools from the parent's (never one the parent lacks, never
``task`` unless listed)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from memagent.features.agent_definitions import ALL_TOOLS, AgentDefinition
from memagent.permissions import Declaration, Effect, Gate, HookVerdict, Policy, Verdict
from memagent.tools.base import RegisteredTool, Tool, ToolRegistry


class _Blank:
    """An input whose every field is empty: what a tool declares for a call that names nothing."""

    def __getattr__(self, name: str) -> str:
        return ""


def is_read_only(tool: RegisteredTool) -> bool:
    """A tool that only reads, as it declares itself (what a definition without ``tools`` gets;
    the subagent's gate still judges each call by what it declares)."""
    if tool.name == "todo" or not isinstance(tool, Tool):
        return False
    try:
        declared = tool.declare(_Blank())
    except Exception:  # a declaration that needs real input: not offered by default
        return False
    return declared.effects <= {Effect.READ}


class SubagentGate(Gate):
    """A subagent's gate: its parent's (mode and rules, "always" answers, plan mode — shared and
    live), and, for a definition that lists no tools, a refusal of every call that does more than
    read."""

    def __init__(self, parent: Gate, agent: str, *, read_only: bool) -> None:
        self.parent = parent
        self.agent = agent
        self.read_only = read_only
        self.save = None
        self._approved_calls = set()

    @property
    def policy(self) -> Policy:
        return self.parent.policy

    @policy.setter
    def policy(self, value: Policy) -> None:
        self.parent.policy = value

    @property
    def mode(self) -> str:
        return self.parent.mode

    def decide(
        self,
        name: str,
        declaration: Declaration,
        hook: HookVerdict | None = None,
        tool_input: Mapping[str, object] | None = None,
    ) -> Verdict:
        if self.read_only and not declaration.reads_only:
            reason = (
                f"the {self.agent} subagent may only read (its definition lists no tools), and {name} "
                f"{declaration.describe()}"
            )
            return Verdict("deny", reason, None, declaration)
        return self.parent.decide(name, declaration, hook, tool_input)

    def decide_command(self, command: str, *, source: str = "a custom command") -> Verdict:
        return self.parent.decide_command(command, source=source)

    def always(self, name: str, declaration: Declaration, tool_input: Mapping[str, object] | None = None) -> str | None:
        return self.parent.always(name, declaration, tool_input)

    def describe(self) -> list[str]:
        return self.parent.describe()


def tool_filter(definition: AgentDefinition, parent: ToolRegistry) -> Callable[[RegisteredTool], bool]:
    """Which tools a subagent of ``definition`` gets: never one its parent lacks, never ``task``
    unless listed, the read-only ones when the definition lists none."""
    listed = definition.tools
    prefixes = tuple(f"{name}__" for name in listed or () if name.startswith("mcp__"))

    def allow(tool: RegisteredTool) -> bool:
        if parent.get(tool.name) is None:
            return False
        if tool.name == "task" and not definition.allows_task:
            return False
        if listed is None:
            return is_read_only(tool)
        return ALL_TOOLS in listed or tool.name in listed or tool.name.startswith(prefixes)

    return allow
