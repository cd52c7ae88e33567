"""Models shipped as part packages: the parts become one folder, once, or a clear error."""

import io
import zipfile
from pathlib import Path

import pytest

from formula_assets.semantics.packaged import PackagedModelError, assemble, part_files


def _split_zip(tmp_path: Path, members: dict[str, str], parts: int = 3) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, text in members.items():
            bundle.writestr(name, text)
    data = buffer.getvalue()
    size = -(-len(data) // parts)
    paths = []
    for i in range(parts):
        path = tmp_path / f"model.zip.{i + 1:03d}"
        path.write_bytes(data[i * size : (i + 1) * size])
        paths.append(path)
    return paths


MODEL = {"m/modules.json": "[]", "m/config.json": '{"model_type": "mpnet"}', "m/1_Pooling/c": "x"}


def test_parts_unpack_to_one_model_folder_once(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, MODEL)
    folder = assemble(parts, tmp_path / "models", "m")
    assert (folder / "modules.json").read_text() == "[]"
    assert (folder / "1_Pooling" / "c").exists()
    stamp = (folder / "modules.json").stat().st_mtime_ns
    assert assemble(parts, tmp_path / "models", "m") == folder
    assert (folder / "modules.json").stat().st_mtime_ns == stamp  # not unpacked again
    assert [p.name for p in (tmp_path / "models").iterdir()] == [folder.name]  # no scratch left


def test_parts_out_of_order_are_not_a_zip(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, MODEL)
    with pytest.raises(PackagedModelError, match="do not make a zip"):
        assemble([parts[1], parts[0], parts[2]], tmp_path / "models", "m")
    assert list((tmp_path / "models").iterdir()) == []


def test_an_archive_without_exactly_one_model_is_refused(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, {**MODEL, "other/modules.json": "[]"})
    with pytest.raises(PackagedModelError, match="2 sentence-transformers folders"):
        assemble(parts, tmp_path / "models", "m")


def test_a_missing_part_package_means_not_installed() -> None:
    assert part_files(("pytest", "no-such-distribution-part-001")) is None


def test_an_installed_package_without_a_part_is_an_error() -> None:
    with pytest.raises(PackagedModelError, match="0 model parts"):
        part_files(("pytest",))
