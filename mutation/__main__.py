"""`python -m mutation` (`make mutation`): mutate target modules, run each module's tests
against each of its mutants, and print `MODULE killed/total (R%)` per module and the
overall score last.

`--module M` (repeatable) measures only those modules; `--changed REF` only those whose
source or judging tests changed since the git ref REF (committed or not). Modules run
`--jobs` at a time (one worker process each, forking per mutant). Mutants listed in
`equivalent/*.toml` (with a reason each) are left out of the counts; every other survivor
counts against the score and is listed. Raw results: mutation/results/<module>.json; each
measured module's score, date and commit: mutation/scores.json (checked in), from which
`--write-table` writes the table of docs/mutation.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mutation.targets import (
    HERE,
    ROOT,
    Equivalent,
    Target,
    load_equivalents,
    load_excluded,
    load_targets,
    scope,
)

RESULTS = HERE / "results"
SCORES = HERE / "scores.json"
TABLE = ROOT / "docs" / "mutation.md"
BEGIN, END = "<!-- mutation table: begin -->", "<!-- mutation table: end -->"
GOAL = 0.9


def _run(module: str) -> dict:
    output = RESULTS / f"{module}.json"
    completed = subprocess.run(
        [sys.executable, "-m", "mutation.worker", module, str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{module}: {completed.stderr[-3000:]}")
    return json.loads(output.read_text(encoding="utf-8"))


def _equivalent(mutant: dict, occurrence: int, path: str, equivalents: list[Equivalent]) -> bool:
    return any(
        e.path == path
        and e.operator == mutant["operator"]
        and e.source == mutant["source"]
        and e.occurrence in (None, occurrence)
        for e in equivalents
    )


def _killed(outcome: str) -> bool:
    # "error (pytest exit 2)": how results before collection errors counted as kills said it
    return outcome.startswith("killed") or outcome == "error (pytest exit 2)"


def score(result: dict, equivalents: list[Equivalent]) -> tuple[int, int, list[dict]]:
    seen: dict[tuple[str, str], int] = {}
    counted = []
    for mutant in result["mutants"]:
        key = (mutant["operator"], mutant["source"])
        seen[key] = seen.get(key, 0) + 1
        mutant["occurrence"] = seen[key]
        if not _equivalent(mutant, seen[key], result["path"], equivalents):
            counted.append(mutant)
    survivors = [m for m in counted if not _killed(m["outcome"])]
    return len(counted) - len(survivors), len(counted), survivors


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args],  # noqa: S607 (git from PATH, as make finds it)
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def changed_since(ref: str, targets: list[Target]) -> list[Target]:
    """The targets whose module or judging tests differ from `ref` (committed or not)."""
    changed = set(_git("diff", "--name-only", ref, "--").splitlines())
    changed |= set(_git("ls-files", "--others", "--exclude-standard").splitlines())
    return [t for t in targets if t.path in changed or changed & set(t.tests)]


def _commit(target: Target) -> str:
    """HEAD's short hash, marked `+` when the module or its tests differ from it."""
    head = _git("rev-parse", "--short=10", "HEAD")
    dirty = _git("status", "--porcelain", "--", target.path, *target.tests)
    return head + ("+" if dirty else "")


def record(scores: dict, target: Target, result: dict, equivalents: list[Equivalent]) -> None:
    killed, total, survivors = score(result, equivalents)
    scores[target.module] = {
        "killed": killed,
        "counted": total,
        "equivalent": len(result["mutants"]) - total,
        "survivors": [f"{m['line']}: {m['operator']}  {m['source']}" for m in survivors],
        "date": datetime.date.today().isoformat(),
        "commit": _commit(target),
        "seconds": round(sum(m["seconds"] for m in result["mutants"]) + result["clean_seconds"]),
    }


def rescore(scores: dict, targets: list[Target], equivalents: list[Equivalent]) -> None:
    """The recorded scores of `targets` counted again from their last raw results (the run's
    date and commit kept): an equivalent mutant listed since is left out."""
    for target in targets:
        output = RESULTS / f"{target.module}.json"
        if target.module not in scores or not output.exists():
            continue
        measured = {k: scores[target.module][k] for k in ("date", "commit", "seconds")}
        record(scores, target, json.loads(output.read_text(encoding="utf-8")), equivalents)
        scores[target.module].update(measured)
        entry = scores[target.module]
        print(f"{target.module} {entry['killed']}/{entry['counted']} (rescored)")
    SCORES.write_text(json.dumps(scores, indent=1, sort_keys=True) + "\n", "utf-8")


def load_scores(path: Path = SCORES) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def table(scores: dict, targets: list[Target], excluded: list) -> str:
    """The Markdown table of every module in scope: measured ones with their score, date
    and commit; the others said to be not measured yet, or left out with the reason."""
    lines = [
        "| module | killed / counted | score | equivalent | measured | commit | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    killed_all = counted_all = below = unmeasured = 0
    for target in targets:
        name = f"`{target.path.removeprefix('formula_assets/')}`"
        entry = scores.get(target.module)
        if entry is None:
            unmeasured += 1
            lines.append(f"| {name} | not measured yet | | | | | |")
            continue
        killed, counted = entry["killed"], entry["counted"]
        killed_all, counted_all = killed_all + killed, counted_all + counted
        rate = killed / counted if counted else 1.0
        below += rate < GOAL
        mark = " ⚠" if rate < GOAL else ""
        lines.append(
            f"| {name} | {killed} / {counted} | {rate:.0%}{mark} | {entry['equivalent']} "
            f"| {entry['date']} | {entry['commit']} | {entry['seconds']} |"
        )
    rate = killed_all / counted_all if counted_all else 1.0
    lines.append(
        f"| **measured modules** | **{killed_all} / {counted_all}** | **{rate:.1%}** | | | | |"
    )
    lines.append("")
    lines.append(
        f"{len(targets) - unmeasured} of {len(targets)} modules measured; {below} below "
        f"{GOAL:.0%} (⚠); {unmeasured} not measured yet. Left out, with the reason:"
    )
    lines.append("")
    lines += [f"* `{e.module}`: {e.reason}" for e in excluded]
    return "\n".join(lines)


def write_table(scores: dict, targets: list[Target], excluded: list, path: Path = TABLE) -> None:
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(
        f"{head}{BEGIN}\n{table(scores, targets, excluded)}\n{END}{tail}", encoding="utf-8"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--module", action="append", help="only these modules (repeatable)")
    parser.add_argument("--changed", metavar="REF", help="only modules changed since REF")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--quiet", action="store_true", help="do not list the survivors")
    parser.add_argument(
        "--write-table", action="store_true", help=f"write the table of {TABLE.name}"
    )
    parser.add_argument("--list", action="store_true", help="list the modules, run nothing")
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="score the last results again with the current equivalent lists, run nothing",
    )
    args = parser.parse_args(argv)
    all_targets = load_targets()
    targets = [t for t in all_targets if not args.module or t.module in args.module]
    if args.module and len(targets) != len(set(args.module)):
        known = {t.module for t in all_targets}
        parser.error(f"not a target: {', '.join(sorted(set(args.module) - known))}")
    if args.changed:
        targets = changed_since(args.changed, targets)
    if args.list:
        print("\n".join(t.module for t in targets))
        return 0
    if args.write_table and not (args.module or args.changed):
        targets = []  # only the table, from the recorded scores
    equivalents = load_equivalents()
    scores = load_scores()
    if args.rescore:
        rescore(scores, targets, equivalents)
        targets = []
    RESULTS.mkdir(exist_ok=True)
    started = time.monotonic()
    killed_all = total_all = 0
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for target, result in zip(
            targets, pool.map(_run, [t.module for t in targets]), strict=True
        ):
            killed, total, survivors = score(result, equivalents)
            killed_all, total_all = killed_all + killed, total_all + total
            scores = load_scores()  # another run may have recorded other modules meanwhile
            record(scores, target, result, equivalents)
            SCORES.write_text(json.dumps(scores, indent=1, sort_keys=True) + "\n", "utf-8")
            if not args.quiet:
                for m in survivors:
                    print(
                        f"  survived {m['id']} (occurrence {m['occurrence']})  {m['source']}"
                        f"  [{m['outcome']}]"
                    )
            rate = killed / total if total else 1.0
            print(f"{result['module']} {killed}/{total} ({rate:.0%})", flush=True)
    if targets:
        rate = killed_all / total_all if total_all else 1.0
        print(f"({time.monotonic() - started:.0f} s)")
        print(f"mutation score: {killed_all}/{total_all} ({rate:.0%})")
    elif not (args.write_table or args.rescore):
        print("no module to measure")
    if args.write_table:
        in_scope = set(scope())
        write_table(scores, [t for t in all_targets if t.module in in_scope], load_excluded())
        print(f"wrote the table of {TABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
