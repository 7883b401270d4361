"""Opening a session: what only a session does, then the agent factory for the rest.

options → trust → settings → resume → permissions → retention → model → transcript (and what a
resume brings back) → :class:`memagent.factory.Parts` → features and agent
(:func:`memagent.factory.compose_features`, :func:`memagent.factory.build_agent`). Each
capability is a :mod:`memagent.features` module; adding one is one line in ``compose_features``.
Terminal-free: the CLI passes in an approver and renders the agent's events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memagent import __version__
from memagent.agent.loop import Approver
from memagent.channel import Channel
from memagent.claude_settings import CLAUDE_NOT_TRUSTED, ClaudeSettings, read_claude_settings
from memagent.config import (
    CHANGED_SINCE_TRUSTED,
    NOT_TRUSTED,
    ConfigError,
    ProjectPaths,
    Settings,
    credentials_from_env,
    load_settings_with_notices,
    project_paths,
    rule_sources,
)
from memagent.context.conversation import Conversation
from memagent.context.oversize import AttachmentShelf
from memagent.context.policy import CompactionRequest
from memagent.context.resume import (
    Resumed,
    ResumeError,
    load_session,
    newest_of_logical_session,
    seed_conversation,
)
from memagent.context.sessions import choose_session
from memagent.context.transcript import (
    TranscriptError,
    TranscriptWriter,
    new_session_id,
    prune_transcripts,
    read_records,
)
from memagent.errors import one_line
from memagent.factory import (
    Controls,
    Parts,
    attachment_shelf,
    build_agent,
    compose_features,
    hook_condition,
    notifying,
    session_shell,
)
from memagent.features.usage import UsageFeature
from memagent.fsutil import private_dir
from memagent.jsontypes import JsonValue
from memagent.llm.metered import MeteredModel, meter_of
from memagent.llm.protocol import ChatModel
from memagent.paths import child_environment, record_data_root
from memagent.permissions import SAVED_ORIGIN, Gate, PermissionRuleError, Policy, RuleSource, parse_rule
from memagent.pricing import UsageMeter
from memagent.session import Session
from memagent.todo import TodoManager
from memagent.tools.sandbox import clear_stale_placeholders

if TYPE_CHECKING:
    from memagent.trust import TrustState


class SetupError(Exception):
    """A problem the user must fix before a session can start. ``code`` is the exit code."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


MISSING_KEY = (
    "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a bearer token, with "
    "ANTHROPIC_BASE_URL for a proxy or local server); `memagent tasks` and `memagent memory` need none"
)


@dataclass
class SessionOptions:
    """What the command line asks of a session."""

    root: Path | None = None
    model: str | None = None
    auto_approve: bool = False
    non_interactive: bool = False
    memory: bool = True
    prefetch_memory: bool = (
        True  # load the embedder and vector index at start (off: a one-shot prompt that needs no search)
    )
    memory_upkeep: bool = True  # background scans, indexing and clean-up (off: a one-shot prompt)
    resume_id: str | None = None
    continue_latest: bool = False
    permission_mode: str | None = None  # guard: --permission-mode (None: the setting)
    kind: str = "interactive"  # recorded in session_start: interactive | headless | subagent
    # the user's own command line, so trusted: rules, folders and MCP servers for this run only
    allowed_tools: tuple[str, ...] = ()  # guard: allow rules (--allowedTools)
    disallowed_tools: tuple[str, ...] = ()  # guard: deny rules (--disallowedTools)
    add_dirs: tuple[Path, ...] = ()  # folders the file tools and the sandbox may also use (--add-dir)
    mcp_servers: dict[str, JsonValue] = field(default_factory=dict)  # "mcpServers" entries (--mcp-config)
    session_id: str | None = None  # the logical session id of a new session (--session-id)
    start_source: str = "startup"  # why it starts, for SessionStart hooks ("clear" after /clear)
    system_prompt: str | None = None  # replaces the base system prompt (--system-prompt)
    append_system_prompt: str | None = None  # ends the system prompt (--append-system-prompt)
    max_rounds: int | None = None  # model calls in one turn before it stops (--max-turns; None: the agent's own)


def make_model(settings: Settings, env: Mapping[str, str] | None = None) -> ChatModel:
    creds = credentials_from_env(env)
    if not creds.present:
        raise SetupError(MISSING_KEY, code=2)
    from memagent.llm.anthropic import AnthropicModel

    return AnthropicModel(settings.model, api_key=creds.api_key, auth_token=creds.auth_token, base_url=creds.base_url)


def _settings(
    paths: ProjectPaths, options: SessionOptions, env: Mapping[str, str] | None, trust: TrustState
) -> tuple[Settings, list[str]]:
    """Settings; the project file widens only when trusted as it is now (a changed file is named)."""
    name = paths.project_config.name
    distrust = CHANGED_SINCE_TRUSTED if trust.trusted and name in trust.changed else NOT_TRUSTED
    try:
        settings, notices = load_settings_with_notices(
            paths, env, {"model": options.model}, trusted=trust.file_trusted(name), distrust=distrust
        )
    except ConfigError as exc:
        raise SetupError(str(exc)) from None
    if not options.memory:
        settings = settings.model_copy(update={"memory_enabled": False})
    if options.add_dirs:
        writable = tuple(settings.sandbox_writable) + tuple(str(d) for d in options.add_dirs)
        settings = settings.model_copy(update={"sandbox_writable": writable})
    return settings, notices


def _find_resume(paths: ProjectPaths, options: SessionOptions) -> tuple[Resumed | None, list[str], str | None]:
    """The session to continue, if any, its warnings, and (for ``-c``) which session was chosen
    and why. ``-r`` with an unknown id is an error; ``-c`` with no earlier session starts a new
    one with a warning. ``-c`` prefers the newest session that is interactive or did work
    (:func:`memagent.context.sessions.choose_session`)."""
    if options.session_id is not None and newest_of_logical_session(paths.transcripts, options.session_id):
        raise SetupError(f"session id {options.session_id} is already in use; continue it with -r {options.session_id}")
    if not (options.resume_id or options.continue_latest):
        return None, [], None
    note = None
    session_id = None
    if options.resume_id:  # the newest transcript of that logical session, else the id as given
        session_id = newest_of_logical_session(paths.transcripts, options.resume_id) or options.resume_id
    if session_id is None:
        choice = choose_session(paths.transcripts)
        if choice is None:
            return None, ["no earlier session in this project to continue; starting a new one"], None
        session_id, note = choice.info.id, f"continuing {choice.describe()}"
    try:
        resumed = load_session(paths.transcripts, session_id)
    except ResumeError as exc:
        raise SetupError(str(exc), code=1) from None
    return resumed, list(resumed.warnings), note


def logical_session_id(resumed: Resumed | None, session_id: str) -> str:
    """One logical session across ``-c``/``-r``: the id of the first session of the chain, so
    session-scope memories stay visible after a resume."""
    if resumed is None:
        return session_id
    return resumed.logical_session or resumed.session_id


def _open_conversation(
    paths: ProjectPaths,
    settings: Settings,
    session_id: str,
    resumed: Resumed | None,
    logical: str,
    shelf: AttachmentShelf,
    warnings: list[str],
    kind: str,
) -> Conversation:
    """The session's conversation over its new transcript, seeded from a resumed session."""
    try:
        transcript = TranscriptWriter.open(paths.transcripts, session_id)
    except TranscriptError as exc:
        raise SetupError(str(exc), code=1) from None
    record_data_root(paths.home, paths.root)  # other projects' sandboxes hide this one's data
    conversation = Conversation(recorder=transcript, session_id=session_id)
    conversation.start(
        model=settings.model,
        cwd=str(paths.root),
        version=__version__,
        kind=kind,
        logical_session=logical,
        **({"resumed_from": resumed.session_id} if resumed else {}),
    )
    if resumed is not None:
        warnings += seed_conversation(conversation, resumed, shelf)
    return conversation


def _processed_ids(resumed: Resumed | None, conversation: Conversation) -> set[str]:
    """Messages already mined for memories, carried across a resume."""
    if resumed is None or resumed.path is None:
        return set()
    from memagent.memory.learning import processed_ids_after_resume

    try:
        old_records = read_records(resumed.path).records
    except TranscriptError:
        return set()
    return processed_ids_after_resume(old_records, resumed.ids, conversation.ids)


COMMAND_LINE_ORIGIN = "the command line (--allowedTools / --disallowedTools)"


def session_mode(options: SessionOptions, settings: Settings, claude: ClaudeSettings | None = None) -> str:
    """--permission-mode, else --yes (bypassPermissions), else memagent's own setting when a file
    sets it, else Claude Code's ``defaultMode``, else the setting (``auto_approve = true`` is
    bypassPermissions when no mode is set)."""
    if options.permission_mode:
        return options.permission_mode
    if options.auto_approve:
        return "bypassPermissions"
    if "permission_mode" not in settings.model_fields_set and claude is not None and claude.default_mode:
        return claude.default_mode[0]
    if settings.permission_mode == "default" and settings.auto_approve:
        return "bypassPermissions"
    return settings.permission_mode


def session_gate(
    paths: ProjectPaths,
    settings: Settings,
    mode: str,
    env: Mapping[str, str] | None,
    *,
    settings_trusted: bool,
    warn: Callable[[str], None],
    command_line: RuleSource | None = None,
    claude: ClaudeSettings | None = None,
) -> Gate:
    """The session's one gate: the mode, every rule with the file it came from (user config, a
    trusted project file, the environment, Claude Code's settings files,
    ``--allowedTools``/``--disallowedTools``, the "always" answers saved for this project)."""
    from memagent.trust import TrustError, save_rule, saved_rules

    try:
        sources = [
            RuleSource(label, rules["allow"], rules["ask"], rules["deny"])
            for label, rules in rule_sources(paths, env, trusted=settings_trusted)
        ]
    except ConfigError as exc:
        raise SetupError(str(exc)) from None
    sources.append(_unsourced(settings, sources))
    if claude is not None:
        sources += [
            RuleSource(label, rules["allow"], rules["ask"], rules["deny"])
            for label, rules in claude.rules_by_source().items()
        ]
    if command_line is not None:
        sources.append(command_line)
    sources.append(RuleSource(SAVED_ORIGIN, allow=saved_rules(paths.home, paths.root)))
    try:
        policy = Policy.from_sources(mode, sources, root=paths.root)
    except PermissionRuleError as exc:
        raise SetupError(f"permissions: {exc}") from None

    def save(rule: str) -> None:
        try:
            save_rule(paths.home, paths.root, rule)
        except TrustError as exc:
            warn(f"the rule {rule} was not saved: {exc}")

    return Gate(policy, save)


def _unsourced(settings: Settings, sources: list[RuleSource]) -> RuleSource:
    """Rules the settings hold that no file or variable wrote (settings made in code)."""
    rest: dict[str, list[str]] = {}
    for kind in ("allow", "ask", "deny"):
        unclaimed = [rule for source in sources for rule in getattr(source, kind)]
        rest[kind] = []
        for rule in getattr(settings, kind):
            if rule in unclaimed:
                unclaimed.remove(rule)
            else:
                rest[kind].append(rule)
    return RuleSource("the settings", rest["allow"], rest["ask"], rest["deny"])


def _trust_notices(paths: ProjectPaths, trust: TrustState) -> list[str]:
    """One line per power file that changed since the project was trusted (other than the
    settings file, which loading settings names)."""
    lines = []
    for name in trust.changed:
        if name == paths.project_config.name:
            continue
        what = "its MCP servers are not started" if name == ".mcp.json" else "it is not used"
        lines.append(
            f"{paths.root / name} changed since you trusted this project; {what} "
            "(`memagent trust --status` shows the change, `memagent trust` accepts it)"
        )
    return lines


def claude_settings_for(paths: ProjectPaths, trust: TrustState) -> ClaudeSettings:
    """Claude Code's settings files, each of the project's widening only when trusted as it is now;
    a rule memagent cannot read is a notice, not a failure."""

    def check(rule: str) -> str | None:
        try:
            parse_rule(rule)
        except PermissionRuleError as exc:
            return str(exc)
        return None

    def why_not(label: str) -> str:
        return CHANGED_SINCE_TRUSTED if trust.trusted and label in trust.changed else CLAUDE_NOT_TRUSTED

    return read_claude_settings(paths, trusted=trust.file_trusted, why_not=why_not, check_rule=check)


def _added_dirs(options: SessionOptions, claude: ClaudeSettings, paths: ProjectPaths) -> tuple[list[Path], list[str]]:
    """--add-dir folders and the settings' ``additionalDirectories`` (relative to the project
    root), each an existing folder; a missing one is a notice."""
    found, notes = list(options.add_dirs), []
    for raw, source in claude.additional_directories:
        folder = (raw if raw.is_absolute() else paths.root / raw).resolve()
        if folder.is_dir():
            found.append(folder)
        else:
            notes.append(f"{source}: additionalDirectories: {raw} is not a folder; ignored")
    return found, notes


def _apply_retention(paths: ProjectPaths, settings: Settings, resumed: Resumed | None) -> list[str]:
    """guard: delete transcripts older than ``transcript_retention`` days (never the resumed one)."""
    if not settings.transcript_retention:
        return []
    from datetime import timedelta

    keep = {resumed.session_id} if resumed else set()
    try:
        prune_transcripts(paths.transcripts, timedelta(days=settings.transcript_retention), keep=keep)
    except OSError as exc:
        return [f"transcript retention: {one_line(exc)}"]
    return []


def open_session(
    options: SessionOptions,
    *,
    model: ChatModel | None = None,
    approver: Approver | None = None,
    env: Mapping[str, str] | None = None,
) -> Session:
    """Build a session; raises SetupError for anything the user must fix. Without an ``approver``
    a question for the user is an ApprovalRequested event of a Submit's turn (:mod:`memagent.protocol`)."""
    if options.root is not None and not Path(options.root).is_dir():
        raise SetupError(f"project root {options.root} is not a directory")
    paths = project_paths(options.root, env)
    clear_stale_placeholders(paths.root)  # stand-ins a killed session left, before any file is read
    from memagent.trust import trust_state

    trust = trust_state(paths.home, paths.root)
    claude = claude_settings_for(paths, trust)
    added, added_notes = _added_dirs(options, claude, paths)
    options = replace(options, add_dirs=tuple(added))
    settings, warnings = _settings(paths, options, env, trust)
    warnings += _trust_notices(paths, trust)
    warnings += claude.notes + added_notes
    settings = settings.model_copy(update={"hooks": settings.hooks.merged(claude.hooks)})
    resumed, resume_warnings, resume_note = _find_resume(paths, options)
    warnings += resume_warnings
    settings_trusted = trust.file_trusted(paths.project_config.name)
    gate = session_gate(
        paths,
        settings,
        session_mode(options, settings, claude),
        env,
        settings_trusted=settings_trusted,
        warn=warnings.append,
        claude=claude,
        command_line=RuleSource(COMMAND_LINE_ORIGIN, options.allowed_tools, (), options.disallowed_tools),
    )
    private_dir(paths.home)  # guard: $MEMAGENT_HOME is the user's alone (0700)
    warnings += _apply_retention(paths, settings, resumed)  # guard
    chat_model = model or MeteredModel(make_model(settings, env))  # every call metered (/cost, json output)
    session_id = new_session_id(transcripts=paths.transcripts)
    logical = options.session_id or logical_session_id(resumed, session_id)
    shelf = attachment_shelf(paths, settings, session_id)
    conversation = _open_conversation(paths, settings, session_id, resumed, logical, shelf, warnings, options.kind)
    transcript = conversation.recorder
    assert transcript is not None  # _open_conversation always records
    shell = session_shell(settings, paths.home, extra_env=dict(claude.env))
    parts = Parts(
        paths,
        settings,
        session_id,
        chat_model,
        conversation,
        TodoManager(),  # the todo feature restores a resumed session's list
        CompactionRequest(),
        resumed,
        warnings,
        {**child_environment(env), **claude.env},
        trust.file_trusted(".mcp.json"),
        logical,
        _processed_ids(resumed, conversation),
        dict(options.mcp_servers),
        tuple(options.add_dirs),
        shell,
        options.prefetch_memory,
        options.memory_upkeep,
        shell_env=shell.extra_env,
        permission_mode=lambda: gate.mode,
        start_source=options.start_source,
        project_trusted=trust.trusted,
        shelf=shelf,
    )
    features, memory_off_reason = compose_features(parts)
    if meter_of(chat_model) is None:  # a model handed in unmetered: the status line still counts
        features.insert(0, UsageFeature(UsageMeter(), settings.model))
    channel = Channel()
    controls = Controls(gate, notifying(approver or channel.approver, features), options.non_interactive)
    agent = build_agent(
        parts,
        features,
        controls,
        system_prompt=options.system_prompt,
        append_system_prompt=options.append_system_prompt,
        max_rounds=options.max_rounds,
    )
    return Session(
        agent=agent,
        paths=paths,
        settings=settings,
        session_id=session_id,
        transcript=transcript,
        todo=parts.todo,
        features=features,
        memory_off_reason=memory_off_reason,
        resumed_from=resumed.session_id if resumed else None,
        warnings=warnings,
        logical_session_id=logical,
        trusted=trust.trusted,
        claude=claude,
        resume_note=resume_note,
        channel=channel,
    )


__all__ = [
    "MISSING_KEY",
    "Session",
    "SessionOptions",
    "SetupError",
    "attachment_shelf",
    "claude_settings_for",
    "hook_condition",
    "make_model",
    "notifying",
    "open_session",
    "session_gate",
    "session_mode",
]
