"""What the service answers from: one loaded version of the published tables at a time,
switched whole when the pipeline publishes new ones.

The lake's writes are atomic (a finished file is renamed over the old one), so each table is
always either its old or its new version. A watcher thread looks at the tables' file
identities (size, modification time; an object store's ETag) every `poll_s` seconds; when
they changed and then stayed the same for one more look (a refresh writes several tables in
a row), it loads a new `Snapshot` beside the one serving, and swaps the reference. A request
takes the reference once, at its start, so it is answered from one version, never a mix; one
that started before the swap finishes on the old version. A new version is switched to only
when its tables agree on the items they hold (a refresh publishes `wikidata_formulae` minutes
before the indexes rebuilt from it). A load that fails (a table unreadable, a model missing)
leaves the old version serving and is logged.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from upath import UPath

from formula_assets.search.meaning import SearchError

LOG = logging.getLogger("formula_assets.serve")
# what makes a published version unusable (a table missing or damaged, a model not there)
UNUSABLE = (SearchError, OSError, pa.ArrowInvalid)
# the tables a snapshot reads (the searcher's and the audit's)
TABLES = (
    "wikidata_formulae",
    "structure_index",
    "name_index",
    "search_index",
    "annotation_audit",
)


def fingerprint(root: UPath, tables: Sequence[str] = TABLES) -> str:
    """A token that changes whenever one of the tables is published again (or appears)."""
    parts = []
    for name in tables:
        path = root / f"{name}.parquet"
        try:
            info: dict[str, Any] = path.fs.info(path.path)
        except FileNotFoundError:
            parts.append(f"{name}:-")
            continue
        stamp = info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("created")
        parts.append(f"{name}:{info.get('size')}:{stamp}:{info.get('ino', '')}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    """One version of everything a request reads."""

    version: str
    loaded_at: float
    content: Any  # the loaded searcher and audit (`serve.app.Loaded`)


class Published:
    """The snapshot serving now, and the watcher that replaces it."""

    def __init__(
        self,
        load: Callable[[str], Snapshot],
        fingerprint: Callable[[], str],
        poll_s: float = 2.0,
    ) -> None:
        self._load = load
        self._fingerprint = fingerprint
        self.poll_s = poll_s
        version = fingerprint()
        self._current = load(version)
        self._waiting: str | None = None  # a version whose tables did not agree
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures = 0

    @property
    def current(self) -> Snapshot:
        return self._current

    def check(self, seen: str | None = None) -> str | None:
        """One look: load and swap when the tables changed and `seen` (the previous look's
        token) says they have settled. Returns this look's token."""
        now = self._fingerprint()
        if now in (self._current.version, self._waiting) or now != seen:
            return now
        try:
            snapshot = self._load(now)
        except UNUSABLE:  # the tables are not usable as published: keep the serving version
            self.failures += 1
            LOG.exception("loading the tables published as %s failed; still serving %s", now,
                          self._current.version)  # fmt: skip
            return now
        waiting = snapshot.content.disagreement()
        if waiting:  # a refresh has published some tables, not yet the others
            LOG.info("not switching to %s yet: %s", now, waiting)
            self._waiting = now  # loaded again only once more tables are published
            return now
        self._current = snapshot
        LOG.info("serving the tables published as %s", now)
        return now

    def start(self) -> None:
        def watch() -> None:
            seen: str | None = None
            while not self._stop.wait(self.poll_s):
                seen = self.check(seen)

        self._thread = threading.Thread(target=watch, name="published-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.poll_s + 5)


def wait_for(published: Published, version: str, timeout_s: float) -> bool:
    """Until `published` serves `version` (tests, benchmarks)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if published.current.version == version:
            return True
        time.sleep(0.05)
    return False
