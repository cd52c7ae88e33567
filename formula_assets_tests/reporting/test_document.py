"""The report renderer: one self-contained HTML file and a Markdown twin."""

from formula_assets.reporting.document import (
    Figure,
    Heading,
    Paragraph,
    Table,
    package_versions,
    to_html,
    to_markdown,
)

PNG = b"\x89PNG\r\n\x1a\nfake"
BLOCKS = [
    Heading("Table 1"),
    Paragraph("Scores <b>not</b> HTML & escaped"),
    Table(["metric", "ours"], [["mean_cosine", "0.0331"], ["a|b", "1"]]),
    Figure(PNG, "CCA per component", "cca.png"),
]


def test_html_is_self_contained_and_escaped() -> None:
    html = to_html("report", BLOCKS)
    assert html.startswith("<!DOCTYPE html>")
    assert "<h2>Table 1</h2>" in html
    assert "Scores &lt;b&gt;not&lt;/b&gt; HTML &amp; escaped" in html
    assert "<td>mean_cosine</td><td>0.0331</td>" in html
    assert 'src="data:image/png;base64,iVBORw0KGgpmYWtl"' in html
    assert "http" not in html.replace("http-equiv", "")


def test_markdown_twin() -> None:
    markdown = to_markdown("report", BLOCKS)
    assert markdown.startswith("# report")
    assert "| metric | ours |" in markdown and "| a\\|b | 1 |" in markdown
    assert "![CCA per component](cca.png)" in markdown


def test_package_versions_name_python_and_dagster() -> None:
    versions = dict(package_versions())
    assert versions["python"].count(".") == 2
    assert versions["dagster"] == "1.13.27"


def test_the_markdown_is_the_whole_document_line_by_line() -> None:
    """Every block as CommonMark renders it: a header row, a separator with one cell per
    column, the rows, and a blank line after each block."""
    blocks = [
        Heading("Results", 3),
        Paragraph("text"),
        Table(["a", "b", "c"], [[1, 2, 3]]),
        Figure(PNG, "cap", "f.png"),
    ]
    assert to_markdown("t", blocks).split("\n") == [
        "# t",
        "",
        "### Results",
        "",
        "text",
        "",
        "| a | b | c |",
        "|---|---|---|",
        "| 1 | 2 | 3 |",
        "",
        "![cap](f.png)",
        "",
        "*cap*",
        "",
    ]


def test_html_heading_levels_stay_within_h2_to_h6_and_the_document_closes() -> None:
    html = to_html("t", [Heading("deep", 9), Heading("top", 1), Heading("mid", 4)])
    assert "<h6>deep</h6>" in html and "<h2>top</h2>" in html and "<h4>mid</h4>" in html
    assert html.splitlines()[-1] == "</body></html>"


def test_a_missing_package_is_reported_not_installed() -> None:
    assert package_versions(["surely-not-a-package-name"])[1:] == [
        ("surely-not-a-package-name", "not installed")
    ]
