"""Code versions derived from source text, so nobody has to remember to bump a number.

An asset's code version is a hash over the source of the domain modules it runs (and over
data files shipped with them): editing `mathml.py` changes the version of exactly the assets
that parse MathML.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType

from formula_assets.hashing import bytes_hash

VERSION_CHARS = 16


def source_text(module: ModuleType) -> str:
    try:
        return inspect.getsource(module)
    except (OSError, TypeError):  # no source available (frozen/zip installs): fall back to name
        return module.__name__


def code_version(*parts: ModuleType | Path | str) -> str:
    """Hash of module sources, file contents and literal settings, in the order given."""
    pieces: list[bytes | str] = []
    for part in parts:
        if isinstance(part, ModuleType):
            pieces += [part.__name__, source_text(part)]
        elif isinstance(part, Path):
            pieces += [part.name, part.read_bytes()]
        else:
            pieces.append(part)
    return bytes_hash(*pieces)[:VERSION_CHARS]
