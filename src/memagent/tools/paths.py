"""Path helpers shared by the file tools: confinement to the project root, ignores, walking.

Confinement works on *resolved* paths: a path is accepted when, after following every symlink
and ``..``, it lies inside the (resolved) project root. So ``../proj/x`` that comes back into
the root is fine, while ``../other``, ``/etc/passwd`` and a symlink pointing outside are refused.

Ignores: a fixed set of directory names (VCS, memagent's own data, caches, virtualenvs) plus a
subset of the root ``.gitignore``: blank lines and ``#`` comments are skipped, a trailing ``/``
means "directories only", a pattern with another ``/`` is anchored at the root, any other
pattern matches a name at any depth; ``*``, ``?``, ``[...]`` and ``**`` work as in git.
Negations (``!``) and nested ``.gitignore`` files are not supported (negated lines are skipped).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memagent.tools.base import ToolContext, ToolError

# Directory names never walked into by glob/grep (unless the search starts inside one).
IGNORED_DIR_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".memory",
        ".transcripts",
        ".tasks",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


def project_root(ctx: ToolContext) -> Path:
    return ctx.root.expanduser().resolve()


def outputs_dir(ctx: ToolContext) -> Path:
    """Where capped tool outputs are saved in full (inside the project by default).

    Taken as written, symlinks *not* followed: a command that swaps a folder of this path for a
    link cannot make it (an extra root of ``read_file``) lead anywhere else."""
    if ctx.outputs_dir is not None:
        base = ctx.outputs_dir if ctx.outputs_dir.is_absolute() else ctx.root / ctx.outputs_dir
        return Path(os.path.abspath(base.expanduser()))
    return project_root(ctx) / ".transcripts" / "outputs"


def _is_within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def allowed_roots(ctx: ToolContext) -> tuple[Path, ...]:
    """The folders besides the project root the user gave the file tools (``--add-dir``)."""
    return tuple(Path(p).expanduser().resolve() for p in ctx.extra_roots)


def walk_base(ctx: ToolContext, start: Path) -> Path:
    """The folder a search starting at ``start`` lists paths from: the project root, or the
    added folder ``start`` lies in (whose files are then shown with absolute paths)."""
    root = project_root(ctx)
    if _is_within(start, root):
        return root
    return next((base for base in allowed_roots(ctx) if _is_within(start, base)), root)


def shown_path(base: Path, root: Path, rel: str) -> str:
    """A walked file as the model sees it: relative to the root, absolute in an added folder."""
    return rel if base == root else f"{base.as_posix().rstrip('/')}/{rel}"


def resolve_path(ctx: ToolContext, raw: str, *, extra_roots: tuple[Path, ...] = ()) -> Path:
    """Resolve ``raw`` against the project root, refusing anything that lands outside it.

    The folders of ``ctx.extra_roots`` (``--add-dir``) and ``extra_roots`` (resolved, e.g. the
    outputs directory when it was configured outside the project) are allowed too.
    """
    if not raw or not raw.strip():
        raise ToolError("Path is empty.")
    if "\x00" in raw:
        raise ToolError("Path contains a NUL byte.")
    root = project_root(ctx)
    given = Path(raw.strip()).expanduser()
    candidate = given if given.is_absolute() else root / given
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops, unreadable components
        raise ToolError(f"Cannot resolve path {raw!r}: {exc}") from exc
    for base in (root, *allowed_roots(ctx), *extra_roots):
        if _is_within(resolved, base):
            return resolved
    hint = ""
    if _is_within(Path(os.path.normpath(candidate)), root):
        hint = f" (a symlink inside the project points to {resolved})"
    raise ToolError(f"Path escapes the project root: {raw}{hint}. Only paths inside {root} are allowed.")


def display_path(ctx: ToolContext, path: Path) -> str:
    """The path as the model should see it: relative to the root when inside, else absolute."""
    root = project_root(ctx)
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return rel.as_posix() or "."


# --- glob patterns -------------------------------------------------------------------------


def expand_braces(pattern: str) -> list[str]:
    """``a.{py,md}`` -> ``[a.py, a.md]``; nested braces work; unbalanced braces stay literal."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _split_top_level_commas(pattern[start + 1 : i])
                if len(options) < 2:
                    continue
                head, tail = pattern[:start], pattern[i + 1 :]
                out: list[str] = []
                for option in options:
                    out.extend(expand_braces(head + option + tail))
                return out
    return [pattern]


def _split_top_level_commas(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "{"
        depth -= ch == "}" and depth > 0
        current.append(ch)
    parts.append("".join(current))
    return parts


def glob_to_regex(pattern: str) -> str:
    """Translate one glob (no braces) into a regex over ``/``-separated relative paths.

    ``*`` and ``?`` never cross ``/``; ``**`` as a whole segment matches any number of
    directories (including none); ``[...]`` is a character class (``[!x]`` negates).
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**", i):
            at_segment_start = i == 0 or pattern[i - 1] == "/"
            j = i + 2
            if at_segment_start and j < n and pattern[j] == "/":
                out.append("(?:[^/]*/)*")  # '**/' : zero or more directories
                i = j + 1
                continue
            if at_segment_start and j == n:
                out.append(".*")  # trailing '**' : everything below
                i = j
                continue
            out.append("[^/]*")  # 'a**b' behaves like '*'
            i = j
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if close == -1:
                out.append(re.escape(ch))
                i += 1
                continue
            body = pattern[i + 1 : close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching whole relative paths for ``pattern`` (braces expanded)."""
    alternatives = [glob_to_regex(p) for p in expand_braces(pattern)]
    return re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)


def literal_prefix(pattern: str) -> str:
    """The leading directories of ``pattern`` that contain no wildcard (``src/app/**/*.py`` -> ``src/app``)."""
    parts = pattern.split("/")
    prefix: list[str] = []
    for part in parts[:-1]:
        if any(c in part for c in "*?[{"):
            break
        prefix.append(part)
    return "/".join(prefix)


# --- ignores -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _IgnoreRule:
    regex: re.Pattern[str]
    anchored: bool  # match the whole relative path instead of the last name
    dir_only: bool


@dataclass(frozen=True)
class IgnoreRules:
    """Fixed ignored directory names plus the supported subset of the root ``.gitignore``."""

    rules: tuple[_IgnoreRule, ...] = ()

    @classmethod
    def for_root(cls, root: Path) -> IgnoreRules:
        try:
            text = (root / ".gitignore").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return cls()
        return cls.parse(text)

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        rules = []
        for line in text.splitlines():
            rule = _parse_gitignore_line(line)
            if rule is not None:
                rules.append(rule)
        return cls(tuple(rules))

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        name = rel_path.rsplit("/", 1)[-1]
        if is_dir and name in IGNORED_DIR_NAMES:
            return True
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(rel_path if rule.anchored else name):
                return True
        return False


def _parse_gitignore_line(line: str) -> _IgnoreRule | None:
    line = line.rstrip("\n").rstrip()
    if not line or line.startswith("#") or line.startswith("!"):
        return None
    if line.startswith("\\"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    if line.startswith("**/"):  # '**/name' matches at any depth, like a plain name
        rest = line[3:]
        if "/" not in rest:
            line, anchored = rest, False
    return _IgnoreRule(re.compile(glob_to_regex(line) + r"\Z", re.DOTALL), anchored, dir_only)


def walk_files(root: Path, start: Path, ignores: IgnoreRules) -> Iterator[tuple[Path, str]]:
    """Yield ``(absolute_path, path_relative_to_root)`` for files under ``start``.

    Top-down, each directory's files in name order before its subdirectories. Ignored
    directories are pruned (never entered); ignore rules apply only *below* ``start``, so a
    search that starts inside ``.git`` still works. Symlinked directories are not followed and
    symlinked files are skipped unless their target is inside the root (no content leaks out).
    """
    stack = [start]
    while stack:
        current = stack.pop()
        rel_dir = current.relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        try:
            with os.scandir(current) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:  # vanished or unreadable directory: skip it
            continue
        subdirs = []
        for entry in entries:
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not ignores.is_ignored(rel, is_dir=True):
                        subdirs.append(Path(entry.path))
                    continue
                if not entry.is_file(follow_symlinks=True) or ignores.is_ignored(rel, is_dir=False):
                    continue
                if entry.is_symlink() and not _is_within(Path(entry.path).resolve(), root):
                    continue
            except OSError:
                continue
            yield Path(entry.path), rel
        stack.extend(reversed(subdirs))
