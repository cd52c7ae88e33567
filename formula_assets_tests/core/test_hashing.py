"""Content hashes: a table's hash is its logical content (names, normalised types, values in
row order), whatever the chunking, slicing offsets, schema metadata or Parquet round trip."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import itertools
import math
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from formula_assets.core.hashing import SCHEME, bytes_hash, table_content_hash, type_name

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- bytes_hash -------------------------------------------------------------------------------


def test_bytes_hash_is_sha256_of_parts_each_followed_by_a_zero_byte() -> None:
    assert bytes_hash("ab", b"c") == hashlib.sha256(b"ab\x00c\x00").hexdigest()
    assert bytes_hash() == hashlib.sha256(b"").hexdigest()
    assert bytes_hash("é") == hashlib.sha256("é".encode() + b"\x00").hexdigest()


def test_bytes_hash_separates_parts() -> None:
    assert bytes_hash("ab", "c") != bytes_hash("a", "bc")
    assert bytes_hash("abc") != bytes_hash("abc", "")
    assert bytes_hash("x") == bytes_hash(b"x")


# --- type_name --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data_type", "expected"),
    [
        (pa.int64(), "int64"),
        (pa.list_(pa.int64()), "list<int64>"),
        (pa.list_(pa.field("element", pa.int64())), "list<int64>"),
        (pa.large_list(pa.field("element", pa.string())), "large_list<string>"),
        (pa.list_(pa.field("item", pa.float32()), 3), "fixed_size_list<float>[3]"),
        (pa.list_(pa.field("element", pa.float32()), 3), "fixed_size_list<float>[3]"),
        (pa.map_(pa.string(), pa.int64()), "map<string, int64>"),
        (
            pa.struct([("a", pa.int64()), ("b", pa.list_(pa.field("x", pa.string())))]),
            "struct<a: int64, b: list<string>>",
        ),
        (pa.dictionary(pa.int32(), pa.string()), "string"),
        (pa.list_(pa.dictionary(pa.int8(), pa.large_string())), "list<large_string>"),
        (pa.timestamp("us", tz="UTC"), "timestamp[us, tz=UTC]"),
    ],
)
def test_type_name_drops_list_item_names_and_dictionary_encoding(data_type, expected) -> None:
    assert type_name(data_type) == expected


# --- the format, by an independent encoder for two simple types --------------------------------


def _frame(data: bytes) -> bytes:
    return struct.pack("<q", len(data)) + data


def test_hash_of_an_int_and_a_string_column_follows_the_documented_encoding() -> None:
    table = pa.table(
        {"n": pa.array([3, -1, 7], pa.int64()), "s": pa.array(["ab", None, "c"], pa.string())}
    )
    stream = SCHEME + struct.pack("<q", 3)
    stream += _frame(b"n") + _frame(b"int64") + struct.pack("<q", 3) + b"\x00"
    stream += _frame(struct.pack("<3q", 3, -1, 7))
    stream += _frame(b"s") + _frame(b"string") + struct.pack("<q", 3)
    stream += _frame(b"\x01" + bytes([0b10100000]))  # validity bits, most significant first
    stream += _frame(struct.pack("<3q", 2, 0, 1)) + _frame(b"abc")
    assert table_content_hash(table) == hashlib.sha256(stream).hexdigest()


def test_hash_of_a_single_row_string_column_covers_its_bytes() -> None:
    table = pa.table({"s": ["xyz"]})
    stream = SCHEME + struct.pack("<q", 1) + _frame(b"s") + _frame(b"string")
    stream += struct.pack("<q", 1) + b"\x00" + _frame(struct.pack("<q", 3)) + _frame(b"xyz")
    assert table_content_hash(table) == hashlib.sha256(stream).hexdigest()


def test_hash_of_an_empty_string_column_frames_empty_lengths_and_bytes() -> None:
    for table in (pa.table({"s": pa.array([], pa.string())}), pa.table({"s": ["a"]}).slice(1)):
        stream = SCHEME + struct.pack("<q", 0) + _frame(b"s") + _frame(b"string")
        stream += struct.pack("<q", 0) + b"\x00" + _frame(b"") + _frame(b"")
        assert table_content_hash(table) == hashlib.sha256(stream).hexdigest()


def test_a_zero_copy_slice_of_large_strings_hashes_only_its_own_bytes() -> None:
    for data_type in (pa.large_string(), pa.large_binary(), pa.string()):
        values = ["aa", "b", "ccc", "dddd"]
        if data_type == pa.large_binary():
            values = [v.encode() for v in values]
        whole = pa.array(values, data_type)
        for start, length in ((1, 2), (0, 3), (1, 1), (2, 0)):
            fresh = pa.table({"s": pa.array(values[start : start + length], data_type)})
            sliced = pa.table({"s": whole.slice(start, length)})
            assert table_content_hash(sliced) == table_content_hash(fresh)


# --- the pinned data version ------------------------------------------------------------------


def _every_type_table() -> pa.Table:
    utc = dt.UTC
    return pa.table(
        {
            "i64": pa.array([1, None, -3, 2**40], pa.int64()),
            "i8": pa.array([-128, 0, None, 127], pa.int8()),
            "u32": pa.array([0, 1, 2**32 - 1, None], pa.uint32()),
            "f64": pa.array([1.5, math.nan, None, -math.inf], pa.float64()),
            "f32": pa.array([0.25, None, math.nan, 3.0], pa.float32()),
            "flag": pa.array([True, None, False, True], pa.bool_()),
            "text": pa.array(["alpha", None, "", "βγ"], pa.string()),
            "big_text": pa.array(["x", "yy", None, "zzz"], pa.large_string()),
            "raw": pa.array([b"\x00\x01", None, b"", b"\xff"], pa.binary()),
            "ints": pa.array([[1, 2], None, [], [None, 4]], pa.list_(pa.int64())),
            "words": pa.array([["a"], [], None, ["b", None]], pa.large_list(pa.string())),
            "pair": pa.array(
                [[1.0, 2.0], None, [math.nan, None], [0.0, -1.0]],
                pa.list_(pa.float64(), 2),
            ),
            "rec": pa.array(
                [{"a": 1, "b": "p"}, None, {"a": None, "b": "q"}, {"a": 4, "b": None}],
                pa.struct([("a", pa.int32()), ("b", pa.string())]),
            ),
            "at": pa.array(
                [dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc), None, None, dt.datetime(1970, 1, 1)],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array([dt.date(2020, 2, 29), None, dt.date(1969, 12, 31), None], pa.date32()),
            "tag": pa.array(["red", "blue", None, "red"], pa.string()).dictionary_encode(),
            "nothing": pa.nulls(4),
        }
    )


# Data versions are stored with every materialisation: this value must not move. A change of
# encoding must bump SCHEME (and change this value on purpose).
PINNED = "aaec365d61e7acdb5858b8e14c9c99d79ce983a427cda41632249438f1f5ccec"


def test_pinned_hash_of_a_table_with_every_supported_type() -> None:
    assert table_content_hash(_every_type_table()) == PINNED


def test_pinned_table_hash_survives_rechunking_slicing_and_parquet() -> None:
    table = _every_type_table()
    chunked = pa.concat_tables([table.slice(0, 1), table.slice(1, 2), table.slice(3)])
    assert chunked.column("text").num_chunks == 3
    assert table_content_hash(chunked) == PINNED
    padded = pa.concat_tables([table, table]).combine_chunks().slice(4, 4)
    assert table_content_hash(padded) == PINNED
    assert table_content_hash(_parquet_round_trip(table)) == PINNED


# --- invariances ------------------------------------------------------------------------------


def _parquet_round_trip(table: pa.Table) -> pa.Table:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=3, compression="zstd")
    return pq.read_table(io.BytesIO(sink.getvalue()))


def test_schema_and_field_metadata_do_not_count() -> None:
    table = _every_type_table()
    schema = pa.schema(
        [f.with_metadata({b"doc": b"a column"}) for f in table.schema], metadata={b"k": b"v"}
    )
    assert table_content_hash(table.cast(schema)) == table_content_hash(table)
    assert table_content_hash(table.replace_schema_metadata({"x": "y"})) == PINNED


def test_nan_payloads_collapse_to_one_nan() -> None:
    for floats, ints, sign in ((np.float64, np.uint64, 1 << 63), (np.float32, np.uint32, 1 << 31)):
        canonical = np.array([math.nan, 1.0], floats)
        bits = canonical.view(ints)
        variants = [bits.copy() for _ in range(3)]
        variants[0][0] |= ints(0x5)
        variants[1][0] |= ints(sign)
        variants[2][0] |= ints(sign | 0x3)
        plain = table_content_hash(pa.table({"f": canonical}))
        for variant in variants:
            assert variant.tobytes() != bits.tobytes() and np.isnan(variant.view(floats)[0])
            assert table_content_hash(pa.table({"f": variant.view(floats)})) == plain
        assert table_content_hash(pa.table({"f": canonical[::-1].copy()})) != plain


def test_list_item_field_names_do_not_count() -> None:
    values = [[1, 2], None, []]
    for make in (pa.list_, pa.large_list):
        item = pa.table({"l": pa.array(values, make(pa.int64()))})
        element = pa.table({"l": pa.array(values, make(pa.field("element", pa.int64())))})
        assert table_content_hash(item) == table_content_hash(element)
    item = pa.table({"l": pa.array([[1, 2], None], pa.list_(pa.int64(), 2))})
    element = pa.table({"l": pa.array([[1, 2], None], pa.list_(pa.field("e", pa.int64()), 2))})
    assert table_content_hash(item) == table_content_hash(element)


def test_dictionary_encoding_hashes_the_decoded_values() -> None:
    """An encoding, not content: the same strings hash alike, plain or dictionary-encoded."""
    values = ["b", "a", None, "b"]
    assert table_content_hash(pa.table({"d": pa.array(values).dictionary_encode()})) == (
        table_content_hash(pa.table({"d": pa.array(values)}))
    )
    forward = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 0], pa.int32()), ["b", "a"])
    backward = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int8()), ["a", "b"])
    assert forward.to_pylist() == backward.to_pylist() == values
    assert table_content_hash(pa.table({"d": forward})) == table_content_hash(
        pa.table({"d": backward})
    )
    changed = pa.DictionaryArray.from_arrays(pa.array([1, 1, None, 1], pa.int8()), ["a", "b"])
    assert table_content_hash(pa.table({"d": changed})) != table_content_hash(
        pa.table({"d": forward})
    )


def test_values_hidden_under_nulls_do_not_count() -> None:
    mask = pa.array([False, True, False])
    ints = [pa.array([1, 2, 3]), pa.array([1, 9, 3])]
    tables = [
        pa.table({"i": pa.Array.from_buffers(pa.int64(), 3, [mask_buffer(), a.buffers()[1]])})
        for a in ints
    ]
    assert table_content_hash(tables[0]) == table_content_hash(tables[1])
    lists = [
        pa.ListArray.from_arrays(pa.array([0, 1, 3, 4]), pa.array(v), mask=mask)
        for v in ([1, 2, 3, 4], [1, 8, 8, 4])
    ]
    assert table_content_hash(pa.table({"l": lists[0]})) == table_content_hash(
        pa.table({"l": lists[1]})
    )
    fixed = [
        pa.FixedSizeListArray.from_arrays(pa.array(v), 2, mask=mask)
        for v in ([1, 2, 3, 4, 5, 6], [1, 2, 7, 7, 5, 6])
    ]
    assert table_content_hash(pa.table({"f": fixed[0]})) == table_content_hash(
        pa.table({"f": fixed[1]})
    )
    records = [
        pa.StructArray.from_arrays([pa.array(v), pa.array(w)], names=["a", "b"], mask=mask)
        for v, w in (([1, 2, 3], ["x", "y", "z"]), ([1, 5, 3], ["x", "long", "z"]))
    ]
    assert table_content_hash(pa.table({"r": records[0]})) == table_content_hash(
        pa.table({"r": records[1]})
    )
    bools = [
        pa.Array.from_buffers(pa.bool_(), 3, [mask_buffer(), pa.py_buffer(bytes([b]))])
        for b in (0b101, 0b111)
    ]
    assert table_content_hash(pa.table({"b": bools[0]})) == table_content_hash(
        pa.table({"b": bools[1]})
    )


def mask_buffer() -> pa.Buffer:
    """Validity bits of [valid, null, valid]."""
    return pa.py_buffer(bytes([0b101]))


# --- what must count ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (pa.array([None], pa.string()), pa.array([""], pa.string())),
        (pa.array([None], pa.binary()), pa.array([b""], pa.binary())),
        (pa.array([None], pa.int64()), pa.array([0], pa.int64())),
        (pa.array([None], pa.float64()), pa.array([0.0], pa.float64())),
        (pa.array([None], pa.bool_()), pa.array([False], pa.bool_())),
        (pa.array([None], pa.list_(pa.int64())), pa.array([[]], pa.list_(pa.int64()))),
        (pa.array([[None]], pa.list_(pa.int64())), pa.array([[0]], pa.list_(pa.int64()))),
        (pa.array([None], pa.timestamp("s")), pa.array([0], pa.timestamp("s"))),
        (pa.array([None], pa.date32()), pa.array([0], pa.date32())),
        (
            pa.array([None], pa.struct([("a", pa.int64())])),
            pa.array([{"a": None}], pa.struct([("a", pa.int64())])),
        ),
        (pa.array([None], pa.list_(pa.int64(), 1)), pa.array([[None]], pa.list_(pa.int64(), 1))),
        (pa.array([1], pa.int64()), pa.array([1], pa.uint64())),
        (pa.array([1], pa.int64()), pa.array([1], pa.timestamp("us"))),
        (pa.array([1], pa.timestamp("us")), pa.array([1], pa.timestamp("ns"))),
        (pa.array([0.0]), pa.array([-0.0])),
        (pa.array(["ab", "c"]), pa.array(["a", "bc"])),
        (pa.array([["a", "b"], ["c"]]), pa.array([["a"], ["b", "c"]])),
        (pa.array([[1, 2], [3]]), pa.array([[1], [2, 3]])),
        (pa.array([True, False, True]), pa.array([True, True, True])),
        (
            pa.array([{"a": 1, "b": 2}], pa.struct([("a", pa.int64()), ("b", pa.int64())])),
            pa.array([{"b": 1, "a": 2}], pa.struct([("b", pa.int64()), ("a", pa.int64())])),
        ),
    ],
)
def test_logically_different_columns_hash_differently(a: pa.Array, b: pa.Array) -> None:
    assert table_content_hash(pa.table({"c": a})) != table_content_hash(pa.table({"c": b}))


def test_names_order_and_row_count_count() -> None:
    table = pa.table({"a": [1, 2], "b": ["x", "y"]})
    assert table_content_hash(table) != table_content_hash(table.rename_columns(["a", "c"]))
    assert table_content_hash(table) != table_content_hash(table.select(["b", "a"]))
    assert table_content_hash(table) != table_content_hash(table.slice(0, 1))
    # nothing but the row count left
    assert table_content_hash(table, ["a", "b"]) != table_content_hash(
        table.slice(0, 1), ["a", "b"]
    )
    assert table_content_hash(pa.table({"n": pa.nulls(3)})) != table_content_hash(
        pa.table({"n": pa.nulls(5)})
    )


def test_exclude_columns_hashes_as_if_they_were_absent() -> None:
    table = pa.table({"a": [1, 2], "when": ["now", "later"], "b": [0.5, None]})
    assert table_content_hash(table, ["when"]) == table_content_hash(table.drop_columns(["when"]))
    assert table_content_hash(table, ["when"]) != table_content_hash(table)
    assert table_content_hash(table, ["missing"]) == table_content_hash(table)
    assert table_content_hash(table, iter(["when", "b"])) == table_content_hash(table.select(["a"]))
    other = table.set_column(1, "when", pa.array(["yesterday", "never"]))
    assert table_content_hash(other, ["when"]) == table_content_hash(table, ["when"])


def test_empty_tables_and_columns_hash() -> None:
    empty = pa.table({"s": pa.array([], pa.string()), "l": pa.array([], pa.list_(pa.int64()))})
    assert table_content_hash(empty) == table_content_hash(_parquet_round_trip(empty))
    zero_chunks = pa.Table.from_batches([], empty.schema)
    assert zero_chunks.column("s").num_chunks == 0
    assert table_content_hash(zero_chunks) == table_content_hash(empty)
    only_empty = pa.table({"s": ["", "", ""]})
    assert table_content_hash(only_empty) != table_content_hash(pa.table({"s": ["", "", None]}))
    assert table_content_hash(only_empty) == table_content_hash(
        pa.table({"s": ["a", "", "", ""]}).slice(1)
    )


def test_unsupported_types_are_refused() -> None:
    with pytest.raises(TypeError, match="no content hash"):
        table_content_hash(
            pa.table({"m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))})
        )


# --- properties --------------------------------------------------------------------------------

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
TEXT = st.text(max_size=4)
UTC_TIMES = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)).map(
    lambda t: t.replace(tzinfo=dt.UTC)
)
STRUCT = pa.struct([("a", pa.int32()), ("b", pa.string())])

# kind: (Arrow type, strategy of one value, whether the column is dictionary-encoded)
KINDS = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1), False),
    "int16": (pa.int16(), st.integers(-(2**15), 2**15 - 1), False),
    "uint8": (pa.uint8(), st.integers(0, 255), False),
    "float64": (pa.float64(), FLOATS, False),
    "float32": (pa.float32(), st.floats(width=32, allow_nan=True), False),
    "bool": (pa.bool_(), st.booleans(), False),
    "string": (pa.string(), TEXT, False),
    "large_string": (pa.large_string(), TEXT, False),
    "binary": (pa.binary(), st.binary(max_size=4), False),
    "list": (pa.list_(pa.int64()), st.lists(st.none() | st.integers(-9, 9), max_size=3), False),
    "large_list": (pa.large_list(pa.string()), st.lists(st.none() | TEXT, max_size=3), False),
    "fixed": (
        pa.list_(pa.float64(), 2),
        st.lists(st.none() | FLOATS, min_size=2, max_size=2),
        False,
    ),
    "struct": (
        STRUCT,
        st.fixed_dictionaries(
            {"a": st.none() | st.integers(-(2**31), 2**31 - 1), "b": st.none() | TEXT}
        ),
        False,
    ),
    "timestamp": (pa.timestamp("us", tz="UTC"), UTC_TIMES, False),
    "date": (pa.date32(), st.dates(), False),
    "dictionary": (pa.string(), st.sampled_from(["a", "b", "", "long value"]), True),
}


def _build(kinds: list[str], rows: list[list[object]]) -> pa.Table:
    columns = {}
    for index, kind in enumerate(kinds):
        data_type, _, encoded = KINDS[kind]
        array = pa.array([row[index] for row in rows], data_type)
        columns[f"c{index}"] = array.dictionary_encode() if encoded else array
    return pa.table(columns)


@st.composite
def tables(draw, min_rows: int = 0) -> tuple[list[str], list[list[object]]]:
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4))
    n = draw(st.integers(min_rows, 7))
    rows = [[draw(st.none() | KINDS[kind][1]) for kind in kinds] for _ in range(n)]
    return kinds, rows


def _key(value: object) -> object:
    """A value as the hash should see it: NaNs are one value, -0.0 and 0.0 are two."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else struct.pack("<d", value)
    if isinstance(value, list):
        return ("list", *(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", *((k, _key(v)) for k, v in sorted(value.items())))
    return (type(value).__name__, value)


@PROPERTY
@given(data=st.data(), table=tables(min_rows=1))
def test_every_single_cell_change_changes_the_hash(data, table) -> None:
    kinds, rows = table
    column = data.draw(st.integers(0, len(kinds) - 1))
    row = data.draw(st.integers(0, len(rows) - 1))
    new = data.draw(st.none() | KINDS[kinds[column]][1])
    old = rows[row][column]
    if kinds[column] == "float32" and isinstance(new, float):
        new = float(np.float32(new))
        old = None if old is None else float(np.float32(old))
    assume(_key(new) != _key(old))
    changed = [list(r) for r in rows]
    changed[row][column] = new
    assert table_content_hash(_build(kinds, changed)) != table_content_hash(_build(kinds, rows))


@PROPERTY
@given(data=st.data(), table=tables())
def test_chunking_slicing_and_metadata_do_not_change_the_hash(data, table) -> None:
    kinds, rows = table
    whole = _build(kinds, rows)
    expected = table_content_hash(whole)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    bounds = [0, *cuts, len(rows)]
    pieces = [whole.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    assert table_content_hash(pa.concat_tables(pieces)) == expected
    assert table_content_hash(pa.concat_tables(pieces).combine_chunks()) == expected
    assert table_content_hash(whole.replace_schema_metadata({"a": "b"})) == expected
    assert table_content_hash(_parquet_round_trip(whole)) == expected
    start = data.draw(st.integers(0, len(rows)))
    length = data.draw(st.integers(0, len(rows) - start))
    sliced = _build(kinds, rows[start : start + length])
    # a slice of a bigger table (offsets into shared buffers) hashes as a fresh table
    assert table_content_hash(whole.slice(start, length)) == table_content_hash(sliced)
    assert table_content_hash(
        pa.concat_tables([whole, whole]).slice(len(rows) + start, length)
    ) == (table_content_hash(sliced))
