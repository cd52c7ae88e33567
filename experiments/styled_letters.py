"""Styled letters: what `distinct` changes against `fold`, and how both train.

Without arguments: parses the snapshot with both `styled_letters` options and counts the
formulae and tokens whose text differs (styled tokens apart from other compatibility
characters) and the distinct token texts. With `--lakes fold=PATH distinct=PATH` (each a lake
built cold by `refresh` with `FORMULA_ASSETS_STYLED_LETTERS` set): per lake and method, the
mean best validation MRR over the fold models' `config.json` (what decides), and Table 2's
test MRR per direction from `retrieval_scores` (for the record).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import pyarrow.parquet as pq
from upath import UPath

from benchmarks.common import print_table, write_result
from formula_assets.core.protocol import FOLDS
from formula_assets.ingest.snapshot import read_snapshot_items
from formula_assets.methods import registry
from formula_assets.syntax.mathml import MathMLError, OptNode, ParseOptions, parse_mathml
from formula_assets.training.artifacts import (
    CONFIG,
    ModelDescription,
    current_version,
    model_directory,
)

STYLE_WORDS = ("bold", "double-struck", "script", "fraktur", "sans-serif", "monospace")


def _tokens(root: OptNode) -> list[str]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node.token)
        stack.extend(reversed(node.children))
    return out


def count_changes() -> dict:
    options = {name: ParseOptions(styled_letters=name) for name in ("fold", "distinct")}
    formulae = changed = styled_formulae = 0
    tokens = changed_tokens = styled_tokens = 0
    texts: dict[str, set[str]] = {name: set() for name in options}
    pairs: Counter[tuple[str, str]] = Counter()
    for item in read_snapshot_items():
        try:
            parsed = {n: _tokens(parse_mathml(item["formula"], o)) for n, o in options.items()}
        except MathMLError:
            continue
        formulae += 1
        for name, toks in parsed.items():
            texts[name].update(toks)
        diffs = [(a, b) for a, b in zip(parsed["fold"], parsed["distinct"], strict=True) if a != b]
        styled = [d for d in diffs if d[1].split(" ", 1)[0] in STYLE_WORDS]
        tokens += len(parsed["fold"])
        changed_tokens += len(diffs)
        styled_tokens += len(styled)
        changed += bool(diffs)
        styled_formulae += bool(styled)
        pairs.update(diffs)
    result = {
        "formulae_parsed": formulae,
        "formulae_changed": changed,
        "formulae_with_styled_tokens": styled_formulae,
        "tokens": tokens,
        "tokens_changed": changed_tokens,
        "styled_tokens": styled_tokens,
        "distinct_token_texts": {name: len(t) for name, t in texts.items()},
        "most_common_changes": [[a, b, n] for (a, b), n in pairs.most_common(25)],
    }
    print_table(
        "Snapshot tokens: styled_letters fold → distinct",
        ["formulae", "changed", "with styled", "tokens", "changed", "styled", "texts f → d"],
        [
            [
                formulae,
                changed,
                styled_formulae,
                tokens,
                changed_tokens,
                styled_tokens,
                f"{len(texts['fold'])} → {len(texts['distinct'])}",
            ]
        ],
    )
    return result


def _configs(root: UPath, method: str) -> list[ModelDescription]:
    out = []
    for fold in FOLDS:
        version = current_version(model_directory(root, fold, method))
        config = json.loads((version / CONFIG).read_text())
        out.append(
            ModelDescription.from_json(config, registry.trained_method(method).settings_type)
        )
    return out


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4)


def compare_lakes(lakes: dict[str, str]) -> dict:
    """Per lake and method: mean validation MRR (trained methods), Table 2's test columns."""
    result: dict[str, dict] = {}
    rows = []
    for name, path in lakes.items():
        root = UPath(path)
        scores = pq.read_table(str(root / "retrieval_scores.parquet")).to_pylist()
        per_lake: dict[str, dict] = {}
        for row in scores:
            entry = per_lake.setdefault(row["method"], {})
            for metric in ("recall_at_10", "mrr"):
                entry.setdefault(f"{metric} {row['direction']}", []).append(row[metric])
        for entry in per_lake.values():
            for key in list(entry):
                entry[key] = _mean(entry[key])
        for method in registry.trained():
            configs = _configs(root, method)
            per_lake[method]["validation_mrr"] = _mean([c.best_validation_mrr for c in configs])
            per_lake[method]["train_seconds"] = _mean([c.train_seconds for c in configs])
            if all(c.unseen_test_tokens for c in configs):  # a method with a vocabulary
                unseen = [c.unseen_test_tokens["occurrences"] for c in configs]
                per_lake[method]["vocabulary"] = _mean([len(c.vocabulary) for c in configs])
                per_lake[method]["unseen_test_token_occurrences"] = _mean(unseen)
        result[name] = per_lake
        for method, entry in per_lake.items():
            rows.append(
                [
                    name,
                    method,
                    entry.get("validation_mrr", ""),
                    f"{entry['recall_at_10 syntactic_to_semantic']:.3f} / "
                    f"{entry['recall_at_10 semantic_to_syntactic']:.3f}",
                    f"{entry['mrr syntactic_to_semantic']:.3f} / "
                    f"{entry['mrr semantic_to_syntactic']:.3f}",
                ]
            )
    print_table(
        "Styled letters: validation MRR (mean over folds), Table 2 test columns",
        ["lake", "method", "validation MRR", "test R@10 s→m / m→s", "test MRR s→m / m→s"],
        rows,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lakes", nargs="*", default=[], help="NAME=PATH of built lakes")
    args = parser.parse_args()
    payload = {"snapshot": count_changes()}
    if args.lakes:
        payload["lakes"] = compare_lakes(dict(spec.split("=", 1) for spec in args.lakes))
    write_result("styled_letters", payload)


if __name__ == "__main__":
    main()
