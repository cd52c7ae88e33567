"""`python -m mutation` (`make mutation`): mutate every target module, run its tests against
each mutant, and print `MODULE killed/total (R%)` per module and the overall score last.

Modules run two at a time (one worker process each, forking per mutant). Mutants listed in
`equivalent/*.toml` (with a reason each) are left out of the counts; every other survivor
counts against the score and is listed. Results: mutation/results/<module>.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from mutation.targets import HERE, ROOT, Equivalent, load_equivalents, load_targets

RESULTS = HERE / "results"


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


def score(result: dict, equivalents: list[Equivalent]) -> tuple[int, int, list[dict]]:
    seen: dict[tuple[str, str], int] = {}
    counted = []
    for mutant in result["mutants"]:
        key = (mutant["operator"], mutant["source"])
        seen[key] = seen.get(key, 0) + 1
        mutant["occurrence"] = seen[key]
        if not _equivalent(mutant, seen[key], result["path"], equivalents):
            counted.append(mutant)
    survivors = [m for m in counted if not m["outcome"].startswith("killed")]
    return len(counted) - len(survivors), len(counted), survivors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--module", action="append", help="only these modules (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quiet", action="store_true", help="do not list the survivors")
    args = parser.parse_args(argv)
    targets = [t for t in load_targets() if not args.module or t.module in args.module]
    equivalents = load_equivalents()
    RESULTS.mkdir(exist_ok=True)
    started = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(_run, [t.module for t in targets]))
    killed_all = total_all = 0
    lines = []
    for result in results:
        killed, total, survivors = score(result, equivalents)
        killed_all, total_all = killed_all + killed, total_all + total
        rate = killed / total if total else 1.0
        lines.append(f"{result['module']} {killed}/{total} ({rate:.0%})")
        if not args.quiet:
            for m in survivors:
                print(
                    f"  survived {m['id']} (occurrence {m['occurrence']})  {m['source']}"
                    f"  [{m['outcome']}]"
                )
    for line in lines:
        print(line)
    rate = killed_all / total_all if total_all else 1.0
    print(f"({time.monotonic() - started:.0f} s)")
    print(f"mutation score: {killed_all}/{total_all} ({rate:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
