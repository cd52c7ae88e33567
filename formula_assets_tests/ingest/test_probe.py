"""The change probe of the packaged snapshot and of a dump: a version that changes exactly
when the pull would read something else (the SPARQL probe: test_sparql.py)."""

import os
from pathlib import Path

import pytest

from formula_assets.core.hashing import bytes_hash
from formula_assets.ingest.probe import fingerprint
from formula_assets.ingest.snapshot import snapshot_path


def test_the_snapshot_is_fingerprinted_by_its_bytes() -> None:
    digest = bytes_hash(snapshot_path().read_bytes())[:16]
    found = fingerprint("snapshot")
    assert found.version == f"snapshot-{digest}" and len(digest) == 16
    assert found.metadata == {"source": "snapshot", "file_hash": digest}


def test_a_dump_is_fingerprinted_by_its_size_and_modification_time(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    dump.write_bytes(b"[]")
    os.utime(dump, ns=(1_000_000_000, 2_000_000_000))
    found = fingerprint("dump", dump_path=str(dump))
    assert found.version == "dump-2-2000000000"
    assert found.metadata == {
        "source": "dump",
        "path": str(dump),
        "bytes": 2,
        "mtime_ns": 2_000_000_000,
    }
    dump.write_bytes(b"[{}]")
    os.utime(dump, ns=(1_000_000_000, 3_000_000_000))
    assert fingerprint("dump", dump_path=str(dump)).version == "dump-4-3000000000"


def test_an_unknown_source_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown formula source 'ftp'; choose one of"):
        fingerprint("ftp")
