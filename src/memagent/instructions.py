"""Project instructions: the instruction files Claude Code and Codex read, in their order.

At session start, from the most general to the most specific (the order of the text, and the
order in which a later file wins when two disagree):

1. the user's own files: ``~/.claude/CLAUDE.md``, then ``~/.claude/rules/**/*.md``, then
   ``$MEMAGENT_HOME/AGENTS.md`` (or ``CLAUDE.md`` there);
2. in every directory from the git root (the nearest ancestor holding ``.git``; the project root
   when there is none) down to the working directory (when it is inside the project; otherwise
   down to the project root): ``AGENTS.md``, ``CLAUDE.md``, ``.claude/CLAUDE.md``;
3. the project's rules, ``.claude/rules/**/*.md`` in the project root (sorted by path);
4. the private files nobody commits: ``CLAUDE.local.md`` in the same directories.

A rule file whose front matter names ``paths`` (globs relative to the project root, e.g.
``["src/**/*.py"]``) is not loaded at start but the first time the agent touches a matching
file. So are the instruction files of directories *below* the working directory: when the agent
first reads, writes, edits or searches something in ``sub/dir/``, the ``AGENTS.md``,
``CLAUDE.md``, ``.claude/CLAUDE.md`` and ``CLAUDE.local.md`` of ``sub/`` and ``sub/dir/`` are
added after that round's tool results as one marked block ("[Project instructions for …]"),
once. When a compaction drops such a block, the files are loaded again the next time their
folder is touched.

Imports: a token ``@path`` in a file's text (outside code spans and fenced blocks, not part of
an e-mail address) names another file, relative to the importing file's directory; ``@~/path``
is relative to the user's home. An imported file is inserted right after the file that imports
it, at most :data:`MAX_IMPORT_DEPTH` levels deep. Imports are confined: after resolving symlinks
and ``..`` the target must lie inside the directory searched (the git root or the project root;
``$MEMAGENT_HOME`` and the home folder for the user's files); an ``@~/`` import must lie inside
the home folder, and from a project's file it is honoured only when the user trusts the project
and never reaches the home folder's secrets (``~/.ssh``, ``~/.aws``, … as the shell sandbox hides
them). The files themselves are confined the same way: an ``AGENTS.md`` that is a symlink to a
file outside its directory (the user's ``~/.aws/credentials``, say) is not read, and a one-line
note says so. A cycle (a file importing one of its importers) is refused with a note; a file
already included is not repeated.

Budget: the text loaded at start is capped at ``max_chars``. What does not fit is cut from the
*least specific* end: the user's files go first, the working directory's last; the file that
crosses the cap is truncated (keeping its end), earlier ones are left out, and the text ends
with a note naming what was cut (the same note is offered as a warning for the user). Files
loaded later share a second budget of the same size.

The start-up text is computed once, when the feature is built: it goes into the stable system
prompt (byte-identical for the whole session, so the prompt cache keeps hitting). A compaction
keeps the system prompt, so nothing is re-injected (that would send every file twice).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from memagent.markers import Marker
from memagent.tools.mounts import SECRET_HOME_ENTRIES

INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
DIRECTORY_FILES = ("AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md")
LOCAL_FILE = "CLAUDE.local.md"
RULES_DIR = ".claude/rules"
MAX_IMPORT_DEPTH = 5
DEFAULT_MAX_CHARS = 40_000
INSTRUCTIONS_HEADER = (
    f"{Marker.INSTRUCTIONS.value} from the project's and the user's instruction files (AGENTS.md, "
    "CLAUDE.md, .claude/rules). Follow them; the more specific (later) file wins when two disagree.]"
)
NESTED_HEADER = f"{Marker.INSTRUCTIONS.value} for {{where}}, loaded when the work reached it:]"
# Kept for readers of older transcripts; nothing is re-injected after a compaction any more.
REINJECT_HEADER = f"{Marker.INSTRUCTIONS.value}, re-injected verbatim after the compaction:]"
_HOME_IMPORTABLE = frozenset({".claude"})  # the secret-looking entry a project may still import from

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_IMPORT = re.compile(r"(?<![\w@`])@((?:~/|\.{1,2}/|/)?[\w.\-/]+[\w\-/])")
_LOOKS_LIKE_PATH = re.compile(r"[/]|\.[A-Za-z0-9]{1,8}$")
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.DOTALL)
# Where a tool call's input names a file or folder (Claude Code's and memagent's spellings).


@dataclass
class InstructionFile:
    """One file that was found: where, how it came in, and what happened to it."""

    path: Path
    label: str  # shown to the model and the user (relative to the project, or ~/…)
    chars: int = 0
    imported_by: str | None = None
    status: str = "loaded"  # loaded | truncated | omitted
    text: str = ""


@dataclass
class InstructionSet:
    """Everything loaded, in order, plus notes about imports that were refused or missing."""

    files: list[InstructionFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cut_note: str | None = None

    @property
    def loaded(self) -> list[InstructionFile]:
        return [f for f in self.files if f.status != "omitted"]

    def render(self, header: str = INSTRUCTIONS_HEADER) -> str | None:
        parts = [
            f"## {f.label}" + (f" (imported by {f.imported_by})" if f.imported_by else "") + "\n\n" + f.text
            for f in self.loaded
        ]
        if not parts:
            return None
        tail = [f"[{note}]" for note in self.notes]
        if self.cut_note:
            tail.append(f"[{self.cut_note}]")
        return "\n\n".join([header, *parts, *(["\n".join(tail)] if tail else [])])


@dataclass(frozen=True)
class Places:
    """Where instruction files are looked for and what they may import."""

    root: Path  # the project root (resolved)
    top: Path  # the git root, or the project root: project files are confined to it
    memagent_home: Path
    user_home: Path
    trusted: bool = False  # a project file may import from the home folder (never its secrets)


def git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def instruction_dirs(root: Path, cwd: Path | None = None) -> tuple[Path, list[Path]]:
    """(the confinement base, the directories searched from the top down to ``cwd``, or to
    ``root`` when ``cwd`` is not inside it)."""
    root = root.resolve()
    top = git_root(root) or root
    deepest = cwd.resolve() if cwd is not None else root
    if not within(deepest, root):
        deepest = root
    chain = [deepest]
    while chain[-1] != top:
        chain.append(chain[-1].parent)
    return top, list(reversed(chain))


def find_imports(text: str) -> list[str]:
    """The ``@path`` tokens of ``text``, ignoring code spans and fenced code blocks."""
    visible = _CODE_SPAN.sub(" ", _FENCE.sub(" ", text))
    found: list[str] = []
    for match in _IMPORT.finditer(visible):
        token = match.group(1)
        if token not in found:
            found.append(token)
    return found


def rule_paths(text: str) -> tuple[list[str], str]:
    """A rule file's ``paths`` globs (empty: always loaded) and its text without front matter."""
    import yaml

    match = _FRONT_MATTER.match(text)
    if not match:
        return [], text
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return [], text
    body = text[match.end() :]
    value = meta.get("paths") if isinstance(meta, dict) else None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
    return [str(v).strip() for v in value or [] if str(v).strip()], body


def _label(path: Path, places: Places) -> str:
    for base, prefix in ((places.root, ""), (places.memagent_home, "$MEMAGENT_HOME/"), (places.user_home, "~/")):
        try:
            return prefix + path.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(path)


def within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def _home_secret(resolved: Path, home: Path) -> bool:
    try:
        relative = resolved.relative_to(home).as_posix()
    except ValueError:
        return False
    return any(
        relative == entry or relative.startswith(entry + "/")
        for entry in SECRET_HOME_ENTRIES
        if entry not in _HOME_IMPORTABLE
    )


@dataclass
class Loader:
    places: Places
    result: InstructionSet = field(default_factory=InstructionSet)
    seen: set[Path] = field(default_factory=set)

    def label(self, path: Path) -> str:
        return _label(path, self.places)

    def _where(self, bases: tuple[Path, ...]) -> str:
        if bases[0] == self.places.top:
            return "the project"
        return "$MEMAGENT_HOME" if bases[0] == self.places.memagent_home else "your home folder"

    def load(
        self,
        path: Path,
        bases: tuple[Path, ...],
        chain: tuple[Path, ...] = (),
        importer: str | None = None,
        text: str | None = None,
    ) -> None:
        resolved = path.resolve()
        if not any(within(resolved, base) for base in bases):  # a symlink leading out of where it was found
            self.result.notes.append(
                f"{self.label(path.absolute())}: a symlink to a file outside {self._where(bases)}; not read"
            )
            return
        if resolved in chain:
            self.result.notes.append(f"{importer}: import of {self.label(resolved)} refused (an import cycle)")
            return
        if resolved in self.seen:
            return
        if text is None:
            try:
                text = resolved.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                self.result.notes.append(f"{self.label(resolved)}: cannot be read ({exc.strerror or exc})")
                return
        text = text.strip()
        self.seen.add(resolved)
        label = self.label(resolved)
        self.result.files.append(InstructionFile(resolved, label, len(text), importer, text=text))
        for token in find_imports(text):
            self._import(token, resolved, bases, (*chain, resolved), label)

    def _import(self, token: str, importer: Path, bases: tuple[Path, ...], chain: tuple[Path, ...], label: str) -> None:
        if len(chain) > MAX_IMPORT_DEPTH:
            self.result.notes.append(f"{label}: @{token} not imported (imports nest deeper than {MAX_IMPORT_DEPTH})")
            return
        home = self.places.user_home
        target = home / token[2:] if token.startswith("~/") else importer.parent / token
        try:
            resolved = target.resolve()
        except (OSError, RuntimeError):
            self.result.notes.append(f"{label}: @{token} cannot be resolved")
            return
        allowed = self._import_bases(token, importer, bases, label)
        if allowed is None:
            return
        if not any(within(resolved, base) for base in allowed):
            where = "your home folder" if token.startswith("~/") else self.label(allowed[0]) or "."
            self.result.notes.append(f"{label}: @{token} refused (outside {where})")
            return
        if token.startswith("~/") and self._from_project(importer) and _home_secret(resolved, home.resolve()):
            self.result.notes.append(f"{label}: @{token} refused (a private folder of your home)")
            return
        if not resolved.is_file():
            if _LOOKS_LIKE_PATH.search(token):
                self.result.notes.append(f"{label}: @{token} not found")
            return
        self.load(resolved, allowed, chain, label)

    def _from_project(self, importer: Path) -> bool:
        return within(importer, self.places.top)

    def _import_bases(self, token: str, importer: Path, bases: tuple[Path, ...], label: str) -> tuple[Path, ...] | None:
        """Where an import may lead; None (with a note) when it may not happen at all."""
        if not token.startswith("~/"):
            return bases
        if self._from_project(importer) and not self.places.trusted:
            self.result.notes.append(
                f"{label}: @{token} refused (imports from your home folder need a trusted project)"
            )
            return None
        return (self.places.user_home.resolve(),)


def _cut_least_specific(result: InstructionSet, max_chars: int) -> None:
    """Keep the most specific (last) files whole; truncate the one that crosses the budget (its
    end is kept) and leave out every earlier one."""
    used = 0
    truncated: list[str] = []
    omitted: list[str] = []
    for item in reversed(result.files):
        room = max_chars - used
        if room <= 0:
            item.status, item.text = "omitted", ""
            omitted.append(item.label)
        elif len(item.text) > room:
            cut = len(item.text) - room
            item.status, item.text = "truncated", f"[… {cut:,} characters cut]\n" + item.text[cut:]
            truncated.append(item.label)
            used = max_chars
        else:
            used += len(item.text)
    if truncated or omitted:
        parts = [
            f"truncated {', '.join(truncated)}" if truncated else "",
            f"left out {', '.join(reversed(omitted))}" if omitted else "",
        ]
        result.cut_note = f"instruction files exceed the budget of {max_chars:,} characters: " + "; ".join(
            p for p in parts if p
        )


def _rule_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.rglob("*.md") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix())


@dataclass
class HeldRule:
    """A rule file with ``paths``: loaded the first time a matching file is touched."""

    path: Path
    globs: list[str]
    text: str


def _user_files(loader: Loader) -> None:
    places = loader.places
    user_bases = (places.user_home.resolve(),)
    claude_md = places.user_home / ".claude" / "CLAUDE.md"
    if claude_md.is_file():
        loader.load(claude_md, user_bases)
    for rule in _rule_files(places.user_home / ".claude" / "rules"):
        loader.load(rule, user_bases, text=rule_paths(_read(rule))[1])
    for name in INSTRUCTION_NAMES:
        own = places.memagent_home / name
        if own.is_file():
            loader.load(own, (places.memagent_home.resolve(), places.user_home.resolve()))
            break


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def load_instructions(
    root: Path,
    home: Path,
    max_chars: int = DEFAULT_MAX_CHARS,
    cwd: Path | None = None,
    *,
    user_home: Path | None = None,
    trusted: bool = False,
    held: list[HeldRule] | None = None,
) -> InstructionSet:
    """Find, import and budget the start-up instruction files for a project rooted at ``root``,
    worked on from ``cwd`` (a folder inside it; default: the root). Rules with ``paths`` are
    appended to ``held`` instead of loaded."""
    root = root.resolve()
    top, directories = instruction_dirs(root, cwd)
    home = home.expanduser()
    places = Places(
        root, top, home.resolve() if home.exists() else home, (user_home or Path.home()).expanduser(), trusted
    )
    loader = Loader(places)
    _user_files(loader)
    for directory in directories:
        for name in DIRECTORY_FILES:
            if (directory / name).is_file():
                loader.load(directory / name, (top,))
    for rule in _rule_files(root / RULES_DIR):
        globs, body = rule_paths(_read(rule))
        if globs and held is not None:
            held.append(HeldRule(rule, globs, body))
        elif not globs:
            loader.load(rule, (top,), text=body)
    for directory in directories:
        if (directory / LOCAL_FILE).is_file():
            loader.load(directory / LOCAL_FILE, (top,))
    _cut_least_specific(loader.result, max_chars)
    return loader.result
