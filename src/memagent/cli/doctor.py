"""`memagent doctor`: paths, model, credentials (never their values), versions, memory health.

Versions come from package metadata, so the anthropic SDK is never imported here. The memory
checks (embedding backend, store) do import their libraries; each is wrapped so that a broken
piece is reported as ``unavailable: reason`` instead of failing the whole report.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import urlsplit, urlunsplit

import typer

from memagent import __version__
from memagent.cli.common import EXIT_FAILURE, JsonOption, RootOption, print_json, resolve_paths
from memagent.config import ConfigError, ProjectPaths, Settings, credentials_from_env, load_settings
from memagent.jsontypes import JsonObject, JsonValue, json_list, json_object
from memagent.trust import TrustReport
from memagent.ui.words import plural

if TYPE_CHECKING:
    from memagent.claude_settings import ClaudeSettings
    from memagent.embedding.embedders import Embedder


class PathEntry(TypedDict):
    path: str
    exists: bool


class CredentialReport(TypedDict):
    ANTHROPIC_API_KEY: str
    ANTHROPIC_AUTH_TOKEN: str
    ANTHROPIC_BASE_URL: str
    ready: bool


class RuleRow(TypedDict):
    kind: str
    rule: str
    origin: str | None


class GateReport(TypedDict, total=False):
    """The gate as a session here would have it (``error`` when it cannot be built)."""

    mode: str
    error: str
    rules: list[RuleRow]
    asks_for: list[str]
    saved_rules: int


class ClaudeFile(TypedDict):
    file: str
    path: str
    exists: bool


class ClaudeReport(TypedDict):
    files: list[ClaudeFile]
    rules: dict[str, dict[str, list[str]]]
    default_mode: list[str] | None
    hooks: list[str]
    env: list[str]
    notes: list[str]


class DoctorReport(TypedDict, total=False):
    """What ``memagent doctor`` reports (``--json`` prints it as it is); the memory parts are
    the memory layer's own JSON."""

    paths: dict[str, PathEntry]
    settings_error: str | None
    model: dict[str, str]
    credentials: CredentialReport
    sandbox: str
    sandbox_mounts: list[str]
    permissions: GateReport
    trust: TrustReport
    claude_settings: ClaudeReport
    versions: dict[str, str]
    embedding: JsonObject | str
    shared_embedder: str
    store: JsonObject
    learning: JsonObject


PACKAGES = ("anthropic", "chromadb", "typer", "rich", "pydantic", "prompt_toolkit", "onnxruntime")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"memagent": __version__, "python": platform.python_version()}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def path_report(paths: ProjectPaths) -> dict[str, PathEntry]:
    entries = {
        "project root": paths.root,
        "tasks": paths.tasks,
        "transcripts": paths.transcripts,
        "project memory": paths.memory,
        "MEMAGENT_HOME": paths.home,
        "user memory": paths.user_memory,
        "history": paths.history_file,
        "user config": paths.user_config,
        "project config": paths.project_config,
    }
    return {name: {"path": str(path), "exists": path.exists()} for name, path in entries.items()}


def redact_url(url: str) -> str:
    """Drop any ``user:password@`` part of a URL before showing it."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def credential_report(env: Mapping[str, str]) -> CredentialReport:
    creds = credentials_from_env(env)
    return {
        "ANTHROPIC_API_KEY": "set" if creds.api_key else "not set",
        "ANTHROPIC_AUTH_TOKEN": "set" if creds.auth_token else "not set",
        "ANTHROPIC_BASE_URL": redact_url(creds.base_url) if creds.base_url else "not set (api.anthropic.com)",
        "ready": creds.present,
    }


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"unavailable: {text}"


def plain(value: object) -> JsonValue:
    """Paths and tuples from the memory layer, made JSON-ready (anything else not JSON: its text)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def embedding_report() -> tuple[JsonObject | str, Embedder | None]:
    """The embedder's status and the loaded embedder (reused by the store check), or why not."""
    try:
        from memagent.embedding.embedders import embedder_status, load_embedder

        embedder = load_embedder()
        return json_object(plain(embedder_status(embedder))), embedder
    except Exception as exc:
        return _reason(exc), None


def shared_embedder_report(paths: ProjectPaths, settings: Settings) -> str:
    """Whether a running ``memagent mcp serve`` lends this home's processes its embedder."""
    if not settings.shared_embedder:
        return "off (shared_embedder = false)"
    from memagent.embedding.shared import hello, lending_address

    lent = hello(lending_address(paths.home))
    if lent is None:
        return "none lent: no `memagent mcp serve` of this home runs, so each process loads its own"
    return f"lent by a running `memagent mcp serve`: {lent.get('name')} (dim {lent.get('dim')})"


def store_report(paths: ProjectPaths, settings: Settings, embedder: Embedder | None = None) -> JsonObject:
    if not settings.memory_enabled:
        return {"status": "disabled (memory_enabled = false)"}
    service = None
    try:
        from memagent.memory.service import MemoryService

        service = MemoryService.open(paths, settings, embedder=embedder)
        service.stats()  # reads every card file, so unreadable ones are known
        skipped = [n.removeprefix("skipped ") for n in service.notices() if n.startswith("skipped ")]
        status = "ok" if not skipped else f"{plural(len(skipped), 'card file')} cannot be read (skipped)"
        return {"status": status, "unreadable_cards": [*skipped], **json_object(plain(service.backend_info()))}
    except Exception as exc:
        return {"status": "error: " + " ".join(str(exc).split())}
    finally:
        if service is not None:
            service.close()


def sandbox_report(paths: ProjectPaths, settings: Settings) -> str:
    """Which sandbox the bash tool uses here (bubblewrap, or why none)."""
    from memagent.tools.sandbox import describe

    try:
        return describe(settings, paths.root, paths.home)
    except Exception as exc:
        return _reason(exc)


def sandbox_mounts(paths: ProjectPaths, settings: Settings) -> list[str]:
    """What a sandboxed command sees here: writable, read-only protected, hidden, caches, network."""
    from memagent.tools.sandbox import mount_lines

    try:
        return mount_lines(settings, paths.root, paths.home)
    except Exception as exc:
        return [f"cannot be computed: {_reason(exc)}"]


def collect_report(paths: ProjectPaths, env: Mapping[str, str], *, check_memory: bool = True) -> DoctorReport:
    from memagent.trust import trust_report, trust_state

    trust = trust_state(paths.home, paths.root)
    settings_trusted = trust.file_trusted(paths.project_config.name)
    report: DoctorReport = {"paths": path_report(paths)}
    try:
        settings = load_settings(paths, env, trusted=settings_trusted)
        report["settings_error"] = None
    except ConfigError as exc:
        settings = Settings()
        report["settings_error"] = str(exc)
    report["model"] = {"model": settings.model, "small_model": settings.small_model}
    report["credentials"] = credential_report(env)
    report["sandbox"] = sandbox_report(paths, settings)
    report["sandbox_mounts"] = sandbox_mounts(paths, settings)
    from memagent.runtime import claude_settings_for

    claude = claude_settings_for(paths, trust)
    report["permissions"] = gate_report(paths, settings, env, settings_trusted, claude)
    report["trust"] = trust_report(paths.home, paths.root, paths.project_config)
    report["claude_settings"] = claude_report(paths, claude)
    report["versions"] = package_versions()
    if check_memory:
        report["embedding"], embedder = embedding_report()
        report["shared_embedder"] = shared_embedder_report(paths, settings)
        report["store"] = store_report(paths, settings, embedder)
        report["learning"] = learning_report(paths)
    return report


def learning_report(paths: ProjectPaths) -> JsonObject:
    """How automatic learning went: runs, failures (never silent), the last failure's reason."""
    from memagent.memory.learning_history import learning_stats

    try:
        stats = learning_stats(paths)
    except OSError as exc:
        return {"status": _reason(exc)}
    keys = ("extraction_runs", "failed_runs", "consolidation_calls", "consolidation_failed", "last_failure", "last_run")
    return {key: plain(stats.get(key)) for key in keys}


def claude_report(paths: ProjectPaths, found: ClaudeSettings) -> ClaudeReport:
    """Claude Code's settings files: which exist, the rules each gave (also among the gate's
    rules), the mode, hooks, env and what waits for trust."""
    from memagent.claude_settings import settings_files

    return {
        "files": [
            {"file": label, "path": str(path), "exists": path.exists()} for path, label, _ in settings_files(paths)
        ],
        "rules": found.rules_by_source(),
        "default_mode": list(found.default_mode) if found.default_mode else None,
        "hooks": sorted({hook.source for event in found.hooks.events.values() for hook in event}),
        "env": sorted(found.env),
        "notes": found.notes + list(found.hooks.notes),
    }


def _describe_claude(claude: ClaudeReport) -> list[str]:
    """The files, the mode, hooks and env (their rules are listed under Permissions)."""
    present = [f["file"] for f in claude["files"] if f["exists"]]
    lines = ["Claude Code settings", f"  files    {', '.join(present) if present else 'none'}"]
    if claude["default_mode"]:
        lines.append(f"  mode     {claude['default_mode'][0]}  (from {claude['default_mode'][1]})")
    if claude["hooks"]:
        lines.append(f"  hooks    from {', '.join(claude['hooks'])}")
    if claude["env"]:
        lines.append(f"  env      {', '.join(claude['env'])}")
    lines += [f"  ! {note}" for note in claude["notes"]]
    return lines


def gate_report(
    paths: ProjectPaths,
    settings: Settings,
    env: Mapping[str, str],
    settings_trusted: bool,
    claude: ClaudeSettings | None = None,
) -> GateReport:
    """The gate's policy as a session here would have it: the mode, each rule with the file it
    came from (Claude Code's settings files too), and what asks by effect."""
    from memagent.permissions import SAVED_ORIGIN
    from memagent.runtime import SessionOptions, SetupError, session_gate, session_mode

    try:
        gate = session_gate(
            paths,
            settings,
            session_mode(SessionOptions(), settings, claude),
            env,
            settings_trusted=settings_trusted,
            warn=lambda line: None,
            claude=claude,
        )
    except SetupError as exc:
        return {"mode": settings.permission_mode, "error": str(exc), "rules": [], "asks_for": [], "saved_rules": 0}
    policy = gate.policy
    rules: list[RuleRow] = [
        {"kind": kind, "rule": str(rule), "origin": rule.origin}
        for kind, group in (("deny", policy.deny), ("ask", policy.ask), ("allow", policy.allow))
        for rule in group
    ]
    return {
        "mode": policy.mode,
        "rules": rules,
        "asks_for": policy.asks_for(),
        "saved_rules": sum(1 for rule in policy.allow if rule.origin == SAVED_ORIGIN),
    }


def _describe_embedding(embedding: JsonObject | str) -> list[str]:
    if isinstance(embedding, str):
        return [embedding]
    line = f"{embedding.get('backend')} ({embedding.get('model_id') or 'no model'}, dim {embedding.get('dim')})"
    return [line] + [f"skipped: {reason}" for reason in json_list(embedding.get("fallback_reasons"))]


def _describe_permissions(perms: GateReport, trust: TrustReport, settings_name: str) -> list[str]:
    """The gate's policy (mode, each rule and where it came from, what asks) and the pinned trust."""
    from memagent.cli.trust import describe_trust

    count = {kind: sum(1 for r in perms.get("rules", []) if r["kind"] == kind) for kind in ("allow", "ask", "deny")}
    rules = ", ".join(f"{count[k]} {k}" for k in ("allow", "ask", "deny"))
    lines = [
        "Permissions",
        f"  mode     {perms.get('mode')} ({rules} rules, {perms.get('saved_rules', 0)} saved for this project)",
    ]
    if perms.get("error"):
        lines.append(f"  error    {perms['error']}")
    for rule in perms.get("rules", []):
        lines.append(f"  {rule['kind'].ljust(8)} {rule['rule']}  (from {rule['origin'] or 'settings'})")
    if perms.get("asks_for"):
        lines.append("  asks     before a call that " + ", ".join(perms.get("asks_for", [])))
    asks = trust["project_file_asks_for"]
    if not trust["trusted"]:
        state = "not trusted (`memagent trust` to trust it)"
    elif trust["changed"]:
        state = f"trusted since {trust['since']}, but {', '.join(trust['changed'])} changed since (ignored until re-trusted)"
    else:
        state = f"trusted as it is now (since {trust['since']})"
    lines.append(f"  project  {state}" + (f"; its {settings_name} asks for {', '.join(asks)}" if asks else ""))
    lines += ["  " + line.strip() for line in describe_trust(trust, settings_name) if line.strip().startswith("files:")]
    return lines


def _describe_learning(learning: JsonObject) -> list[str]:
    if "status" in learning:
        return [f"  learning   {learning['status']}"]
    if not learning.get("extraction_runs"):
        return ["  learning   no extraction run yet"]
    line = (
        f"  learning   {plural(_count(learning['extraction_runs']), 'extraction run')}, {learning['failed_runs']} failed; "
        f"{plural(_count(learning['consolidation_calls']), 'consolidation call')}, "
        f"{learning['consolidation_failed']} failed"
    )
    lines = [line]
    if learning.get("last_failure"):
        lines.append(f"             last failure: {' '.join(str(learning['last_failure']).split())[:160]}")
    return lines


def _count(value: JsonValue) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def render_text(report: DoctorReport) -> str:
    lines = ["Paths"]
    width = max(len(name) for name in report["paths"])
    for name, entry in report["paths"].items():
        state = "" if name == "project root" else ("exists" if entry["exists"] else "missing")
        lines.append(f"  {name.ljust(width)}  {entry['path']}  {state}".rstrip())
    lines += ["Model", f"  model        {report['model']['model']}", f"  small model  {report['model']['small_model']}"]
    if report.get("settings_error"):
        lines.append(f"  config error: {report['settings_error']} (showing defaults)")
    creds = report["credentials"]
    lines.append("Credentials")
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        lines.append(f"  {key.ljust(20)}  {creds[key]}")
    if not creds["ready"]:
        lines.append("  no key: chat and -p need ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN); tasks and memory do not")
    if "sandbox" in report:
        lines += ["Shell", f"  sandbox  {report['sandbox']}"]
        lines += [f"    {line}" for line in report.get("sandbox_mounts", [])]
    settings_name = Path(report["paths"]["project config"]["path"]).name
    lines += _describe_permissions(report["permissions"], report["trust"], settings_name)
    if "claude_settings" in report:
        lines += _describe_claude(report["claude_settings"])
    lines.append("Versions")
    for name, version in report["versions"].items():
        lines.append(f"  {name.ljust(14)}  {version}")
    if "embedding" in report:
        lines.append("Memory")
        embedding = _describe_embedding(report["embedding"])
        lines.append(f"  embedding  {embedding[0]}")
        lines += [f"             {more}" for more in embedding[1:]]
        if "shared_embedder" in report:
            lines.append(f"  shared     {report['shared_embedder']}")
        store = report.get("store", {})
        lines.append(f"  store      {store.get('status')}")
        lines += [f"    ! {problem}" for problem in json_list(store.get("unreadable_cards"))]
        for label, found in json_object(store.get("stores")).items():
            where = json_object(found)
            lines.append(f"    {label}: {where.get('location')} ({plural(_count(where.get('active')), 'active card')})")
        lines += _describe_learning(report.get("learning") or {})
    return "\n".join(lines) + "\n"


def doctor(
    ctx: typer.Context,
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
    skip_memory: bool = typer.Option(False, "--no-memory", help="Skip the embedding and store checks."),
) -> None:
    """Show paths in use, the model, whether a key is set, versions, and memory health.

    Exits 1 when the configuration cannot be read (the reason is in the report and on stderr)."""
    paths = resolve_paths(ctx, root)
    report = collect_report(paths, os.environ, check_memory=not skip_memory)
    if as_json:
        print_json(report)
    else:
        typer.echo(render_text(report), nl=False)
    if report.get("settings_error"):
        sys.stderr.write(f"memagent: the configuration is broken: {report['settings_error']}\n")
        raise typer.Exit(EXIT_FAILURE)
