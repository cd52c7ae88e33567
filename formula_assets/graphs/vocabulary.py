"""Token → id for the graph encoder: most frequent first, padding and unknown ids 0 and 1,
and the ids of node types and edge roles."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from formula_assets.syntax.schema import NODE_TYPES, ROLES


def token_counts(node_tokens: Iterable[Iterable[str]]) -> Counter[str]:
    """How often each token occurs over all graphs."""
    counter: Counter[str] = Counter()
    for tokens in node_tokens:
        counter.update(tokens)
    return counter


class TokenVocabulary:
    """Token → id, most frequent first (ties by token), with padding and unknown ids 0 and 1."""

    PAD = "[PAD]"
    UNK = "[UNK]"

    def __init__(self, tokens: Sequence[str], counts: Sequence[int]) -> None:
        self.tokens = tuple(tokens)
        self.counts = tuple(counts)
        self._index = {t: i for i, t in enumerate(self.tokens)}

    @classmethod
    def build(cls, token_lists: Iterable[Iterable[str]], min_count: int = 1) -> TokenVocabulary:
        counter = token_counts(token_lists)
        ranked = sorted(
            ((t, c) for t, c in counter.items() if c >= min_count), key=lambda tc: (-tc[1], tc[0])
        )
        return cls(
            tokens=(cls.PAD, cls.UNK, *(t for t, _ in ranked)),
            counts=(0, 0, *(c for _, c in ranked)),
        )

    @classmethod
    def from_tokens(cls, tokens: Sequence[str]) -> TokenVocabulary:
        """A stored vocabulary (e.g. a trained model's), ids in the given order."""
        return cls(tokens, [0] * len(tokens))

    def __len__(self) -> int:
        return len(self.tokens)

    def ids(self, tokens: Iterable[str]) -> list[int]:
        index = self._index
        return [index.get(t, 1) for t in tokens]

    def most_common(self, n: int) -> list[tuple[str, int]]:
        return list(zip(self.tokens[2 : 2 + n], self.counts[2 : 2 + n], strict=True))


NODE_TYPE_IDS = {t: i for i, t in enumerate(NODE_TYPES)}
ROLE_IDS = {r: i for i, r in enumerate(ROLES)}
