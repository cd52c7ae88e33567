"""`formula-assets`: the project's command line (instance, staleness, refresh, search, audit)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from formula_assets.cli.home import ensure_dagster_home


def _home(_args: argparse.Namespace) -> int:
    import dagster as dg

    from formula_assets.cli.pools import ensure_training_pool

    home = ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        warning = ensure_training_pool(instance)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    print(home)
    return 0


def _stale(args: argparse.Namespace) -> int:
    import dagster as dg

    from formula_assets.cli.explain import ExplainError, explain
    from formula_assets.cli.observe import observed_stale_entries
    from formula_assets.cli.runs import RefreshError, load_definitions

    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        defs = load_definitions()
        explained = None
        try:
            if args.explain is not None:
                explained = explain(defs, instance, args.explain)
            entries = observed_stale_entries(
                defs, instance, lambda line: print(line, file=sys.stderr), probe=args.observe
            )
        except (RefreshError, ExplainError) as exc:
            print(f"stale: {exc}", file=sys.stderr)
            return 1
    if explained is not None:  # its staleness, then its code version part by part
        entries = [e for e in entries if e.target.key.to_user_string() == explained.asset]
        if not entries:
            print(f"{explained.asset}\tFRESH")
    for entry in entries:
        print(entry.line())
    for line in explained.lines() if explained is not None else ():
        print(line)
    return 0


def _refresh(args: argparse.Namespace) -> int:
    import dagster as dg

    from formula_assets.cli.refresh import RefreshError, refresh
    from formula_assets.cli.runs import load_definitions, say

    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        try:
            # its lines share stdout with the workers': each goes out whole, when it is said
            report = refresh(
                load_definitions(), instance, say, workers=args.workers, observe_probe=args.observe
            )
        except RefreshError as exc:
            print(f"refresh failed: {exc}", file=sys.stderr)
            return 1
    if report.ran:
        print(f"refreshed {len(report.ran)} asset(s)/partition(s) in {report.seconds:.1f} s")
    else:
        print(f"everything is fresh ({report.seconds:.1f} s)")
    return 0


def _distributed(args: argparse.Namespace) -> int:
    from formula_assets.cli.distributed import print_report, run_distributed
    from formula_assets.cli.runs import RefreshError, say
    from formula_assets.deploy.local import DeploymentError

    env = dict(os.environ)
    if args.sample is not None:
        env["FORMULA_ASSETS_SAMPLE"] = str(args.sample)
    try:
        report = run_distributed(
            workers=args.workers,
            profile=args.profile,
            training_slots=args.training_slots,
            root=args.root,
            lake=args.lake,
            keep=args.keep,
            env=env,
            echo=say,
        )
    except (RefreshError, DeploymentError) as exc:
        print(f"distributed run failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: every process it started was stopped", file=sys.stderr)
        return 130
    print_report(report)
    if args.report is not None:
        args.report.write_text(json.dumps(report.as_json(), indent=1), encoding="utf-8")
    return 0


def _settings(_args: argparse.Namespace) -> int:
    from formula_assets.cli.settings import run_settings

    return run_settings()


def _search(args: argparse.Namespace) -> int:
    from formula_assets.cli.search import run_search

    return run_search(args)


def _serve(args: argparse.Namespace) -> int:
    from formula_assets.serve.run import serve

    ensure_dagster_home()
    serve(args.host, args.port, args.poll, args.workers)
    return 0


def _audit(args: argparse.Namespace) -> int:
    from formula_assets.cli.audit import run_audit

    return run_audit(args)


def build_parser() -> argparse.ArgumentParser:
    from formula_assets.methods import registry

    parser = argparse.ArgumentParser(
        prog="formula-assets", description="Work with the formula_assets pipeline."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "home", help="create the project's Dagster instance folder and print its path"
    ).set_defaults(handler=_home)
    stale = commands.add_parser(
        "stale",
        help="observe the sources as refresh does, then list what it would build and why",
    )
    stale.add_argument(
        "--observe",
        action="store_true",
        help="also observe the Wikidata change probe (as `refresh --observe` does)",
    )
    stale.add_argument(
        "--explain",
        metavar="ASSET",
        help="only ASSET's staleness, then what its code version covers (modules, data files, "
        "settings) and which of them changed since its last materialization",
    )
    stale.set_defaults(handler=_stale)
    refresh = commands.add_parser(
        "refresh", help="materialize exactly the stale or missing assets, in order, until fresh"
    )
    refresh.add_argument(
        "--workers", type=int, default=2, help="parallel processes for partitions (default 2)"
    )
    refresh.add_argument(
        "--observe",
        action="store_true",
        help="observe the Wikidata change probe first (as the weekly schedule does)",
    )
    refresh.set_defaults(handler=_refresh)
    distributed = commands.add_parser(
        "distributed",
        help="run the pipeline on a local distributed deployment: PostgreSQL, Celery workers",
    )
    distributed.add_argument("--workers", type=int, default=2, help="Celery workers (2)")
    distributed.add_argument(
        "--profile", default="smoke", help="training profile (smoke; `default` when asked)"
    )
    distributed.add_argument(
        "--training-slots",
        type=int,
        help="models trained at the same time (the `training` pool; default: one per worker)",
    )
    distributed.add_argument("--sample", type=int, help="a stable subset of N formula items")
    distributed.add_argument("--lake", help="data lake URL (default: a folder of the run)")
    distributed.add_argument("--root", type=Path, help="where the run keeps its files")
    distributed.add_argument(
        "--keep", action="store_true", help="keep the instance, logs and lake afterwards"
    )
    distributed.add_argument(
        "--report", type=Path, help="write placements, data versions and times as JSON here"
    )
    distributed.set_defaults(handler=_distributed)
    commands.add_parser(
        "settings", help="print every setting, its effective value and where it came from"
    ).set_defaults(handler=_settings)
    search = commands.add_parser(
        "search",
        help="find Wikidata items by a text (--text) or a formula (--latex, --mathml): names, "
        "formula structure and the trained models, fused",
    )
    query = search.add_mutually_exclusive_group(required=True)
    query.add_argument("--latex", help="a formula in LaTeX, e.g. 'F = m a'")
    query.add_argument("--mathml", metavar="FILE", help="a file holding a MathML formula")
    query.add_argument("--text", help="a name or a description, e.g. 'kinetic energy'")
    search.add_argument(
        "--method",
        choices=registry.search_methods(),
        help="the meaning channel's method (default: the best in the data lake)",
    )
    search.add_argument(
        "--fold", type=int, help="the meaning channel's fold models (default: best validation)"
    )
    search.add_argument("--top", type=int, default=10, help="how many items (10, at most 100)")
    search.add_argument(
        "--json", action="store_true", help="the hits and the symbol explanation as JSON"
    )
    search.set_defaults(handler=_search)
    serving = commands.add_parser(
        "serve", help="the search and audit pages and their JSON API, over the published data"
    )
    serving.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (127.0.0.1: this machine only)"
    )
    serving.add_argument("--port", type=int, default=8000, help="port (8000)")
    serving.add_argument(
        "--poll", type=float, default=2.0, help="seconds between looks for newly published data"
    )
    serving.add_argument(
        "--workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="processes answering requests, each with its own copy of the data (2)",
    )
    serving.set_defaults(handler=_serve)
    audit = commands.add_parser(
        "audit", help="the editors' queue of formula annotations to check, strongest lead first"
    )
    audit.add_argument("--top", type=int, default=25, help="how many items (25)")
    audit.add_argument("--tsv", metavar="FILE", help="also write them as tab-separated values")
    audit.set_defaults(handler=_audit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from formula_assets.methods.base import RegistrationError

    try:
        parser = build_parser()  # reads the method registry
    except RegistrationError as exc:
        print(f"formula-assets: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
