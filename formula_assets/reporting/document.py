"""The reviewer's report: Tables 1 and 2 beside the paper, figures, and everything needed to
trust the numbers (data sizes, folds, profile, model, seeds, code and package versions).

A report is a list of blocks rendered twice: as one self-contained HTML file (figures inline
as data URIs, no external CSS or scripts) and as Markdown.
"""

from __future__ import annotations

import base64
import html
import importlib.metadata
import platform
from collections.abc import Sequence
from dataclasses import dataclass

PACKAGES = (
    "formula_assets",
    "dagster",
    "torch",
    "torch-geometric",
    "sentence-transformers",
    "transformers",
    "scikit-learn",
    "scipy",
    "numpy",
    "pandas",
    "pyarrow",
    "lxml",
    "rank-bm25",
    "requests",
)


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Table:
    columns: Sequence[str]
    rows: Sequence[Sequence[object]]


@dataclass(frozen=True)
class Figure:
    png: bytes
    caption: str
    filename: str  # where the Markdown version refers to it


Block = Heading | Paragraph | Table | Figure


def package_versions(packages: Sequence[str] = PACKAGES) -> list[tuple[str, str]]:
    out = [("python", platform.python_version())]
    for name in packages:
        try:
            out.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            out.append((name, "not installed"))
    return out


def _md_cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def to_markdown(title: str, blocks: Sequence[Block]) -> str:
    lines = [f"# {title}", ""]
    for block in blocks:
        if isinstance(block, Heading):
            lines += [f"{'#' * block.level} {block.text}", ""]
        elif isinstance(block, Paragraph):
            lines += [block.text, ""]
        elif isinstance(block, Table):
            lines.append("| " + " | ".join(map(_md_cell, block.columns)) + " |")
            lines.append("|" + "---|" * len(block.columns))
            lines += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in block.rows]
            lines.append("")
        else:
            lines += [f"![{block.caption}]({block.filename})", "", f"*{block.caption}*", ""]
    return "\n".join(lines)


_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #1d2330; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.8em 0 1.4em; font-size: 0.9em; }
th, td { border: 1px solid #c9ced8; padding: 0.3em 0.6em; text-align: left; }
th { background: #eef1f6; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; }
figcaption { font-style: italic; color: #4a5160; }
"""


def to_html(title: str, blocks: Sequence[Block]) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for block in blocks:
        if isinstance(block, Heading):
            level = min(max(block.level, 2), 6)
            parts.append(f"<h{level}>{html.escape(block.text)}</h{level}>")
        elif isinstance(block, Paragraph):
            parts.append(f"<p>{html.escape(block.text)}</p>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in block.columns)
            body = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                for row in block.rows
            )
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            data = base64.b64encode(block.png).decode()
            caption = html.escape(block.caption)
            parts.append(
                f'<figure><img alt="{caption}" src="data:image/png;base64,{data}">'
                f"<figcaption>{caption}</figcaption></figure>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)
