"""Content hashes: the data versions that stop a rebuild cascade when output is unchanged.

A table's hash covers its logical content only: column names and types, and the values in
row order. It is computed from Arrow arrays, not from a file encoding, so it does not change
with the Parquet writer, compression, chunking, schema metadata or the library version.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Bump when the encoding below changes: every data version changes with it.
SCHEME = b"formula_assets/table-content/1"


def bytes_hash(*parts: bytes | str) -> str:
    """SHA-256 of the parts, each followed by a separator, so ("ab", "c") ≠ ("a", "bc")."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8") if isinstance(part, str) else part)
        digest.update(b"\x00")
    return digest.hexdigest()


def table_content_hash(table: pa.Table, exclude_columns: Iterable[str] = ()) -> str:
    """SHA-256 of the table's column names, types and values, columns in table order."""
    excluded = set(exclude_columns)
    digest = hashlib.sha256(SCHEME)
    digest.update(struct.pack("<q", table.num_rows))
    for name, column in zip(table.column_names, table.columns, strict=True):
        if name in excluded:
            continue
        _frame(digest, name.encode("utf-8"))
        _frame(digest, type_name(column.type).encode("utf-8"))
        _array(digest, column.combine_chunks() if column.num_chunks != 1 else column.chunk(0))
    return digest.hexdigest()


def _frame(digest, data: bytes) -> None:
    digest.update(struct.pack("<q", len(data)))
    digest.update(data)


def type_name(data_type: pa.DataType) -> str:
    """The type as text, without the names Arrow gives list items (`item`, `element`)."""
    if pa.types.is_fixed_size_list(data_type):
        return f"fixed_size_list<{type_name(data_type.value_type)}>[{data_type.list_size}]"
    if pa.types.is_large_list(data_type):
        return f"large_list<{type_name(data_type.value_type)}>"
    if pa.types.is_map(data_type):
        return f"map<{type_name(data_type.key_type)}, {type_name(data_type.item_type)}>"
    if pa.types.is_list(data_type):
        return f"list<{type_name(data_type.value_type)}>"
    if pa.types.is_struct(data_type):
        fields = ", ".join(
            f"{data_type.field(i).name}: {type_name(data_type.field(i).type)}"
            for i in range(data_type.num_fields)
        )
        return f"struct<{fields}>"
    if pa.types.is_dictionary(data_type):
        return type_name(data_type.value_type)
    return str(data_type)


def _numbers(digest, array: np.ndarray) -> None:
    values = np.ascontiguousarray(array)
    if values.dtype.kind == "f":
        values = values.copy()
        values[np.isnan(values)] = np.nan  # one NaN, whatever its payload
    _frame(digest, values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes())


def _array(digest, array: pa.Array) -> None:
    data_type = array.type
    if pa.types.is_dictionary(data_type):  # an encoding, not content: hash the values
        _array(digest, array.dictionary_decode())
        return
    digest.update(struct.pack("<q", len(array)))
    if array.null_count:
        valid = pc.is_valid(array).to_numpy(zero_copy_only=False)
        _frame(digest, b"\x01" + np.packbits(valid).tobytes())
    else:
        digest.update(b"\x00")
    if pa.types.is_null(data_type):
        return
    elif pa.types.is_boolean(data_type):
        values = pc.fill_null(array, False).to_numpy(zero_copy_only=False)
        _frame(digest, np.packbits(values).tobytes())
    elif pa.types.is_integer(data_type) or pa.types.is_floating(data_type):
        _numbers(digest, pc.fill_null(array, 0).to_numpy(zero_copy_only=False))
    elif pa.types.is_temporal(data_type):
        width = pa.int32() if data_type.bit_width == 32 else pa.int64()
        _numbers(digest, pc.fill_null(array.view(width), 0).to_numpy(zero_copy_only=False))
    elif (
        pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_binary(data_type)
        or pa.types.is_large_binary(data_type)
    ):
        _strings(digest, array)
    elif pa.types.is_fixed_size_list(data_type):
        _array(digest, array.flatten())
    elif pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        lengths = pc.fill_null(pc.list_value_length(array), 0).cast(pa.int64())
        _numbers(digest, lengths.to_numpy(zero_copy_only=False))
        _array(digest, array.flatten())
    elif pa.types.is_struct(data_type):
        for child in array.flatten():
            _array(digest, child)
    else:
        raise TypeError(f"no content hash for Arrow type {data_type}")


def _strings(digest, array: pa.Array) -> None:
    """Lengths, then the bytes of every value back to back (nulls count as empty)."""
    binary = pc.fill_null(array, "").cast(pa.large_binary())
    lengths = pc.binary_length(binary).cast(pa.int64()).to_numpy(zero_copy_only=False)
    _numbers(digest, lengths)
    _, offsets_buffer, data_buffer = binary.buffers()
    start = binary.offset
    offsets = np.frombuffer(offsets_buffer, dtype="<i8")[start : start + len(binary) + 1]
    if data_buffer is None or len(binary) == 0:
        _frame(digest, b"")
        return
    _frame(digest, memoryview(data_buffer)[offsets[0] : offsets[-1]].tobytes())
