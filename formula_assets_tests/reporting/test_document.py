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
