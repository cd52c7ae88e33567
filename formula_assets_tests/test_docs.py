"""The documentation holds: the site builds in strict mode (no broken link or anchor, no page
left out of the nav), every command the README shows exists (make targets in the Makefile,
`formula-assets` and `dg` subcommands and flags in their parsers, `python -m` modules), the
lineage picture names every asset, and the assets page lists every edge of the graph."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.S)
TOOL = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.venv/bin/|\$\(BIN\)/)?(\S+)")


@dataclass(frozen=True)
class Command:
    tool: str
    args: tuple[str, ...]
    line: str


def commands(markdown: str, tools: set[str]) -> list[Command]:
    """The command lines of a page's code (fenced blocks and inline spans) run by `tools`."""
    found = []
    for block, inline in CODE.findall(markdown):
        for raw in block.splitlines() if block else [inline]:
            line = raw.replace("\\|", "|").strip().removeprefix("$ ")
            line = re.split(r"\s+#\s", line)[0]
            match = TOOL.match(line)
            if not match or match.group(1) not in tools:
                continue
            words = shlex.split(line[match.start(1) :])
            args = tuple("x" if word == "…" else word for word in words[1:])
            found.append(Command(words[0], args, line))
    return found


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile, re.M))


def argparse_problems(args: tuple[str, ...]) -> list[str]:
    from formula_assets.cli import build_parser

    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    if not args:
        return []
    if args[0].startswith("-"):  # the program's own flags (`--help`)
        own = parser._option_string_actions
        return [f"no flag {a}" for a in args if a.startswith("-") and a not in own]
    if args[0] not in subparsers.choices:
        return [f"no subcommand {args[0]!r}"]
    options = subparsers.choices[args[0]]._option_string_actions
    return [
        f"no flag {a}" for a in args[1:] if a.startswith("-") and a.split("=")[0] not in options
    ]


def click_problems(group: click.Command, args: tuple[str, ...]) -> list[str]:
    command, ctx, rest = group, click.Context(group, info_name="dg"), list(args)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(ctx, rest[0])
        if sub is None:
            return [f"no subcommand {rest[0]!r}"]
        command, ctx, rest = sub, click.Context(sub, info_name=rest[0], parent=ctx), rest[1:]
    flags = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    return [f"no flag {a}" for a in rest if a.startswith("-") and a.split("=")[0] not in flags]


def problems(command: Command) -> list[str]:
    """What does not exist of a command line: empty when all of it does."""
    if command.tool == "make":
        targets = [a for a in command.args if not a.startswith("-") and "=" not in a]
        return [f"no make target {t!r}" for t in targets if t not in make_targets()]
    if command.tool == "formula-assets":
        return argparse_problems(command.args)
    if command.tool == "dg":
        from dagster_dg_cli.cli import cli

        return click_problems(cli, command.args)
    if command.tool.startswith("python"):
        if len(command.args) < 2 or command.args[0] != "-m":
            return []  # not a module run (`python -c …`), or prose naming `python -m`
        module = command.args[1]
        if "<" in module:  # a placeholder: `python -m benchmarks.<name>`
            return []
        return [] if importlib.util.find_spec(module) else [f"no module {module}"]
    raise AssertionError(command.tool)


ALL_TOOLS = {"make", "formula-assets", "dg", "python", "python3"}
PAGE_TOOLS = {"make", "formula-assets", "python", "python3"}


def test_every_command_the_readme_shows_exists() -> None:
    shown = commands(README.read_text(), ALL_TOOLS)
    assert {c.tool for c in shown} == {"make", "formula-assets", "dg"}
    assert {("run",), ("test",)} <= {c.args for c in shown if c.tool == "make"}
    missing = {c.line: problems(c) for c in shown if problems(c)}
    assert missing == {}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_make_and_formula_assets_command_of_the_docs_exists(page: Path) -> None:
    missing = {c.line: problems(c) for c in commands(page.read_text(), PAGE_TOOLS) if problems(c)}
    assert missing == {}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("make nothing", "no make target 'nothing'"),
        ("FORMULA_ASSETS_PROFILE=large make run tset", "no make target 'tset'"),
        (".venv/bin/formula-assets serch --text x", "no subcommand 'serch'"),
        ("formula-assets refresh --observe --bogus", "no flag --bogus"),
        ("formula-assets search --workers 2", "no flag --workers"),
        (".venv/bin/dg lunch --assets x", "no subcommand 'lunch'"),
        ("dg launch --asset x", "no flag --asset"),
        ("dg list nothing", "no subcommand 'nothing'"),
        ("python -m benchmarks.nothing", "no module benchmarks.nothing"),
    ],
)
def test_a_command_that_does_not_exist_is_found(line: str, problem: str) -> None:
    (command,) = commands(f"`{line}`", ALL_TOOLS)
    assert problems(command) == [problem]


def test_commands_are_read_from_blocks_and_spans() -> None:
    markdown = (
        "Run `make ui` (= `dg dev -h 127.0.0.1 -p 3000`), then `--text 'x'` alone is no command.\n"
        "```bash\n$ .venv/bin/formula-assets stale   # what is stale\n"
        "formula → concepts with graph_text_cl\n"
        "dg launch --assets fold_models --partition '1\\|graph_text_cl'\n```\n"
    )
    assert [(c.tool, c.args) for c in commands(markdown, ALL_TOOLS)] == [
        ("make", ("ui",)),
        ("dg", ("dev", "-h", "127.0.0.1", "-p", "3000")),
        ("formula-assets", ("stale",)),
        ("dg", ("launch", "--assets", "fold_models", "--partition", "1|graph_text_cl")),
    ]


def test_the_readme_is_a_front_door() -> None:
    assert len(README.read_text().splitlines()) <= 200


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    home = (tmp_path / "index.html").read_text()
    assert "A five-minute tour" in home  # the README is the home page
    assert 'href="assets/#what-each-asset-reads"' in home  # its docs/ links resolve on the site
    for page in PAGES:
        assert (tmp_path / page.stem / "index.html").exists(), page.name


def lineage_picture() -> str:
    blocks = re.findall(r"## The lineage graph\n\n```text\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_lineage_picture_names_every_asset() -> None:
    from formula_assets.definitions import defs

    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    drawn = set(re.findall(r"\b[a-z][a-z_]+\b", lineage_picture()))
    assert keys <= drawn, keys - drawn


def test_the_assets_page_lists_every_edge() -> None:
    from formula_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    expected = {
        k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys}
        for k in graph.get_all_asset_keys()
        if graph.get(k).parent_keys
    }
    page = (ROOT / "docs" / "assets.md").read_text()
    section = page.split("## What each asset reads", 1)[1].split("\n## ", 1)[0]
    listed = {}
    for assets, reads in re.findall(r"^\| (`.*?`) \| (`.*?`) \|$", section, re.M):
        for asset in re.findall(r"`(\w+)`", assets):
            listed[asset] = set(re.findall(r"`(\w+)`", reads))
    assert listed == expected


def test_every_page_is_in_the_readmes_table() -> None:
    """The README is the front door: each page of docs/ has its row (the nav is kept by
    mkdocs' strict build, which fails on a page left out of it)."""
    table = README.read_text().split("## Documentation", 1)[1]
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", table))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages - linked == set()


def test_the_usage_page_counts_the_fold_models_partitions_as_the_code_does() -> None:
    from formula_assets.core.profiles import get_profile
    from formula_assets.core.protocol import FOLDS
    from formula_assets.methods import registry

    # the default profile's built-in methods (a test may register more in this process)
    kept = registry.built_in(get_profile("default").leaves_out)
    trained = [m for m in kept if m.trained]
    text = (ROOT / "docs" / "usage.md").read_text()
    stated = re.findall(r"(\d+) (?:`fold_models` )?partitions", text)
    assert stated and {int(n) for n in stated} == {len(FOLDS) * len(trained)}
    assert f"× the {len(trained)} trained methods" in text


def test_each_current_performance_figure_names_its_command_machine_and_date() -> None:
    """docs/performance.md's table holds current figures, each one reproducible: a command,
    one of the machines the page defines, and a date."""
    page = (ROOT / "docs" / "performance.md").read_text()
    machines = set(re.findall(r"\*\*([\w−]+)\*\* (?:the|an|one) ", page))
    assert {"EPYC", "EPYC−", "Xeon", "H200"} <= machines
    table = page.split("| measure | figure | target | command | machine, date |", 1)[1]
    lines = table.split("\n\n", 1)[0].splitlines()
    rows = [line for line in lines if line.startswith("|") and not line.startswith("|---")]
    assert len(rows) >= 15
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 5, row
        assert re.search(r"`(python -m |make |time make |\w+=\w+ make )", cells[3]), row
        machine, _, date = cells[4].partition(", ")
        assert machine in machines and re.match(r"2026-\d\d-\d\d", date), row
