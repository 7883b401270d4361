"""`memagent memory export` and `memagent memory import` (registered on the `memory` app)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path

import typer

from memagent.cli.common import EXIT_FAILURE, JsonOption, RootOption, fail, print_json
from memagent.cli.memory import _count, _indexing, _open, _out, _run, _StderrProgress
from memagent.jsontypes import JsonObject, JsonValue


class ExportFormat(str, Enum):
    json = "json"
    md = "md"


def _markdown(records: list[JsonObject]) -> str:
    lines = ["# memagent memories", ""]
    for rec in records:
        lines.append(f"## {rec['id']} — {rec['memory_type']}, {rec['scope']}, {rec['status']}")
        lines.append("")
        lines.append(str(rec["content"]))
        lines.append("")
        meta = [f"confidence {rec['confidence']}", f"importance {rec['importance']}", f"created {rec['created_at']}"]
        if rec.get("supersedes"):
            meta.append(f"supersedes {rec['supersedes']}")
        if rec.get("superseded_by"):
            meta.append(f"superseded by {rec['superseded_by']}")
        lines.append("*" + "; ".join(meta) + "*")
        lines.append("")
    return "\n".join(lines)


def export_command(
    ctx: typer.Context,
    fmt: ExportFormat = typer.Option(ExportFormat.json, "--format", "-f", help="json (re-importable) or md."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    root: Path | None = RootOption,
) -> None:
    """Export every card (all statuses) as JSON or Markdown."""
    service = _open(ctx, root)
    records = _run(service.export)
    text = json.dumps(records, indent=2, ensure_ascii=False) + "\n" if fmt == ExportFormat.json else _markdown(records)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        from memagent.fsutil import atomic_write

        atomic_write(output.expanduser().absolute(), text, durable=True)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_FAILURE)
    sys.stderr.write(f"Exported {_count(len(records), 'memory', 'memories')} to {output}\n")


def _read_records(path: Path) -> list[JsonValue]:
    """A JSON array, a single JSON object, or JSON Lines (a record that is not an object is refused
    by the import, one line each)."""
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}", EXIT_FAILURE)
    except UnicodeDecodeError:
        fail(f"{path} is not UTF-8 text", EXIT_FAILURE)
    stripped = text.strip()
    if not stripped:
        return []
    try:
        data: JsonValue = json.loads(stripped)
    except json.JSONDecodeError:
        return list(_json_lines(path, stripped))
    if isinstance(data, dict):
        return [data]
    if isinstance(data, list):
        return data
    fail(f"{path}: expected a JSON array of cards or JSON Lines", EXIT_FAILURE)


def _json_lines(path: Path, text: str) -> Iterator[JsonValue]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record: JsonValue = json.loads(line)
            yield record
        except json.JSONDecodeError as exc:
            fail(f"{path}:{number}: not JSON ({exc.msg})", EXIT_FAILURE)


def import_command(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="JSON array or JSON Lines; each card needs at least `content`."),
    force: bool = typer.Option(False, "--force", help="Import cards whose id was forgotten here too."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Import cards through the write gate, in batches; reports added, duplicates and refusals.

    A card whose id was forgotten here (`memagent memory forget`) is skipped, one line each,
    unless --force."""
    records = _read_records(file)
    service = _open(ctx, root)
    with _indexing(service), _StderrProgress("importing") as progress:
        report = _run(lambda: service.import_cards(records, progress=progress, force=force))
    if as_json:
        print_json(report.as_dict())
    else:
        corrected = f", {report.superseded} corrected by a newer card" if report.superseded else ""
        skipped = f", {len(report.forgotten)} forgotten here" if report.forgotten else ""
        _out(
            f"Imported {report.added} of {len(records)}: {report.duplicates} duplicates, "
            f"{len(report.refused)} refused{corrected}{skipped}."
        )
        for index, reason in report.refused[:20]:
            _out(f"  record {index + 1}: {reason}")
        if len(report.refused) > 20:
            _out(f"  … and {len(report.refused) - 20} more refusals")
        for index, card_id, when in report.forgotten:
            _out(
                f"  record {index + 1}: skipped {card_id}, forgotten here {when[:19].replace('T', ' ')} "
                "(--force imports it)"
            )
    if records and len(report.refused) == len(records):
        raise typer.Exit(EXIT_FAILURE)  # every record was refused: nothing was imported


__all__ = ["export_command", "import_command"]
