"""`sbert_finetuned_cl`'s hooks on a BERT 8 numbers wide named as its base model: which folder
it starts from and when that folder is refused, what it reads of the data (tokenised texts, or
the frozen layers' output), its network and how it encodes queries."""

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
import torch

from formula_assets.core.profiles import get_profile
from formula_assets.methods import registry, sbert_finetuned_cl
from formula_assets.methods.base import LoadedModel
from formula_assets.methods.sbert_finetuned_cl import METHOD, base_folder
from formula_assets.semantics.identity import folder_hash
from formula_assets.semantics.packaged import packaged_minilm
from formula_assets.semantics.texts import annotation_text
from formula_assets.training.data import AlignmentData
from formula_assets.training.inputs import FoldRows
from formula_assets.training.sentence_encoder import HiddenInputs, SentenceTower, TokenInputs
from formula_assets.training.sentence_encoder import token_ids as tokenise
from formula_assets_tests.support.models import tiny_bert
from formula_assets_tests.training.descriptions import described

LINEARISED = ["power x 2", "group x + z"]
ANNOTATIONS = [["square of x"], ["sum", "x and z"]]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("bert") / "tiny")


def description(folder, frozen: int = 0, settings: dict | None = None, **changes):
    """The untrained model's description, its settings naming `folder` as the base model."""
    method_settings = dataclasses.replace(
        sbert_finetuned_cl.PROFILE_SETTINGS["smoke"],
        base_model=str(folder),
        max_seq_len=8,
        frozen_layers=frozen,
        runs=1,
    )
    return dataclasses.replace(
        described("sbert_finetuned_cl"),
        settings=dataclasses.replace(method_settings, **(settings or {})),
        semantic_dim=8,
        structural_dim=8,
        **changes,
    )


DATA = AlignmentData(
    qids=["Q1", "Q2"],
    graphs=pa.table({"qid": ["Q1", "Q2"], "linearised_opt": LINEARISED}),
    semantic=np.zeros((2, 8), np.float32),
    opt_text=np.zeros((2, 8), np.float32),
    folds={"Q1": 1, "Q2": 2},
    annotation_texts=ANNOTATIONS,
)
ROWS = FoldRows(np.array([1]), np.array([0]))


def test_the_base_folder_is_the_named_one_or_the_packaged_model(folder, tmp_path) -> None:
    assert base_folder(description(folder)) == folder  # named by the settings
    recorded = description(folder, settings={"base_model": None}, base_model=str(folder))
    assert base_folder(recorded) == folder  # named by the trained model's description
    packaged = description(folder, settings={"base_model": None})
    assert base_folder(packaged) == packaged_minilm()
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="lacks one of"):
        base_folder(description(tmp_path))


def test_a_folder_other_than_the_one_trained_from_is_refused(folder) -> None:
    identity = folder_hash(folder).digest
    assert base_folder(description(folder, base_model_identity=identity)) == folder
    with pytest.raises(ValueError, match="retrain it"):
        base_folder(description(folder, base_model_identity="0" * 64))


def test_prepare_records_the_base_model_and_reads_tokenised_texts(folder) -> None:
    untrained = description(folder)
    prepared = METHOD.prepare(DATA, ROWS, untrained, "cpu")
    assert prepared.description.base_model == str(folder)
    assert prepared.description.base_model_identity == folder_hash(folder).digest
    assert isinstance(prepared.structural, TokenInputs)
    assert prepared.structural.ids == tokenise(folder, 8, LINEARISED)
    semantic = METHOD.semantic_inputs(prepared.description, DATA, "cpu")
    assert semantic.ids == tokenise(folder, 8, [annotation_text(t) for t in ANNOTATIONS])
    without = dataclasses.replace(DATA, annotation_texts=None)
    for read in (
        lambda: METHOD.prepare(without, ROWS, untrained, "cpu"),
        lambda: METHOD.semantic_inputs(untrained, without, "cpu"),
    ):
        with pytest.raises(ValueError, match="reads the annotation texts"):
            read()


def test_with_frozen_layers_the_inputs_are_their_output(folder) -> None:
    frozen = description(folder, frozen=2)
    inputs = METHOD.inputs(frozen, DATA, "cpu")
    assert isinstance(inputs, HiddenInputs)
    tower = METHOD.network(frozen)
    assert tower.frozen_layers == 2
    expected = tower.lower(tokenise(folder, 8, LINEARISED))
    assert all(torch.equal(a, b) for a, b in zip(inputs.hidden, expected.hidden, strict=True))
    semantic = METHOD.semantic_inputs(frozen, DATA, "cpu")
    assert isinstance(semantic, HiddenInputs) and len(semantic.hidden) == 2


def test_the_frozen_layers_run_once_for_every_fold(folder, monkeypatch) -> None:
    """Two folds' inputs in one process: the frozen layers (the base model's) run once."""
    built: list[int] = []
    network = METHOD.network

    def counted(described_):
        built.append(1)
        return network(described_)

    monkeypatch.setattr(METHOD, "network", counted)
    frozen = METHOD.prepare(DATA, ROWS, description(folder, frozen=2), "cpu").description
    first = METHOD.inputs(frozen, DATA, "cpu")
    second = METHOD.inputs(dataclasses.replace(frozen, fold=2), DATA, "cpu")
    assert second.hidden is first.hidden
    assert len(built) <= 1  # none when an earlier test of this process lowered these texts
    unfrozen = METHOD.inputs(dataclasses.replace(frozen, settings=dataclasses.replace(
        frozen.settings, frozen_layers=1)), DATA, "cpu")  # fmt: skip
    assert unfrozen.hidden is not first.hidden


def test_another_base_model_gets_its_own_frozen_pass(folder, tmp_path) -> None:
    """The kept pass is the base model's: a folder with other weights (named by the settings,
    its content hash not yet recorded) is lowered by its own frozen layers."""
    other = tiny_bert(tmp_path / "other", seed=1)
    mine = METHOD.inputs(description(folder, frozen=2), DATA, "cpu")
    theirs = METHOD.inputs(description(other, frozen=2), DATA, "cpu")
    expected = SentenceTower(other, frozen_layers=2).lower(tokenise(other, 8, LINEARISED))
    assert all(torch.equal(a, b) for a, b in zip(theirs.hidden, expected.hidden, strict=True))
    assert not torch.allclose(mine.hidden[0], theirs.hidden[0])


def test_text_queries_run_the_frozen_layers_once_and_each_towers_own_layers_above(folder) -> None:
    """Two towers with the same frozen layers and different layers above (two folds): each
    encodes the texts as it encodes them whole."""
    frozen = description(folder, frozen=2, base_model_identity=folder_hash(folder).digest)
    towers = [SentenceTower(folder, frozen_layers=2).eval() for _ in range(2)]
    with torch.no_grad():
        for index, tower in enumerate(towers):
            for parameter in tower.bert.encoder.layer[2:].parameters():
                parameter.add_(0.05 * (index + 1))

    class Query:
        def __init__(self, text: str) -> None:
            self.text = text

    queries = [Query("sum of x and z"), Query("square"), Query("x")]
    ids = tokenise(folder, 8, [q.text for q in queries])
    vectors = [METHOD.text_vectors(queries, LoadedModel(frozen, t)) for t in towers]
    for tower, got in zip(towers, vectors, strict=True):
        with torch.no_grad():
            assert np.allclose(got, tower.encode(ids).numpy(), atol=1e-6)
    assert not np.allclose(vectors[0], vectors[1], atol=1e-3)


def test_a_seed_averaged_tower_encodes_text_queries_whole(folder) -> None:
    """Runs averaged (a profile may ask for two): no single tower to lower with, so each run
    encodes the token ids through all its layers."""
    from formula_assets.training.models import RunAverage

    averaged = description(folder, frozen=2, settings={"runs": 2})
    model = RunAverage([SentenceTower(folder, frozen_layers=2) for _ in range(2)]).eval()
    ids = tokenise(folder, 8, ["sum of x and z", "x"])

    class Query:
        def __init__(self, text: str) -> None:
            self.text = text

    got = METHOD.text_vectors([Query("sum of x and z"), Query("x")], LoadedModel(averaged, model))
    with torch.no_grad():
        assert np.allclose(got, model.encode_semantic(ids).numpy(), atol=1e-6)


def test_queries_are_tokenised_and_encoded_by_the_trained_tower(folder) -> None:
    described_ = description(folder)
    tower = SentenceTower(folder).eval()
    loaded = LoadedModel(described_, tower)

    class Query:
        text = "sum of x and z"

        def linearised(self) -> str:
            return "group x + z"

    assert METHOD.query_input(described_, Query()) == tokenise(folder, 8, ["group x + z"])
    with torch.no_grad():
        formula = tower.encode(tokenise(folder, 8, ["group x + z"]))[0].numpy()
        texts = tower.encode(tokenise(folder, 8, ["sum of x and z", "group x + z"])).numpy()
    assert np.allclose(METHOD.formula_vector(Query(), loaded), formula, atol=1e-6)
    assert np.allclose(METHOD.text_vector(Query(), loaded), texts[0], atol=1e-6)

    class Other(Query):
        text = "group x + z"

    assert np.allclose(METHOD.text_vectors([Query(), Other()], loaded), texts, atol=1e-6)
    with pytest.raises(ValueError, match="encodes queries with its trained model"):
        METHOD.text_vector(Query(), None)


def test_it_is_an_ensemble_member_that_trains_longest() -> None:
    assert METHOD in registry.ensemble_members()
    others = [registry.get(m).training_cost for m in registry.trained() if m != METHOD.name]
    assert METHOD.training_cost > max(others)


def test_its_base_models_are_named_one_per_run_the_packaged_one_by_its_name() -> None:
    """What lineage observes beside the embedding model (`sentence_model`)."""
    from formula_assets.core.profiles import DEFAULT_EMBEDDING_MODEL

    assert METHOD.base_models(get_profile("default")) == [DEFAULT_EMBEDDING_MODEL]
    assert METHOD.base_models(get_profile("large")) == [
        DEFAULT_EMBEDDING_MODEL,
        "all-mpnet-base-v2",
    ]


def test_its_base_identities_are_its_base_folders_content_one_per_run(
    folder, mpnet_folder, monkeypatch
) -> None:
    """A training recipe holds them: a base model changed in place retrains its models."""
    from dataclasses import replace

    smoke = get_profile("smoke")
    settings = sbert_finetuned_cl.PROFILE_SETTINGS["smoke"]
    table = sbert_finetuned_cl.PROFILE_SETTINGS
    monkeypatch.setitem(table, "smoke", replace(settings, base_model=str(folder)))
    assert METHOD.base_identities(smoke) == [folder_hash(folder).digest]
    joined = replace(settings, base_model=f"{folder}+{mpnet_folder}", frozen_layers=(1, 2))
    monkeypatch.setitem(table, "smoke", joined)
    assert METHOD.base_identities(smoke) == [
        folder_hash(folder).digest,
        folder_hash(mpnet_folder).digest,
    ]
    assert folder_hash(folder).digest != folder_hash(mpnet_folder).digest


def test_the_frozen_pass_goes_through_the_assets_store_and_log(
    folder, tmp_path, monkeypatch
) -> None:
    """The store and the log an asset names at its edge (`frozen_store`) reach the pass: here a
    store that refuses writes, heard of in that log, the inputs the same as without it."""
    from formula_assets.training import sentence_encoder

    monkeypatch.setattr(sentence_encoder, "_FROZEN", type(sentence_encoder._FROZEN)())
    (tmp_path / "file").write_text("not a folder")
    heard: list[str] = []
    with sentence_encoder.frozen_store(tmp_path / "file" / "frozen_layers", heard.append):
        got = METHOD.inputs(description(folder, frozen=2), DATA, "cpu")
    assert len(heard) == 1 and str(tmp_path / "file") in heard[0]
    sentence_encoder._FROZEN.clear()
    alone = METHOD.inputs(description(folder, frozen=2), DATA, "cpu")
    assert all(torch.equal(a, b) for a, b in zip(got.hidden, alone.hidden, strict=True))


# ------------------------------------------------------------- several base models, one run each


@pytest.fixture(scope="module")
def mpnet_folder(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("mpnet") / "tiny", seed=1, architecture="mpnet")


def test_the_packaged_mpnet_is_found_in_the_callers_model_dir(folder, monkeypatch) -> None:
    from formula_assets.semantics import packaged
    from formula_assets.training.sentence_encoder import frozen_store

    asked = []
    monkeypatch.setattr(packaged, "packaged_mpnet", lambda d: asked.append(d) or folder)
    named = description(folder, settings={"base_model": "sentence-transformers/all-mpnet-base-v2"})
    with pytest.raises(ValueError, match="no model directory"):
        base_folder(named)
    with frozen_store(None, model_dir=folder.parent / "models"):
        assert base_folder(named) == folder
    assert asked == [folder.parent / "models"]
    monkeypatch.setattr(packaged, "packaged_mpnet", lambda d: None)
    with frozen_store(None, model_dir=folder.parent), pytest.raises(ValueError, match="mpnet]"):
        base_folder(named)


def test_each_base_model_is_a_run_with_its_own_inputs_and_frozen_layers(
    folder, mpnet_folder
) -> None:
    from formula_assets.training.inputs import PartBatch, PartInputs

    untrained = description(
        folder, settings={"base_model": f"{folder}+{mpnet_folder}", "frozen_layers": (1, 2)}
    )
    prepared = METHOD.prepare(DATA, ROWS, untrained, "cpu")
    described_ = prepared.description
    assert described_.base_model_identity == (
        f"{folder_hash(folder).digest}+{folder_hash(mpnet_folder).digest}"
    )
    assert METHOD.run_count(described_) == 2
    runs = [METHOD.run_description(described_, r) for r in (0, 1)]
    assert [(r.base_model, r.settings.frozen_layers) for r in runs] == [
        (str(folder), 1),
        (str(mpnet_folder), 2),
    ]
    assert [r.base_model_identity for r in runs] == [
        folder_hash(folder).digest,
        folder_hash(mpnet_folder).digest,
    ]
    assert isinstance(prepared.structural, PartInputs)
    for part, run in zip(prepared.structural.parts, runs, strict=True):
        expected = METHOD.inputs(run, DATA, "cpu")
        assert all(torch.equal(a, b) for a, b in zip(part.hidden, expected.hidden, strict=True))
    batch = prepared.structural.batch(np.array([1]))
    assert isinstance(batch, PartBatch) and len(batch) == 2
    model = METHOD.build(described_)
    assert [tower.frozen_layers for tower in model.runs] == [1, 2]
    assert [tower.bert.architecture for tower in model.runs] == ["bert", "mpnet"]
    with pytest.raises(ValueError, match="several base models"):
        METHOD.network(described_)


class TextQuery:
    def __init__(self, text: str) -> None:
        self.text = text


def test_one_base_model_may_still_average_seeded_runs_each_its_tower(folder) -> None:
    """`runs: 2` over one base model: two runs of the same base (a seed ensemble), and the
    base model a trained model's description recorded stays each run's."""
    seeded = description(folder, settings={"runs": 2})
    assert METHOD.run_count(seeded) == 2
    assert [METHOD.run_description(seeded, r) for r in (0, 1)] == [seeded, seeded]
    model = METHOD.build(seeded)
    assert len(model.runs) == 2 and all(t.bert.architecture == "bert" for t in model.runs)
    recorded = description(folder, settings={"base_model": None}, base_model=str(folder))
    assert base_folder(METHOD.run_description(recorded, 0)) == folder


def test_a_description_whose_identities_do_not_match_its_base_models_is_refused(
    folder, mpnet_folder
) -> None:
    joined = description(
        folder,
        settings={"base_model": f"{folder}+{mpnet_folder}", "frozen_layers": (1, 2)},
        base_model_identity=folder_hash(folder).digest,  # one identity for two base models
    )
    with pytest.raises(ValueError):
        METHOD.parts(joined)


def test_text_queries_of_several_bases_are_each_runs_vectors_joined(folder, mpnet_folder) -> None:
    """Each run tokenises with its own base model's tokenizer and encodes with its own tower;
    the query's vector is theirs joined (cosine: the mean of theirs). A model of more towers
    than base models is refused, not read in part."""
    from formula_assets.training.models import RunAverage, joined_runs

    joined = description(
        folder, settings={"base_model": f"{folder}+{mpnet_folder}", "frozen_layers": (1, 2)}
    )
    model = METHOD.build(joined).eval()
    texts = ["sum of x and z", "x"]
    got = METHOD.text_vectors([TextQuery(t) for t in texts], LoadedModel(joined, model))
    with torch.no_grad():
        runs = [
            tower.encode(tokenise(base, 8, texts))
            for tower, base in zip(model.runs, (folder, mpnet_folder), strict=True)
        ]
    assert np.allclose(got, joined_runs(runs).numpy(), atol=1e-6)
    three = RunAverage([*model.runs, SentenceTower(folder, frozen_layers=1)])
    with pytest.raises(ValueError):
        METHOD.text_vectors([TextQuery("x")], LoadedModel(joined, three))
