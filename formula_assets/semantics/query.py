"""One query's sentence vector for the search, apart from `semantics.models` so that the
embedding assets' code version does not follow the plain-torch encoder (`semantics.bert`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from formula_assets.semantics.models import ModelSpec, TextEmbedder, side_by_side


def query_encoder(spec: ModelSpec, offline: bool) -> Callable[[str], np.ndarray]:
    """One text's vector as the model embeds it: in plain torch when every model of the spec
    is a BERT or MPNet folder on disk (`semantics.bert`: a cold search skips importing
    sentence-transformers, seconds), else through the library."""
    from formula_assets.semantics.bert import BertSentenceEncoder, Unsupported

    try:
        if not spec.local:
            raise Unsupported("a hub model not downloaded")
        plain = [BertSentenceEncoder(Path(part.location)) for part in spec.parts or (spec,)]
    except Unsupported:
        library = TextEmbedder(spec, offline=offline)
        return lambda text: library.encode([text])[0]
    if len(plain) == 1:
        return plain[0].encode
    return lambda text: side_by_side([encoder.encode(text) for encoder in plain])
