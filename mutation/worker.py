"""Run one module's mutants: one forked process per mutant, the module served mutated.

The worker imports the heavy third-party libraries once; for each mutant it forks, installs
an import hook that compiles the module from the mutated tree, and runs the module's tests
with pytest (stopping at the first failure). A failing test, tests that can no longer be
collected (the mutant breaks an import; the clean run collected them) or a hang (past a
timeout derived from the clean run) kill the mutant; a clean pass lets it survive.

Usage: python -m mutation.worker MODULE RESULT.json
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import signal
import sys
import time
from pathlib import Path
from types import ModuleType

from mutation.operators import Mutant, mutants, mutate
from mutation.targets import ROOT, Target, load_targets

# Imported before forking, so that children start with them in memory (pytest's plugins and
# the warning filters of pyproject.toml import hypothesis and dagster at every start).
PRELOAD = (
    "numpy",
    "pyarrow",
    "pyarrow.parquet",
    "pyarrow.compute",
    "scipy.stats",
    "scipy.sparse",
    "scipy.special",
    "scipy.spatial",
    "lxml.etree",
    "pytest",
    "hypothesis",
    "_hypothesis_pytestplugin",
    "anyio.pytest_plugin",
    "dagster",
    "upath",
)
PYTEST_ARGS = ("-x", "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=")


class _MutatedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module from a compiled (mutated) code object."""

    def __init__(self, name: str, path: Path, code: object) -> None:
        self.name, self.path, self.code = name, path, code

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    def create_module(self, spec):
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(self.code, module.__dict__)  # noqa: S102 (the mutant under test)


def _run_tests(target: Target, code: object | None) -> int:
    """In a child process: serve the module (mutated when `code` is given) and run pytest."""
    import pytest

    if code is not None:
        sys.meta_path.insert(0, _MutatedFinder(target.module, ROOT / target.path, code))
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    return int(pytest.main([*PYTEST_ARGS, *target.args, *target.tests]))


def _fork_and_wait(target: Target, code: object | None, timeout: float) -> tuple[str, float]:
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        os.setpgid(0, 0)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        try:
            code_ = _run_tests(target, code)
        except BaseException:
            code_ = 99
        os._exit(code_)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        elapsed = time.monotonic() - started
        if done:
            exit_code = os.waitstatus_to_exitcode(status)
            if exit_code == 0:
                return "survived", elapsed
            if exit_code == 2:  # interrupted: the tests could not even be collected
                return "killed (collection error)", elapsed
            if exit_code in (3, 4, 5):  # internal, usage, nothing collected
                return f"error (pytest exit {exit_code})", elapsed
            return "killed", elapsed
        if elapsed > timeout:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "killed (timeout)", elapsed
        time.sleep(0.02)


def run_module(target: Target) -> dict:
    source = (ROOT / target.path).read_text(encoding="utf-8")
    found = mutants(source, target.module, target.path, target.functions, target.conditions)
    clean, clean_seconds = _fork_and_wait(target, None, timeout=600)
    if clean != "survived":
        raise RuntimeError(f"the tests of {target.module} fail without any mutant: {clean}")
    timeout = max(10.0, 4 * clean_seconds)
    results = []
    for mutant in found:
        tree = mutate(source, mutant, target.functions)
        code = compile(tree, str(ROOT / target.path), "exec")
        outcome, seconds = _fork_and_wait(target, code, timeout)
        results.append({**_describe(mutant, source), "outcome": outcome, "seconds": seconds})
    return {
        "module": target.module,
        "path": target.path,
        "tests": list(target.tests),
        "args": list(target.args),
        "clean_seconds": clean_seconds,
        "mutants": results,
    }


def _describe(mutant: Mutant, source: str) -> dict:
    line = source.splitlines()[mutant.line - 1].strip() if mutant.line else ""
    return {"id": mutant.id, "line": mutant.line, "operator": mutant.operator, "source": line}


def main(module: str, output: str) -> int:
    # A mutant may turn a harmless signal 0 ("is it alive?") into SIGHUP aimed at the tests'
    # own processes; the worker outlives it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    for name in PRELOAD:
        __import__(name)
    os.chdir(ROOT)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    (target,) = [t for t in load_targets() if t.module == module]
    result = run_module(target)
    Path(output).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
