"""What every method trains on: the row-aligned inputs of each formula that has a graph and
both sentence vectors, gathered from the asset tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import embedding_matrix
from formula_assets.graphs.inputs import TokenTexts


@dataclass
class AlignmentData:
    """Row-aligned inputs of every formula that has a graph and both sentence vectors."""

    qids: list[str]
    graphs: pa.Table
    semantic: np.ndarray
    opt_text: np.ndarray
    folds: dict[str, int]
    token_texts: TokenTexts | None = None
    # each formula's annotation texts (`concept_annotations`), for methods that read text
    annotation_texts: list[list[str]] | None = None
    # each formula's declared concept symbols (`concept_symbols`): (concept label, symbols)
    declared_symbols: list[list[tuple[str, list[str]]]] | None = None


def alignment_data(
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
    opt_token_embeddings: pa.Table | None = None,
    concept_annotations: pa.Table | None = None,
    concept_symbols: pa.Table | None = None,
) -> AlignmentData:
    folds = dict(
        zip(cv_folds.column("qid").to_pylist(), cv_folds.column("fold").to_pylist(), strict=True)
    )
    sem_qids, semantic = embedding_matrix(semantic_embeddings)
    txt_qids, opt_text = embedding_matrix(opt_text_embeddings)
    sem_index = {q: i for i, q in enumerate(sem_qids)}
    txt_index = {q: i for i, q in enumerate(txt_qids)}
    graph_qids = opt_graphs.column("qid").to_pylist()
    keep = [i for i, q in enumerate(graph_qids) if q in sem_index and q in txt_index and q in folds]
    qids = [graph_qids[i] for i in keep]
    return AlignmentData(
        qids=qids,
        graphs=opt_graphs.take(pa.array(keep, pa.int64())),
        semantic=semantic[[sem_index[q] for q in qids]],
        opt_text=opt_text[[txt_index[q] for q in qids]],
        folds={q: folds[q] for q in qids},
        token_texts=None
        if opt_token_embeddings is None
        else TokenTexts.from_table(opt_token_embeddings),
        annotation_texts=None if concept_annotations is None else _texts(concept_annotations, qids),
        declared_symbols=None if concept_symbols is None else _declared(concept_symbols, qids),
    )


def _declared(concept_symbols: pa.Table, qids: list[str]) -> list[list[tuple[str, list[str]]]]:
    """Each formula's (concept label, symbols) declarations that parsed; most formulae have
    some, a formula without any has none."""
    declared: dict[str, list[tuple[str, list[str]]]] = {}
    for qid, label, symbols in zip(
        concept_symbols.column("qid").to_pylist(),
        concept_symbols.column("label").to_pylist(),
        concept_symbols.column("symbols").to_pylist(),
        strict=True,
    ):
        if symbols:
            declared.setdefault(qid, []).append((label, symbols))
    return [declared.get(q, []) for q in qids]


def _texts(concept_annotations: pa.Table, qids: list[str]) -> list[list[str]]:
    """The annotation texts of each formula (every aligned formula has a semantic vector,
    so texts)."""
    texts = dict(
        zip(
            concept_annotations.column("qid").to_pylist(),
            concept_annotations.column("texts").to_pylist(),
            strict=True,
        )
    )
    missing = [q for q in qids if not texts.get(q)]
    if missing:
        raise ValueError(f"{len(missing)} formulae have no annotation texts, e.g. {missing[:3]}")
    return [texts[q] for q in qids]
