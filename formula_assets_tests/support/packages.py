"""Distributions as pip leaves them on disk, for models shipped as part packages."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def split_zip(folder: Path, members: dict[str, str], parts: int = 3) -> list[Path]:
    """A zip of `members` (name → text) cut into `parts` files `model.zip.001`, … in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, text in members.items():
            bundle.writestr(name, text)
    data = buffer.getvalue()
    size = -(-len(data) // parts)
    paths = []
    for i in range(parts):
        path = folder / f"model.zip.{i + 1:03d}"
        path.write_bytes(data[i * size : (i + 1) * size])
        paths.append(path)
    return paths


def install(root: Path, name: str, files: dict[str, bytes]) -> None:
    """A distribution as pip leaves it: files beside a dist-info folder that lists them."""
    info = root / f"{name.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in files))
