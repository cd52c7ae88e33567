"""The live SPARQL source against a real local HTTP server speaking WDQS's JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest

from formula_assets.ingest.probe import fingerprint
from formula_assets.ingest.records import Concept, FormulaRecord
from formula_assets.ingest.snapshot import paper_folds
from formula_assets.ingest.sparql import (
    SparqlConfig,
    SparqlError,
    detail_query,
    sparql_probe,
    sparql_records,
)
from formula_assets_tests.support.sparql_server import (
    ENTITY,
    XSD_DATETIME,
    Entity,
    FakeWdqs,
    Reply,
    Statement,
    is_detail_query,
    is_list_query,
    is_probe_query,
    literal,
    math,
    uri,
)

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
AGENT = "formula_assets-tests/1.0 (https://example.org; tests@example.org)"


def config(server: FakeWdqs, **overrides: Any) -> SparqlConfig:
    values: dict[str, Any] = {"endpoint": server.endpoint, "user_agent": AGENT, "timeout_s": 5.0}
    values.update(overrides)
    return SparqlConfig(**values)


def pull(server: FakeWdqs, sleeps: list[float] | None = None, **overrides: Any) -> list:
    waits = sleeps if sleeps is not None else []
    return sparql_records(config(server, **overrides), sleep=waits.append, now=lambda: NOW)


def by_qid(records: list[FormulaRecord]) -> dict[str, FormulaRecord]:
    return {r.qid: r for r in records}


def test_one_record_per_item_with_aligned_concepts(sparql_server: FakeWdqs) -> None:
    records = pull(sparql_server)

    assert [r.qid for r in records] == ["Q1000", "Q35875", "Q46276", "Q4721378", "Q98765432"]
    emc2 = by_qid(records)["Q35875"]
    assert emc2.label == "mass–energy equivalence"
    assert emc2.description == "relation between mass and energy"
    assert emc2.mathml is not None and emc2.mathml.startswith("<math")
    assert emc2.enwiki == "https://en.wikipedia.org/wiki/Mass%E2%80%93energy_equivalence"
    assert emc2.source == "sparql"
    assert emc2.retrieved_at == NOW
    assert emc2.notes == []
    assert emc2.concepts == [
        Concept(
            "Q2111",
            "speed of light",
            "speed at which massless particles travel",
            math("<mi>c</mi>"),
        ),
        Concept(
            "Q11379", "energy", "quantitative property of a physical system", math("<mi>E</mi>")
        ),
        Concept("Q11423", "mass", "property of matter", math("<mi>m</mi>")),
    ]


def test_same_concept_in_two_statements_keeps_both_symbols(sparql_server: FakeWdqs) -> None:
    kinetic = by_qid(pull(sparql_server))["Q46276"]

    assert [(c.qid, c.symbol_mathml) for c in kinetic.concepts] == [
        ("Q11423", math("<mi>m</mi>")),
        ("Q11465", math("<mi>v</mi>")),
        ("Q11465", math("<mo>|</mo><mi>v</mi><mo>|</mo>")),
    ]
    assert {c.description for c in kinetic.concepts if c.qid == "Q11465"} == {
        "rate of change of position"
    }
    # The unknown-value statement is skipped and said so; the unqualified P31 never shows.
    assert kinetic.notes == [
        "1 statement(s) whose concept is not a Wikidata item "
        "(unknown value or another entity type) skipped"
    ]


def test_missing_optionals_are_none_and_every_formula_is_kept(sparql_server: FakeWdqs) -> None:
    records = by_qid(pull(sparql_server))
    law = records["Q98765432"]

    assert law.enwiki is None
    assert law.description is None
    first, second = sorted(
        [math("<mi>τ</mi><mo>=</mo><mn>1</mn>"), math("<mn>1</mn><mo>=</mo><mi>τ</mi>")]
    )
    assert (law.mathml, law.other_formulae) == (first, [second])
    assert law.notes == [
        "2 distinct defining formulae (P2534); the first in sorted order in mathml, "
        "the others in other_formulae"
    ]
    # Two formulae doubled every concept row; the rows of one statement are one concept, and
    # no statement repeats another.
    assert law.concepts == [
        Concept("Q123456789", "test constant", None, math("<mi>t</mi>")),
        Concept("Q123456789", "test constant", None, math("<mi>τ</mi>")),
    ]
    assert law.repeated_concepts == 0
    assert records["Q1000"].concepts == []
    assert records["Q1000"].other_formulae == []


def test_three_formulae_keep_the_first_in_sorted_order_and_the_others(
    sparql_server: FakeWdqs,
) -> None:
    formulae = (math("<mi>b</mi>"), math("<mi>c</mi>"), math("<mi>a</mi>"), math("<mi>b</mi>"))
    sparql_server.edit("Q1000", formulae=formulae)

    bare = by_qid(pull(sparql_server))["Q1000"]

    assert bare.mathml == math("<mi>a</mi>")
    assert bare.other_formulae == [math("<mi>b</mi>"), math("<mi>c</mi>")]
    assert bare.notes[0].startswith("3 distinct defining formulae (P2534)")


def test_paper_fold_comes_from_the_snapshot(sparql_server: FakeWdqs) -> None:
    records = by_qid(pull(sparql_server))

    assert records["Q4721378"].paper_fold == paper_folds()["Q4721378"]
    assert "Q98765432" not in paper_folds()
    assert records["Q98765432"].paper_fold is None


def test_pages_of_page_size_items(sparql_server: FakeWdqs) -> None:
    lines: list[str] = []
    records = sparql_records(config(sparql_server, page_size=2), log=lines.append, now=lambda: NOW)

    details = sparql_server.detail_requests()
    assert len(details) == 3
    assert [len(r.query.split("wd:Q")) - 1 for r in details] == [2, 2, 1]
    assert len(records) == 5
    assert records == pull(sparql_server)  # paging does not change the answer
    assert lines[0] == "SPARQL: 5 items have a defining formula (P2534)"
    assert lines[1].startswith("SPARQL page 1/3: 2 items, ")
    assert lines[3].startswith("SPARQL page 3/3: 1 items, ")


def test_requests_are_posted_json_with_our_user_agent(sparql_server: FakeWdqs) -> None:
    pull(sparql_server)

    assert len(sparql_server.requests) == 2
    for request in sparql_server.requests:
        assert request.method == "POST"
        assert request.content_type == "application/x-www-form-urlencoded"
        assert request.user_agent == AGENT
        assert "application/sparql-results+json" in request.headers["accept"]


def test_the_resource_makes_the_config_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from formula_assets.defs.resources.wikidata import WikidataResource

    monkeypatch.setenv("FORMULA_ASSETS_SPARQL_ENDPOINT", "http://localhost:1/sparql")
    monkeypatch.setenv("FORMULA_ASSETS_USER_AGENT", AGENT)
    resource = WikidataResource(page_size=7)

    cfg = resource.sparql_config(resource.settings())

    assert (cfg.endpoint, cfg.user_agent, cfg.page_size) == ("http://localhost:1/sparql", AGENT, 7)
    mine = WikidataResource(sparql_endpoint="http://localhost:2/sparql")  # the field wins
    assert mine.sparql_config(mine.settings()).endpoint == "http://localhost:2/sparql"


def test_a_clock_without_a_time_zone_is_refused(sparql_server: FakeWdqs) -> None:
    """As the dump source does: a naive time is local or UTC, nobody can tell which."""
    naive = datetime(2025, 1, 2, 3, 4, 5)
    with pytest.raises(ValueError, match="timezone-aware"):
        sparql_records(config(sparql_server), now=lambda: naive)
    plus_one = datetime(2025, 1, 2, 4, 4, 5, tzinfo=timezone(timedelta(hours=1)))
    records = sparql_records(config(sparql_server), now=lambda: plus_one)
    assert {r.retrieved_at for r in records} == {NOW}


def test_429_with_retry_after_is_retried(sparql_server: FakeWdqs) -> None:
    sparql_server.fail(429, {"Retry-After": "2"}, "Too many requests", when=is_detail_query)
    sleeps: list[float] = []

    records = pull(sparql_server, sleeps)

    assert len(records) == 5
    assert sleeps == [2.0]
    assert len(sparql_server.detail_requests()) == 2


def test_retry_after_http_date_and_cap(sparql_server: FakeWdqs) -> None:
    later = format_datetime(NOW + timedelta(seconds=7), usegmt=True)
    sparql_server.fail(500, {"Retry-After": later})
    sparql_server.fail(429, {"Retry-After": "3600"})
    sleeps: list[float] = []

    assert len(pull(sparql_server, sleeps, max_backoff_s=30.0)) == 5
    assert sleeps == [7.0, 30.0]


def test_500_forever_gives_up_after_max_retries(sparql_server: FakeWdqs) -> None:
    sparql_server.fail(500, body="java.lang.IllegalStateException", times=100)
    sleeps: list[float] = []

    with pytest.raises(SparqlError) as error:
        pull(sparql_server, sleeps, max_retries=3, backoff_s=1.0, max_backoff_s=3.0)

    assert len(sparql_server.requests) == 4
    assert sleeps == [1.0, 2.0, 3.0]  # exponential, capped
    message = str(error.value)
    assert sparql_server.endpoint in message
    assert "after 4 attempt(s)" in message
    assert "HTTP 500 Internal Server Error" in message


def test_client_errors_are_not_retried(sparql_server: FakeWdqs) -> None:
    sparql_server.fail(400, body="MalformedQueryException: bad", times=10)
    sleeps: list[float] = []

    with pytest.raises(SparqlError, match=r"HTTP 400 Bad Request.*MalformedQueryException"):
        pull(sparql_server, sleeps)

    assert len(sparql_server.requests) == 1
    assert sleeps == []


def test_hang_becomes_a_timeout_error(sparql_server: FakeWdqs) -> None:
    sparql_server.hang(5.0, times=2)
    sleeps: list[float] = []

    with pytest.raises(SparqlError, match=r"no response within 0\.5 s \(timeout\)") as error:
        pull(sparql_server, sleeps, timeout_s=0.5, max_retries=1)

    assert "after 2 attempt(s)" in str(error.value)
    assert len(sparql_server.requests) == 2
    assert sleeps == [1.0]


def test_dropped_connection_is_retried(sparql_server: FakeWdqs) -> None:
    sparql_server.drop_connection(when=is_list_query)

    assert len(pull(sparql_server)) == 5
    assert len(sparql_server.list_requests()) == 2


def test_truncated_json_is_an_error(sparql_server: FakeWdqs) -> None:
    sparql_server.truncate(when=is_detail_query)

    with pytest.raises(SparqlError, match="truncated or invalid JSON") as error:
        pull(sparql_server)

    assert sparql_server.endpoint in str(error.value)
    assert "detail page 1/1" in str(error.value)


@pytest.mark.parametrize("variable", ["item", "formula"])
def test_missing_required_variable_is_an_error(sparql_server: FakeWdqs, variable: str) -> None:
    sparql_server.without_variables(variable, when=is_detail_query)

    with pytest.raises(SparqlError, match=rf"without the required variable\(s\) \?{variable}"):
        pull(sparql_server)


def test_not_a_sparql_result_is_an_error(sparql_server: FakeWdqs) -> None:
    sparql_server.register(is_list_query, Reply.json({"items": []}))

    with pytest.raises(SparqlError, match=r"did not answer with a SPARQL JSON result"):
        pull(sparql_server)


def test_empty_result_is_an_empty_list(sparql_server: FakeWdqs) -> None:
    sparql_server.empty(when=is_list_query)

    assert pull(sparql_server) == []
    assert sparql_server.detail_requests() == []


def test_non_qid_from_the_server_never_reaches_a_query(sparql_server: FakeWdqs) -> None:
    evil = "http://www.wikidata.org/entity/Q1> } ; DROP ALL ; #"
    sparql_server.register(
        is_list_query,
        Reply.result(["item"], [{"item": uri(ENTITY + "Q1000")}, {"item": uri(evil)}]),
    )

    with pytest.raises(SparqlError, match="not a Wikidata QID"):
        pull(sparql_server)

    assert sparql_server.detail_requests() == []
    assert all("DROP" not in q for q in sparql_server.queries())


def test_detail_answer_about_an_item_not_asked_for_is_an_error(sparql_server: FakeWdqs) -> None:
    sparql_server.register(
        is_detail_query,
        Reply.result(["item", "formula"], [{"item": uri(ENTITY + "Q5"), "formula": uri("x")}]),
    )

    with pytest.raises(SparqlError, match="Q5, which the query did not ask for"):
        pull(sparql_server)


def test_detail_query_refuses_anything_but_qids() -> None:
    assert "VALUES ?item { wd:Q1 wd:Q42 }" in detail_query(["Q1", "Q42"])
    with pytest.raises(ValueError, match="not a QID"):
        detail_query(["Q1 } ?x ?y ?z {"])


def test_unreachable_endpoint_is_a_clear_error() -> None:
    with FakeWdqs() as server:
        endpoint = server.endpoint
    cfg = SparqlConfig(endpoint, AGENT, timeout_s=1.0, max_retries=1)

    with pytest.raises(
        SparqlError, match=r"failed after 2 attempt\(s\); last error: cannot connect"
    ):
        sparql_records(cfg, sleep=lambda _s: None)


# --- the change probe ----------------------------------------------------------------------------


def probe(server: FakeWdqs) -> str:
    return fingerprint("sparql", sparql_config=config(server)).version


def _edit_symbol(server: FakeWdqs) -> None:
    item = server.world["Q35875"]
    first, *rest = item.statements
    server.edit(
        item.qid, statements=(Statement(first.pid, first.value, (math("<mi>W</mi>"),)), *rest)
    )


def _add_item(server: FakeWdqs) -> None:
    server.world["Q77"] = Entity(
        "Q77", "new law", None, (math("<mi>y</mi>"),), modified="2020-01-01T00:00:00Z"
    )


# Every kind of edit the pull reads, each as Wikidata records it.
EDITS = {
    "formula": lambda s: s.edit("Q1000", formulae=(math("<mi>y</mi>"),)),
    "item label": lambda s: s.edit("Q1000", label="renamed formula"),
    "concept label": lambda s: s.edit("Q215071", label="least upper bound"),
    "concept description": lambda s: s.edit("Q11423", description="a property of matter"),
    "symbol": _edit_symbol,
    "sitelink": lambda s: s.edit("Q46276", enwiki="https://en.wikipedia.org/wiki/Kinetic"),
    "removed item": lambda s: s.remove("Q1000"),
    "added item, older than the newest": _add_item,
    "one item removed, another added": lambda s: (s.remove("Q1000"), _add_item(s)),
    "concept edit dated before the newest": lambda s: s.edit(
        "Q2111", label="c", modified="2025-06-01T00:00:00Z"
    ),
    "concept unlinked": lambda s: s.edit("Q4721378", statements=s.world["Q4721378"].statements[:1]),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_probe_changes_whenever_the_pull_would(sparql_server: FakeWdqs, edit) -> None:
    before, records = probe(sparql_server), pull(sparql_server)
    assert probe(sparql_server) == before  # the same source, the same fingerprint

    edit(sparql_server)

    assert pull(sparql_server) != records  # the edit is something the pull reads ...
    assert probe(sparql_server) != before  # ... so the probe sees it


def test_probe_ignores_entities_the_pull_never_reads(sparql_server: FakeWdqs) -> None:
    sparql_server.world["Q5"] = Entity("Q5", "human", "common name of Homo sapiens")
    before = probe(sparql_server)
    sparql_server.edit("Q5", label="person")
    # A statement without a symbol (P7235) links no concept: Kinetic energy's P31 value.
    kinetic = sparql_server.world["Q46276"]
    assert Statement("P31", "Q11379") in kinetic.statements
    assert probe(sparql_server) == before


def test_probe_is_one_query_and_reports_what_it_counted(sparql_server: FakeWdqs) -> None:
    found = fingerprint("sparql", sparql_config=config(sparql_server))

    assert len(sparql_server.requests) == 1 and is_probe_query(sparql_server.requests[0].query)
    assert found.version.startswith("sparql-5-")
    assert found.metadata["items"] == 5
    # The seven concepts of the default world; a statement's unknown value is no concept.
    assert found.metadata["concepts"] == 7
    assert found.metadata["latest_modified"] == "2026-01-01T00:00:00Z"


def _probe_row(entity: str, role: str = "formula") -> dict[str, Any]:
    return {
        "entity": uri(entity),
        "modified": literal("2026-01-01T00:00:00Z", datatype=XSD_DATETIME),
        "role": literal(role),
    }


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_probe_row(ENTITY + "Q1", role="lexeme"), "unknown \\?role 'lexeme'"),
        (_probe_row(ENTITY + "P2534"), "not a Wikidata QID"),
        ({**_probe_row(ENTITY + "Q1"), "modified": literal("")}, "empty \\?modified"),
    ],
)
def test_malformed_probe_answers_are_errors(
    sparql_server: FakeWdqs, row: dict[str, Any], message: str
) -> None:
    sparql_server.register(is_probe_query, Reply.result(["entity", "modified", "role"], [row]))
    with pytest.raises(SparqlError, match=message):
        probe(sparql_server)


# --- what the rows say, as the records read it ----------------------------------------------------


def test_a_concept_linked_by_two_statements_with_one_symbol_is_listed_once_and_counted(
    sparql_server: FakeWdqs,
) -> None:
    """A concept with the same symbol in two statements is one entry, as every source lists
    it; `repeated_concepts` counts the other. Another symbol of the concept is no repeat."""
    kinetic = sparql_server.world["Q46276"]
    mass_again = Statement("P527", "Q11423", (math("<mi>m</mi>"),))
    sparql_server.edit("Q46276", statements=(*kinetic.statements, mass_again))

    record = by_qid(pull(sparql_server))["Q46276"]

    assert [(c.qid, c.symbol_mathml) for c in record.concepts] == [
        ("Q11423", math("<mi>m</mi>")),
        ("Q11465", math("<mi>v</mi>")),
        ("Q11465", math("<mo>|</mo><mi>v</mi><mo>|</mo>")),
    ]
    assert record.repeated_concepts == 1


def test_skipped_statements_are_counted_per_statement(sparql_server: FakeWdqs) -> None:
    """Two statements whose value is the same lexeme are two skipped statements; one unknown
    value qualified by two symbols (two rows) is one."""
    sparql_server.world["Q5000"] = Entity(
        "Q5000",
        "lexeme law",
        None,
        (math("<mi>z</mi>"),),
        statements=(
            Statement("P4934", "L7", (math("<mi>a</mi>"),)),
            Statement("P527", "L7", (math("<mi>b</mi>"),)),
            Statement("P4934", None, (math("<mi>c</mi>"), math("<mi>d</mi>"))),
        ),
    )

    record = by_qid(pull(sparql_server))["Q5000"]

    assert record.concepts == []
    assert record.notes == [
        "3 statement(s) whose concept is not a Wikidata item "
        "(unknown value or another entity type) skipped"
    ]


def test_items_and_concepts_are_in_numeric_qid_order() -> None:
    """Q25 < Q31 < Q110 as numbers (not as text, nor by any digits but all of them)."""
    world = {
        "Q52": Entity("Q52", "fifty-two"),
        "Q61": Entity("Q61", "sixty-one"),
        "Q110": Entity("Q110", "c", None, (math("<mi>c</mi>"),)),
        "Q31": Entity(
            "Q31",
            "b",
            None,
            (math("<mi>b</mi>"),),
            statements=(
                Statement("P4934", "Q61", (math("<mi>y</mi>"),)),
                Statement("P4934", "Q52", (math("<mi>x</mi>"),)),
            ),
        ),
        "Q25": Entity("Q25", "a", None, (math("<mi>a</mi>"),)),
    }
    with FakeWdqs(world) as server:
        records = pull(server)

    assert [r.qid for r in records] == ["Q25", "Q31", "Q110"]
    assert [c.qid for c in by_qid(records)["Q31"].concepts] == ["Q52", "Q61"]


def test_the_log_counts_items_lost_between_listing_and_details(sparql_server: FakeWdqs) -> None:
    """Q77 is listed but gone by the time its page is fetched: only its page says so. Rows per
    item in the default world: Q1000 1, Q35875 2 aliases × 3 symbols = 6; Q46276 4,
    Q4721378 2, Q98765432 2 formulae × 2 symbols = 4."""
    listed = ["Q77", "Q1000", "Q35875", "Q46276", "Q4721378", "Q98765432"]
    sparql_server.register(
        is_list_query, Reply.result(["item"], [{"item": uri(ENTITY + q)} for q in listed])
    )
    lines: list[str] = []

    records = sparql_records(config(sparql_server, page_size=3), log=lines.append, now=lambda: NOW)

    assert [r.qid for r in records] == listed[1:]
    assert lines == [
        "SPARQL: 6 items have a defining formula (P2534)",
        "SPARQL page 1/2: 3 items, 7 rows (1 lost their formula since listing)",
        "SPARQL page 2/2: 3 items, 10 rows",
    ]


def test_the_probe_dates_retry_after_by_the_given_clock(sparql_server: FakeWdqs) -> None:
    later = format_datetime(NOW + timedelta(seconds=7), usegmt=True)
    sparql_server.fail(503, {"Retry-After": later}, when=is_probe_query)
    sleeps: list[float] = []

    found = sparql_probe(config(sparql_server), sleep=sleeps.append, now=lambda: NOW)

    assert sleeps == [7.0]
    assert found.items == 5 and len(sparql_server.probe_requests()) == 2


def test_a_malformed_probe_row_is_named_by_its_number(sparql_server: FakeWdqs) -> None:
    rows = [_probe_row(ENTITY + "Q1"), _probe_row(ENTITY + "Q2", role="lexeme")]
    sparql_server.register(is_probe_query, Reply.result(["entity", "modified", "role"], rows))

    with pytest.raises(SparqlError, match=r"sent row 2 with an unknown \?role 'lexeme'"):
        probe(sparql_server)


def test_an_items_aliases_are_gathered_from_its_multiplied_rows(sparql_server: FakeWdqs) -> None:
    """WDQS returns one row per alias × statement; the record keeps each alias once, sorted."""
    records = by_qid(pull(sparql_server))
    assert records["Q35875"].aliases == ["E=mc²", "mass-energy relation"]
    assert records["Q46276"].aliases == []
    assert len(records["Q35875"].concepts) == 3  # the aliases multiplied no concept
    assert "skos:altLabel ?alias" in sparql_server.requests[-1].query
