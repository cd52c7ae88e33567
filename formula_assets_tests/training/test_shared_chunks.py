"""A chunked computation split between real processes through a directory: each chunk is
computed once, every process gets the whole result, a later call computes nothing, and a
claim left by a dead or stuck process, or a chunk cut short, does not block anyone."""

import multiprocessing
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch

from formula_assets.training import shared_chunks as shared_chunks_module
from formula_assets.training.shared_chunks import prune, shared_chunks

CHUNKS = 12


def chunk(k: int) -> list[torch.Tensor]:
    return [torch.full((k + 1, 3), float(k)), torch.arange(k, dtype=torch.float32)]


def _computing(log: Path, delay: float):
    def compute(k: int) -> list[torch.Tensor]:
        with log.open("a") as out:
            out.write(f"{k}\n")
        time.sleep(delay)
        return chunk(k)

    return compute


def _worker(directory: str, log: str, start, results) -> None:
    start.wait()
    parts = shared_chunks(Path(directory), CHUNKS, _computing(Path(log), 0.05))
    results.put([[t.tolist() for t in part] for part in parts])


def same(a: list[list[torch.Tensor]], b: list[list[torch.Tensor]]) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y) and all(torch.equal(s, t) for s, t in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True)
    )


def expected() -> list[list[torch.Tensor]]:
    return [chunk(k) for k in range(CHUNKS)]


def test_two_processes_split_the_chunks_and_both_get_everything(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    # both start together, however long each takes to import torch
    start, results = context.Barrier(2), context.Queue()
    logs = [tmp_path / f"computed-{i}.txt" for i in range(2)]
    workers = [
        context.Process(target=_worker, args=(str(tmp_path / "store"), str(log), start, results))
        for log in logs
    ]
    for worker in workers:
        worker.start()
    got = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    want = [[t.tolist() for t in part] for part in expected()]
    assert got == [want, want]
    computed = [[int(k) for k in log.read_text().split()] if log.exists() else [] for log in logs]
    assert sorted(computed[0] + computed[1]) == list(range(CHUNKS))  # each chunk once
    assert computed[0] and computed[1]  # and both worked


def test_a_later_call_reads_every_chunk(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = shared_chunks(store, CHUNKS, _computing(tmp_path / "log", 0.0))
    assert same(first, expected())

    def never(k: int) -> list[torch.Tensor]:
        raise AssertionError(f"chunk {k} computed again")

    assert same(shared_chunks(store, CHUNKS, never), expected())


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_dead_processs_claim_is_taken_over(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "3.claim").write_text(str(_dead_pid()))
    log = tmp_path / "log"
    assert same(shared_chunks(store, CHUNKS, _computing(log, 0.0), poll_s=0.01), expected())
    assert sorted(int(k) for k in log.read_text().split()) == list(range(CHUNKS))


def test_a_live_claim_is_waited_for_until_it_is_stale(tmp_path: Path, live_pid: int) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "5.claim").write_text(str(live_pid))  # alive, and never publishes
    log = tmp_path / "log"
    started = time.perf_counter()
    parts = shared_chunks(store, CHUNKS, _computing(log, 0.0), stale_s=0.5, poll_s=0.01)
    assert time.perf_counter() - started >= 0.4  # it waited for the claim first
    assert same(parts, expected())
    assert log.read_text().split().count("5") == 1


def test_a_chunk_published_by_another_process_is_read_not_computed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "7.claim").write_text(str(os.getpid()))
    torch.save(chunk(7), store / "7.pt")
    log = tmp_path / "log"
    assert same(shared_chunks(store, CHUNKS, _computing(log, 0.0)), expected())
    assert "7" not in log.read_text().split()


@pytest.mark.parametrize("claimed", [True, False])
def test_a_chunk_cut_short_is_computed_again(tmp_path: Path, claimed: bool) -> None:
    """With its claim or without it: replaced, shared as before (nothing refused)."""
    store = tmp_path / "store"
    shared_chunks(store, CHUNKS, _computing(tmp_path / "first", 0.0))
    (store / "2.pt").write_bytes((store / "2.pt").read_bytes()[:40])
    if not claimed:
        (store / "2.claim").unlink()
    log = tmp_path / "log"
    with warnings.catch_warnings():
        warnings.simplefilter("error", shared_chunks_module.StoreRefusedWarning)
        parts = shared_chunks(store, CHUNKS, _computing(log, 0.0), poll_s=0.01)
    assert same(parts, expected())
    assert log.read_text().split() == ["2"]
    assert torch.load(store / "2.pt", weights_only=True)[0].shape == (3, 3)  # published again


@pytest.mark.parametrize("keep", [1, 2])
def test_prune_keeps_the_most_recently_used(tmp_path: Path, keep: int) -> None:
    for age, name in enumerate(["newest", "middle", "oldest"]):
        (tmp_path / name).mkdir()
        (tmp_path / name / "0.pt").write_bytes(b"x")
        os.utime(tmp_path / name, (time.time() - 100 * age, time.time() - 100 * age))
    prune(tmp_path, keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["newest", "middle"][:keep])
    prune(tmp_path / "absent", 1)  # nothing there yet: nothing to do


def test_a_chunk_that_is_not_tensors_is_computed_again(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shared_chunks(store, CHUNKS, _computing(tmp_path / "first", 0.0))
    torch.save({"not": Path("a chunk")}, store / "4.pt")  # loads only without weights_only
    log = tmp_path / "log"
    assert same(shared_chunks(store, CHUNKS, _computing(log, 0.0), poll_s=0.01), expected())
    assert log.read_text().split() == ["4"]


def test_published_chunks_are_read_even_without_their_claims(tmp_path: Path) -> None:
    store = tmp_path / "a" / "b"  # made with its parents
    shared_chunks(store, CHUNKS, _computing(tmp_path / "first", 0.0))
    assert (store / "0.claim").read_text() == str(os.getpid())  # who computed it
    for claim in store.glob("*.claim"):
        claim.unlink()
    log = tmp_path / "log"
    assert same(shared_chunks(store, CHUNKS, _computing(log, 0.0)), expected())
    assert not log.exists()


def test_a_call_marks_its_directory_used(tmp_path: Path) -> None:
    old = time.time() - 1000
    for name in ("first", "second"):
        shared_chunks(tmp_path / name, 2, _computing(tmp_path / "log", 0.0))
        os.utime(tmp_path / name, (old, old))
    os.utime(tmp_path / "second", (old + 10, old + 10))
    shared_chunks(tmp_path / "first", 2, _computing(tmp_path / "log", 0.0))  # read: used now
    prune(tmp_path, 2)  # the log file is not a folder: never pruned
    prune(tmp_path, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "log"]


@pytest.fixture
def live_pid():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process.pid
    assert process.poll() is None  # a claim is only looked at, never signalled
    process.kill()
    process.wait()


def test_who_may_take_over_a_claim(tmp_path: Path, live_pid: int, monkeypatch) -> None:
    tmp_path.mkdir(exist_ok=True)
    claim = tmp_path / "0.claim"
    assert shared_chunks_module._abandoned(tmp_path, 0, 60.0) is True  # no claim
    assert shared_chunks_module._claim(tmp_path, 0) is True
    assert shared_chunks_module._claim(tmp_path, 0) is False  # once only
    claim.write_text(str(live_pid))
    assert shared_chunks_module._abandoned(tmp_path, 0, 60.0) is False
    claim.write_text("")  # created, its process id not yet written
    assert shared_chunks_module._abandoned(tmp_path, 0, 60.0) is False
    claim.write_text(str(_dead_pid()))
    assert shared_chunks_module._abandoned(tmp_path, 0, 60.0) is True
    claim.write_text(str(live_pid))
    os.utime(claim, (time.time() - 120, time.time() - 120))
    assert shared_chunks_module._abandoned(tmp_path, 0, 60.0) is True  # stuck
    claim.write_text(str(live_pid))

    def another_users(pid: int, signal: int) -> None:
        raise PermissionError(pid)

    monkeypatch.setattr(shared_chunks_module.os, "kill", another_users)
    assert shared_chunks_module._abandoned(tmp_path, 0, 60.0) is False


def test_waiting_polls_rather_than_spins(tmp_path: Path, live_pid: int, monkeypatch) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "5.claim").write_text("")  # a fresh claim being written: waited for
    looks: list[int] = []
    real = shared_chunks_module._abandoned

    def counted(directory: Path, k: int, stale_s: float) -> bool:
        looks.append(k)
        return real(directory, k, stale_s)

    monkeypatch.setattr(shared_chunks_module, "_abandoned", counted)
    parts = shared_chunks(store, CHUNKS, _computing(tmp_path / "log", 0.0), stale_s=0.5)
    assert same(parts, expected())
    assert 5 <= len(looks) <= 20  # about every 50 ms for half a second


def test_a_store_that_cannot_be_made_costs_only_the_sharing(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    log = tmp_path / "log"
    with pytest.warns(shared_chunks_module.StoreRefusedWarning, match=f"{CHUNKS} of {CHUNKS}"):
        parts = shared_chunks(tmp_path / "file" / "store", CHUNKS, _computing(log, 0.0))
    assert same(parts, expected())
    assert sorted(int(k) for k in log.read_text().split()) == list(range(CHUNKS))


def test_a_refusal_is_told_to_the_log_the_caller_names(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    heard: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", shared_chunks_module.StoreRefusedWarning)
        parts = shared_chunks(
            tmp_path / "file" / "s", 2, _computing(tmp_path / "log", 0.0), warn=heard.append
        )
    assert same(parts, expected()[:2])
    assert len(heard) == 1 and heard[0].startswith(f"{tmp_path / 'file' / 's'} refused 2 of 2")


def _refusing_claims(monkeypatch) -> None:
    """A store that takes no new files (read-only, or another user's), even as root."""
    real = os.open

    def refuse(path, flags, *args, **kwargs):
        if str(path).endswith(".claim"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(shared_chunks_module.os, "open", refuse)


def test_a_read_only_store_is_read_and_the_rest_computed_here(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "store"
    shared_chunks(store, CHUNKS, _computing(tmp_path / "first", 0.0))
    (store / "4.pt").unlink()
    (store / "4.claim").unlink()
    _refusing_claims(monkeypatch)
    log = tmp_path / "log"
    with pytest.warns(shared_chunks_module.StoreRefusedWarning, match=f"1 of {CHUNKS}"):
        parts = shared_chunks(store, CHUNKS, _computing(log, 0.0), poll_s=0.01)
    assert same(parts, expected())
    assert log.read_text().split() == ["4"]


def test_a_cut_short_chunk_in_a_read_only_store_is_computed_here(
    tmp_path: Path, monkeypatch, live_pid: int
) -> None:
    """No one can replace it: not waited for, even with its claim's process alive."""
    store = tmp_path / "store"
    shared_chunks(store, CHUNKS, _computing(tmp_path / "first", 0.0))
    (store / "2.pt").write_bytes((store / "2.pt").read_bytes()[:40])
    (store / "2.claim").write_text(str(live_pid))
    _refusing_claims(monkeypatch)
    monkeypatch.setattr(Path, "unlink", _refusing_unlink(Path.unlink))
    log = tmp_path / "log"
    started = time.perf_counter()
    with pytest.warns(shared_chunks_module.StoreRefusedWarning, match="Permission denied"):
        parts = shared_chunks(store, CHUNKS, _computing(log, 0.0), stale_s=3.0, poll_s=0.01)
    assert time.perf_counter() - started < 1.5  # not until the claim went stale
    assert same(parts, expected())
    assert log.read_text().split() == ["2"]


def test_a_claim_left_by_this_process_is_not_waited_for(tmp_path: Path) -> None:
    """An earlier call here claimed chunk 6 and never published it (its store refused)."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "6.claim").write_text(str(os.getpid()))
    log = tmp_path / "log"
    started = time.perf_counter()
    parts = shared_chunks(store, CHUNKS, _computing(log, 0.0), stale_s=3.0, poll_s=0.01)
    assert time.perf_counter() - started < 1.5
    assert same(parts, expected())
    assert sorted(int(k) for k in log.read_text().split()) == list(range(CHUNKS))


def _refusing_unlink(real):
    def refuse(self: Path, missing_ok: bool = False) -> None:
        if self.suffix == ".claim" and self.exists():
            raise PermissionError(13, "Permission denied", str(self))
        real(self, missing_ok=missing_ok)

    return refuse


def test_a_chunk_the_store_cannot_take_is_kept_here_and_its_claim_given_up(
    tmp_path: Path, monkeypatch
) -> None:
    """A full disk: the chunk is used here, no claim holds it from the others, nothing half
    written is left behind, and the next call computes it again instead of waiting."""
    store = tmp_path / "store"
    real = torch.save

    def full(obj, path, *args, **kwargs) -> None:
        if str(path).startswith(str(store / "3.")):
            Path(path).write_bytes(b"half")
            raise OSError(28, "No space left on device", str(path))
        real(obj, path, *args, **kwargs)

    monkeypatch.setattr(shared_chunks_module.torch, "save", full)
    with pytest.warns(shared_chunks_module.StoreRefusedWarning, match="No space left"):
        parts = shared_chunks(store, CHUNKS, _computing(tmp_path / "first", 0.0))
    assert same(parts, expected())
    assert sorted(p.name for p in store.iterdir() if p.name.startswith("3.")) == []
    log = tmp_path / "log"
    with pytest.warns(shared_chunks_module.StoreRefusedWarning, match=f"1 of {CHUNKS}"):
        parts = shared_chunks(store, CHUNKS, _computing(log, 0.0), stale_s=60.0)
    assert same(parts, expected())
    assert log.read_text().split() == ["3"]


def test_a_claim_that_cannot_be_written_is_given_up(tmp_path: Path, monkeypatch) -> None:
    real = os.fdopen

    class Full:
        def __init__(self, descriptor: int) -> None:
            self.file = real(descriptor, "w")

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.file.close()

        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(shared_chunks_module.os, "fdopen", lambda d, mode: Full(d))
    with pytest.raises(OSError, match="No space"):
        shared_chunks_module._claim(tmp_path, 0)
    assert not (tmp_path / "0.claim").exists()  # no empty claim to wait on
