"""The service follows the pipeline: a newly published version is loaded beside the serving
one and switched to whole; a request is answered from one version; a version whose tables do
not yet agree, or that cannot be loaded, leaves the old one serving. The last test runs the
real service and publishes under load."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from upath import UPath

from formula_assets.core import lake
from formula_assets.search.meaning import SearchError
from formula_assets.serve.published import Published, Snapshot, fingerprint
from formula_assets_tests.support.search_lake import (
    default_embedder,
    people_records,
    write_search_lake,
)

CLI = Path(sys.executable).parent / "formula-assets"


@dataclass
class Content:
    name: str
    problem: str | None = None

    def disagreement(self) -> str | None:
        return self.problem


class Source:
    """A fingerprint and a loader a test controls."""

    def __init__(self) -> None:
        self.token = "v1"
        self.loads: list[str] = []
        self.fail = False
        self.problem: str | None = None

    def load(self, version: str) -> Snapshot:
        self.loads.append(version)
        if self.fail:
            raise SearchError("search_index is not a readable Parquet table")
        return Snapshot(version, time.time(), Content(version, self.problem))


def test_a_new_version_is_loaded_once_it_settled_and_switched_whole() -> None:
    source = Source()
    published = Published(source.load, lambda: source.token)
    assert published.current.version == "v1" and source.loads == ["v1"]
    seen = published.check()
    assert published.current.version == "v1" and source.loads == ["v1"]  # nothing changed
    source.token = "v2"
    seen = published.check(seen)  # changed: not yet settled
    assert published.current.version == "v1" and source.loads == ["v1"]
    source.token = "v3"  # still being published
    seen = published.check(seen)
    assert source.loads == ["v1"]
    seen = published.check(seen)  # v3 twice: settled
    assert published.current.version == "v3" and source.loads == ["v1", "v3"]
    assert published.current.content.name == "v3"


def test_a_version_that_cannot_load_leaves_the_old_one_serving() -> None:
    source = Source()
    published = Published(source.load, lambda: source.token)
    source.token, source.fail = "v2", True
    published.check(published.check())
    assert published.current.version == "v1" and published.failures == 1


def test_a_version_whose_tables_disagree_waits_for_the_rest() -> None:
    source = Source()
    published = Published(source.load, lambda: source.token)
    source.token, source.problem = "v2", "the search index holds 3 item(s) wikidata_formulae lacks"
    seen = published.check(published.check())
    assert published.current.version == "v1" and published.failures == 0
    published.check(published.check(seen))  # not loaded again while nothing else changes
    assert source.loads == ["v1", "v2"]
    source.token, source.problem = "v3", None  # the rest published
    published.check(published.check(published.check()))
    assert published.current.version == "v3"


def test_the_fingerprint_follows_each_table(tmp_path: Path) -> None:
    root = UPath(tmp_path)
    empty = fingerprint(root)
    lake.write_bytes_atomic(b"one", root / "name_index.parquet")
    first = fingerprint(root)
    assert first != empty
    time.sleep(0.01)
    lake.write_bytes_atomic(b"two", root / "name_index.parquet")  # rewritten, same size
    assert fingerprint(root) != first
    lake.write_bytes_atomic(b"x", root / "something_else.parquet")  # not a table the service reads
    assert fingerprint(root) == fingerprint(root, ("wikidata_formulae", "structure_index",
                                                   "name_index", "search_index",
                                                   "annotation_audit"))  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(port: int, path: str) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def test_a_lake_on_an_object_store_is_served_and_its_republication_seen(
    s3: str, tmp_path: Path
) -> None:
    """The object store of docs/deployment.md: the tables are read from it, and a table
    published again (a new object, a new ETag) changes the fingerprint the watcher follows."""
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    from formula_assets.serve.content import Loaded

    local = tmp_path / "lake"
    local.mkdir()
    write_search_lake(local, people_records(), default_embedder())
    audit = tmp_path / "audit.parquet"
    pq.write_table(pa.table({"qid": ["Q41591"], "finding": ["seen first"]}), str(audit))
    store = fsspec.filesystem("s3", skip_instance_cache=True)
    for table in local.glob("*.parquet"):
        store.put(str(table), f"{s3}/lake/{table.name}")
    store.put(str(audit), f"{s3}/lake/annotation_audit.parquet")
    root = UPath(f"{s3}/lake")

    content = Loaded.load(root, offline=True)
    assert content.search("Ohm's law", "text", 3)["hits"][0]["qid"] == "Q41591"
    assert content.disagreement() is None
    before = fingerprint(root)
    assert fingerprint(root) == before  # nothing published: the same token
    pq.write_table(pa.table({"qid": ["Q41591"], "finding": ["seen again"]}), str(audit))
    store.put(str(audit), f"{s3}/lake/annotation_audit.parquet")  # the same size, new content
    assert store.size(f"{s3}/lake/annotation_audit.parquet") == audit.stat().st_size
    assert fingerprint(root) != before


@pytest.mark.slow
def test_the_service_switches_under_load_without_a_failed_request(tmp_path: Path) -> None:
    """A new item published while 4 clients search: no request fails, a request labelled
    with the old version never holds the new item, one labelled new always does."""
    serving, staged = tmp_path / "lake", tmp_path / "staged"
    serving.mkdir()
    staged.mkdir()
    records = people_records()
    embedder = default_embedder()
    write_search_lake(serving, records, embedder)
    newcomer = replace(records[-1], qid="Q99999991", label="zyxwvut reciprocity law")
    write_search_lake(staged, [*records, newcomer], embedder)
    port = free_port()
    env = {**os.environ, "FORMULA_ASSETS_DATA_LAKE": str(serving), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port), "--poll", "0.2", "--workers", "2"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    query = "/api/search?" + urllib.parse.urlencode({"q": "zyxwvut reciprocity law"})
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _, body = get(port, "/api/health")
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "no service"
                time.sleep(0.2)
        old = body["version"]
        answers: list[tuple[int, str, bool]] = []
        stop = threading.Event()

        def client() -> None:
            while not stop.is_set():
                status, body = get(port, query)
                found = status == 200 and body["hits"][0]["qid"] == newcomer.qid
                answers.append((status, body.get("version", ""), found))

        clients = [threading.Thread(target=client) for _ in range(4)]
        for thread in clients:
            thread.start()
        time.sleep(2)
        for table in sorted(staged.glob("*.parquet")):  # published as the lake does: renamed
            shutil.copy(table, serving / f".{table.name}.tmp")
            os.replace(serving / f".{table.name}.tmp", serving / table.name)
        deadline = time.monotonic() + 60
        while not any(found for _, _, found in answers[-4:]):
            assert time.monotonic() < deadline, "never switched"
            time.sleep(0.2)
        time.sleep(2)  # both workers, a while longer
        stop.set()
        for thread in clients:
            thread.join(timeout=30)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert answers and all(status == 200 for status, _, _ in answers)
    versions = {version for _, version, _ in answers}
    assert len(versions) == 2 and old in versions
    assert not any(found for _, version, found in answers if version == old)
    assert all(found for _, version, found in answers if version != old)
