"""The graph encoder's token ids: frequency order with ties by token, the count floor,
padding and unknown ids, stored vocabularies, and node-type and role ids."""

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from formula_assets.graphs.vocabulary import (
    NODE_TYPE_IDS,
    ROLE_IDS,
    TokenVocabulary,
    token_counts,
)
from formula_assets.syntax.schema import NODE_TYPES, ROLES

GRAPHS = [["x", "+", "y"], ["x", "=", "x"], ["y", "+", "z"]]


def test_counts_are_over_all_graphs() -> None:
    assert token_counts(GRAPHS) == Counter({"x": 3, "+": 2, "y": 2, "=": 1, "z": 1})
    assert token_counts([]) == Counter()


def test_ids_follow_frequency_then_token_after_padding_and_unknown() -> None:
    vocabulary = TokenVocabulary.build(GRAPHS)
    # x (3); + and y (2, "+" < "y"); = and z (1, "=" < "z")
    assert vocabulary.tokens == ("[PAD]", "[UNK]", "x", "+", "y", "=", "z")
    assert vocabulary.counts == (0, 0, 3, 2, 2, 1, 1)
    assert len(vocabulary) == 7
    assert vocabulary.ids(["x", "z", "never seen", "[PAD]"]) == [2, 6, 1, 0]
    assert vocabulary.most_common(1) == [("x", 3)]
    assert vocabulary.most_common(2) == [("x", 3), ("+", 2)]
    assert vocabulary.most_common(3) == [("x", 3), ("+", 2), ("y", 2)]
    assert vocabulary.most_common(10) == [("x", 3), ("+", 2), ("y", 2), ("=", 1), ("z", 1)]


def test_min_count_keeps_tokens_seen_at_least_that_often() -> None:
    vocabulary = TokenVocabulary.build(GRAPHS, min_count=2)
    assert vocabulary.tokens == ("[PAD]", "[UNK]", "x", "+", "y")  # exactly 2 is kept
    assert vocabulary.ids(["=", "z"]) == [1, 1]
    assert TokenVocabulary.build(GRAPHS, min_count=4).tokens == ("[PAD]", "[UNK]")


def test_a_stored_vocabulary_keeps_its_order() -> None:
    stored = TokenVocabulary.from_tokens(["[PAD]", "[UNK]", "b", "a"])
    assert stored.ids(["a", "b", "c"]) == [3, 2, 1]
    assert len(stored) == 4 and stored.counts == (0, 0, 0, 0)


@given(st.lists(st.lists(st.sampled_from("abcdefg"), max_size=6), max_size=8), st.integers(1, 3))
def test_build_matches_a_brute_force_ranking(graphs: list[list[str]], min_count: int) -> None:
    vocabulary = TokenVocabulary.build(graphs, min_count)
    everything = [t for g in graphs for t in g]
    kept = sorted({t for t in everything if everything.count(t) >= min_count},
                  key=lambda t: (-everything.count(t), t))  # fmt: skip
    assert vocabulary.tokens == ("[PAD]", "[UNK]", *kept)
    assert vocabulary.counts[2:] == tuple(everything.count(t) for t in kept)
    assert vocabulary.ids(kept) == list(range(2, 2 + len(kept)))


def test_node_type_and_role_ids_are_their_positions() -> None:
    assert [NODE_TYPE_IDS[t] for t in NODE_TYPES] == list(range(len(NODE_TYPES)))
    assert [ROLE_IDS[r] for r in ROLES] == list(range(len(ROLES)))
