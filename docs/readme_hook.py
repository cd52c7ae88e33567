"""MkDocs hooks: the README is the site's home page, and tables read as on GitHub.

The README links to pages as `docs/<page>.md`, which is where GitHub finds them; on the site
those pages sit beside the home page, so the prefix goes. Everything else is the README as
it is, and the strict build checks its links like any page's.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parent.parent / "README.md"


def home_page(readme: str) -> str:
    return re.sub(r"\]\(docs/", "](", readme)


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "index.md", content=home_page(README.read_text())))
    return files


def _unescape_code(row: re.Match[str]) -> str:
    return re.sub(r"`[^`]*`", lambda span: span.group(0).replace("\\|", "|"), row.group(0))


def on_page_markdown(markdown: str, page, config, files) -> str:
    """A pipe in a table's code span is `\\|` for GitHub; Python-Markdown keeps code spans
    whole, so there it is a plain `|`."""
    return re.sub(r"^\|.*$", _unescape_code, markdown, flags=re.M)
