"""Leads for editors: what in an item's annotation to change, each with evidence they can check.

An item's formula and its annotations are read on the canonical tree (the structure index's
identifiers), and each identifier is explained as search explains a query's
(`search.explain`), from the formulae of the same shape, the items the structure channel finds
and the corpus — with the item's own annotations hidden. The kinds, most actionable first:

* `unannotated_symbol`: a quantity of the formula no annotation covers, with the concept it
  most likely denotes (placeholders — summation indices, integration variables, a
  differential's `d`, a function's argument, standard constants, several-letter names — only
  where formulae of the same shape annotate them);
* `swapped_symbols`: two annotated identifiers each read as the other's concept;
* `wrong_sense`: an annotated concept far from the item's field, which the held-out models
  also doubt, where another concept of the same name fits the field;
* `doubted_concept`: an annotated concept formulae of the same shape do not give that symbol,
  stronger where the held-out models also find the concept a poor fit;
* `symbol_not_in_formula`: an annotated symbol that is none of the formula's identifiers (for
  an item with several defining formulae it may belong to another one, and says so);
* `two_concepts_on_symbol`, `concept_on_two_symbols`: one symbol with two concepts, or one
  concept on two symbols (often right: a vector and its magnitude; last).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from formula_assets.audit.quickstatements import concept_with_symbol
from formula_assets.search.catalogue import Annotation, Catalogue
from formula_assets.search.explain import (
    ALIGNED,
    CORPUS,
    Reading,
    SymbolExplanation,
    aligned_items,
    explain_symbols,
)
from formula_assets.search.fusion import top_rows
from formula_assets.search.structure import StructureIndex, query_keys
from formula_assets.syntax.binding import placeholders
from formula_assets.syntax.canonical import Expr, TooDeep, written_order
from formula_assets.syntax.mathml import MathMLError, ParseOptions, parse_mathml

UNANNOTATED = "unannotated_symbol"
SWAPPED = "swapped_symbols"
DOUBTED = "doubted_concept"
WRONG_SENSE = "wrong_sense"
NOT_IN_FORMULA = "symbol_not_in_formula"
TWO_CONCEPTS = "two_concepts_on_symbol"
TWO_SYMBOLS = "concept_on_two_symbols"
KINDS = (UNANNOTATED, SWAPPED, WRONG_SENSE, DOUBTED, NOT_IN_FORMULA, TWO_CONCEPTS, TWO_SYMBOLS)
# how much an editor can act on a lead of each kind, times its evidence's strength
WEIGHT: Mapping[str, float] = {
    UNANNOTATED: 1.0,
    SWAPPED: 0.9,
    WRONG_SENSE: 0.8,
    DOUBTED: 0.7,
    NOT_IN_FORMULA: 0.6,
    TWO_CONCEPTS: 0.2,
    TWO_SYMBOLS: 0.1,
}
PLACEHOLDER = 0.5  # an index or bound variable that formulae of the same shape annotate
CORPUS_VOTES = 2  # the corpus' items counted as a reading's support, at most
NO_READING = 0.3  # an unannotated quantity without a suggestion still needs a concept
ANOTHER_FORMULA = 0.2  # a symbol of an item with several formulae may be of the other one
DOUBT_FLOOR = 0.4  # the reading that must beat the annotation for a doubt
FAR_SENSE = 0.5  # a concept less than half as close to the item as its own concepts
SENSE_GAP = 0.3  # how much closer the namesake must be
MODELS_DOUBT = 0.5  # the held-out models rank the concept in the worse half for the formula
FOUND_DEPTH = 10
TEMPLATE = "∅"  # a symbol of brackets only, `[ ]` or `( , )`: notation, not an identifier
# the signs an editor annotates for a layout the tree names: a root, a fraction
_LAYOUT_SIGNS: Mapping[str, tuple[str, ...]] = {
    "sqrt": ("√",),
    "root": ("√", "∛", "∜"),
    "frac": ("/", "÷", "―"),
}
_LETTERS = str.maketrans({"ℏ": "ħ", "ϵ": "ε", "ϑ": "θ", "ϕ": "φ"})


@dataclass(frozen=True)
class Lead:
    kind: str
    text: str  # what to do, in one line
    score: float  # the evidence's strength times how actionable the kind is
    symbol: str | None = None
    concept: str | None = None  # the annotated concept in question
    suggestion: str | None = None  # the concept the evidence suggests
    suggestion_label: str | None = None
    items: tuple[str, ...] = ()  # the items whose annotations are the evidence
    quickstatements: str | None = None  # the addition, for an editor who confirms it


def _named(qid: str | None, label: str | None) -> str:
    return f"{label or '(no label)'} ({qid})"


class LeadFinder:
    """The leads of every item of a catalogue, from its structure index."""

    def __init__(
        self,
        catalogue: Catalogue,
        structure: StructureIndex,
        options: ParseOptions,
        sense: Callable[[str, str], float] | None = None,
    ) -> None:
        """`sense`: (item, concept) → how well the concept's sense fits the item's field,
        0 … 1 (`audit.concepts.ConceptSense`): a suggestion from another field ranks lower."""
        self.sense = sense
        self.catalogue = catalogue
        self.structure = structure
        self.options = options
        self.rows = catalogue.rows(structure.qids)  # structure row → catalogue row
        self._at = {q: i for i, q in enumerate(structure.qids)}
        self.use = catalogue.symbol_use()
        self.labels = catalogue.concept_labels()
        self._by_label: dict[str, set[str]] = {}
        for concept, label in self.labels.items():
            self._by_label.setdefault(_label_key(label), set()).add(concept)

    def explain(
        self, row: int
    ) -> tuple[list[str], list[SymbolExplanation], set[str], set[str]] | None:
        """The item's identifiers, their readings with its own annotations hidden, its
        placeholders and every name written in it (operators and constants too); None for a
        formula the structure index could not read."""
        catalogue = self.catalogue
        at = self._at.get(catalogue.qids[row])
        mathml = catalogue.mathml[row]
        if at is None or not mathml:
            return None
        try:
            keys = query_keys(mathml, self.options)
            tree = written_order(parse_mathml(mathml, self.options))
        except (MathMLError, TooDeep):
            return None
        found = self.structure.score(keys)
        aligned = aligned_items(found, self.rows, self.structure.identifiers)
        order = top_rows(found.scores, FOUND_DEPTH + 1)
        found_rows = [int(self.rows[i]) for i in order if self.rows[i] >= 0]
        identifiers = list(keys.identifiers)
        use = catalogue.use_without(self.use, row, identifiers)
        readings = explain_symbols(
            identifiers, aligned, found_rows, catalogue, use, self.labels, exclude=row
        )
        written = set()
        for formula in [mathml, *catalogue.other_formulae[row]]:
            written |= self._written(formula)
        return identifiers, readings, placeholders(tree), written

    def _written(self, mathml: str) -> set[str]:
        """Every name a formula writes, as the tree names it and as its tokens are written;
        nothing for one that does not parse."""
        try:
            names = _written_names(written_order(parse_mathml(mathml, self.options)))
            return names | {_same_letter(t) for t in _tokens(mathml, self.options)}
        except (MathMLError, TooDeep):
            return set()

    def leads(self, row: int, doubt: Mapping[str, float] | None = None) -> list[Lead]:
        """The item's leads, strongest first (`doubt`: concept → how poorly the held-out
        models find it fits the formula, 0 … 1, where scored)."""
        explained = self.explain(row)
        if explained is None:
            return []
        identifiers, readings, loose, written = explained
        item = self.catalogue.qids[row]
        annotations = self.catalogue.annotations[row]
        # several formulae, not all stored: an annotation may be of one that is not here
        unseen = self.catalogue.several_formulae[row] and not self.catalogue.other_formulae[row]
        by_symbol: dict[str, set[str]] = {}
        for a in annotations:
            if a.identifier:
                by_symbol.setdefault(a.identifier, set()).add(a.concept)
        reading = {e.identifier: e for e in readings}
        covered = self._covered(row, set(identifiers), set(by_symbol))
        out: list[Lead] = []
        for name in identifiers:
            if name not in by_symbol and name not in covered:
                placeholder = name in loose or _word(name)
                lead = _unannotated(item, name, reading[name], placeholder, self.sense)
                if lead is not None:
                    out.append(lead)
        out += _swapped(by_symbol, reading, self.labels)
        out += _doubted(by_symbol, reading, self.labels, doubt or {})
        out += self._wrong_sense(item, annotations, doubt or {})
        out += _not_in_formula(annotations, set(identifiers), written, unseen)
        out += _shared(annotations, set(identifiers), self.labels)
        return sorted(out, key=lambda lead: (-lead.score, KINDS.index(lead.kind)))

    def _namesakes(self, concept: str) -> set[str]:
        """The other concepts of the corpus with this concept's label: "order" the taxonomic
        rank and "order" of a reflexion, "degrees of freedom" of statistics and of physics.
        (A longer label holding it — "path integral" for "integral" — is a narrower concept,
        not another sense: always nearer to a narrow item, never evidence.)"""
        label = _label_key(self.labels.get(concept) or "")
        return (self._by_label.get(label, set()) - {concept}) if label else set()

    def _wrong_sense(
        self, item: str, annotations: Sequence[Annotation], doubt: Mapping[str, float]
    ) -> list[Lead]:
        """Annotated concepts far from the item's field, that the held-out models also find a
        poor fit for the formula, with a namesake nearer the field."""
        if self.sense is None:
            return []
        out = []
        for a in annotations:
            fit = self.sense(item, a.concept)
            if fit >= FAR_SENSE or a.concept == item or doubt.get(a.concept, 0.0) < MODELS_DOUBT:
                continue
            closer = sorted(
                ((self.sense(item, c), c) for c in self._namesakes(a.concept)), reverse=True
            )
            if not closer or closer[0][0] < fit + SENSE_GAP:
                continue
            better, concept = closer[0]
            on = f" on {a.identifier}" if a.identifier else ""
            out.append(
                Lead(
                    WRONG_SENSE,
                    f"{_named(a.concept, a.label)}{on} is far from what the item is about "
                    f"({fit:.0%} of its concepts' usual closeness); its namesake {concept} "
                    f"({better:.0%}) may be the sense meant",
                    WEIGHT[WRONG_SENSE] * (better - fit),
                    symbol=a.identifier,
                    concept=a.concept,
                    suggestion=concept,
                    suggestion_label=self.labels.get(concept),
                )
            )
        return out

    def _covered(self, row: int, identifiers: set[str], annotated: set[str]) -> set[str]:
        """Identifiers an annotation means though it does not name them: those written
        inside a symbol that is an expression (`α` and `G` of `α(G)`), and an indexed or
        primed form of an annotated letter the formula does not write alone (`ε_0` for `ε`)."""
        out = set()
        for concept in self.catalogue.concepts[row]:
            mathml = concept.get("symbol_mathml")
            if not mathml or not mathml.strip():
                continue
            try:
                tree = written_order(parse_mathml(mathml, self.options))
            except (MathMLError, TooDeep):
                continue
            if tree.args:
                out |= _written_names(tree) & identifiers
        loose = {_base(a) for a in annotated - identifiers}
        return out | {name for name in identifiers if _base(name) in loose}


def _label_key(label: str) -> str:
    return " ".join(label.casefold().replace("-", " ").split())


def _word(name: str) -> bool:
    """A name of several letters (`hom`, `Ext`, `LMI`): an operator's name or an abbreviation,
    which editors annotate only where formulae of the same shape do."""
    base = name.split("_", 1)[0]
    return len(base) > 1 and base.isalpha()


def _aligned_share(explanation: Reading) -> float:
    return explanation.evidence.get(ALIGNED, 0.0)


def _unannotated(
    item: str,
    name: str,
    explanation: SymbolExplanation,
    placeholder: bool,
    sense: Callable[[str, str], float] | None = None,
) -> Lead | None:
    best = explanation.readings[0] if explanation.readings else None
    if placeholder and (best is None or _aligned_share(best) == 0.0):
        return None  # an index, a bound variable, an argument, e or i: annotated nowhere alike
    if best is None:
        return Lead(
            UNANNOTATED,
            f"{name} has no concept; nothing in the corpus suggests one",
            WEIGHT[UNANNOTATED] * NO_READING,
            symbol=name,
        )
    sources = ", ".join(best.items[:3])
    evidence = f" (as in {sources})" if sources else " (the corpus' use of the symbol)"
    strength = max(best.score, NO_READING) * support(best, explanation.corpus_count)
    if sense is not None:
        strength *= sense(item, best.concept)
    return Lead(
        UNANNOTATED,
        f"{name} has no concept; the corpus and similar formulae suggest "
        f"{_named(best.concept, best.label)}, {best.score:.2f}{evidence}",
        WEIGHT[UNANNOTATED] * strength * (PLACEHOLDER if placeholder else 1.0),
        symbol=name,
        suggestion=best.concept,
        suggestion_label=best.label,
        items=best.items,
        quickstatements=_addition(item, best.concept, name),
    )


def support(reading: Reading, corpus_count: int) -> float:
    """How much to trust a reading by how many items say so: the items that are its evidence,
    and up to `CORPUS_VOTES` of the corpus' items that annotate the symbol so; one item alone
    is half as sure as many."""
    corpus = min(CORPUS_VOTES, round(reading.evidence.get(CORPUS, 0.0) * corpus_count))
    return 1.0 - 0.5 ** max(1, len(reading.items) + corpus)


def _addition(item: str, concept: str, name: str) -> str | None:
    """The QuickStatements line, or None where none can be written (a symbol with a double
    quote, a concept that is not a Wikidata item): the lead stands without it."""
    try:
        return concept_with_symbol(item, concept, name)
    except ValueError:
        return None


def _top(explanation: SymbolExplanation | None) -> Reading | None:
    return explanation.readings[0] if explanation and explanation.readings else None


def _swapped(
    by_symbol: Mapping[str, set[str]],
    reading: Mapping[str, SymbolExplanation],
    labels: Mapping[str, str],
) -> list[Lead]:
    out = []
    names = sorted(by_symbol)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ra, rb = _top(reading.get(a)), _top(reading.get(b))
            if ra is None or rb is None or by_symbol[a] & by_symbol[b]:
                continue
            if (
                ra.concept in by_symbol[b]
                and rb.concept in by_symbol[a]
                and (ra.concept not in by_symbol[a] and rb.concept not in by_symbol[b])
            ):
                out.append(
                    Lead(
                        SWAPPED,
                        f"{a} and {b} look exchanged: {a} is annotated "
                        f"{_named(rb.concept, labels.get(rb.concept))} and {b} "
                        f"{_named(ra.concept, labels.get(ra.concept))}; similar formulae read "
                        f"them the other way round (as in {', '.join((ra.items + rb.items)[:3])})",
                        WEIGHT[SWAPPED] * min(ra.score, rb.score),
                        symbol=a,
                        concept=rb.concept,
                        suggestion=ra.concept,
                        suggestion_label=ra.label,
                        items=tuple(dict.fromkeys(ra.items + rb.items)),
                    )
                )
    return out


def _doubted(
    by_symbol: Mapping[str, set[str]],
    reading: Mapping[str, SymbolExplanation],
    labels: Mapping[str, str],
    doubt: Mapping[str, float],
) -> list[Lead]:
    out = []
    for name, concepts in sorted(by_symbol.items()):
        explanation = reading.get(name)
        best = _top(explanation)
        if explanation is None or best is None or best.concept in concepts:
            continue
        if any(r.concept in concepts for r in explanation.readings):
            continue  # the annotation is among the readings: not doubted
        if _aligned_share(best) == 0.0 or best.score < DOUBT_FLOOR:
            continue  # only formulae of the same shape are evidence enough
        concept = sorted(concepts, key=lambda c: -doubt.get(c, 0.0))[0]
        models = doubt.get(concept)
        fit = f"; the held-out models rank it {models:.0%} down" if models is not None else ""
        out.append(
            Lead(
                DOUBTED,
                f"{name} is annotated {_named(concept, labels.get(concept))}, but formulae of "
                f"the same shape annotate it {_named(best.concept, best.label)} (as in "
                f"{', '.join(best.items[:3])}){fit}",
                WEIGHT[DOUBTED] * best.score * (0.5 + 0.5 * (models or 0.0)),
                symbol=name,
                concept=concept,
                suggestion=best.concept,
                suggestion_label=best.label,
                items=best.items,
            )
        )
    return out


def _written_names(tree: Expr) -> set[str]:
    """Every name a formula writes: identifiers, constants, operators, functions."""
    out = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.name:
            out.add(_same_letter(node.name))
        if node.head.startswith("rel:"):
            out.add(node.head[4:])
        stack.extend(node.args)
    return out


def _tokens(mathml: str, options: ParseOptions) -> set[str]:
    """Every token of the formula's operator tree, as written (`×`, `∈`, `≡`, `cos`)."""
    out = set()
    stack = [parse_mathml(mathml, options)]
    while stack:
        node = stack.pop()
        out.add(node.token)
        out.update(_LAYOUT_SIGNS.get(node.token, ()))
        stack.extend(node.children)
    return out


def _same_letter(name: str) -> str:
    return name.translate(_LETTERS)


def _base(name: str) -> str:
    """A name without its subscript, primes, stars, arrows or a difference's Δ: `m_1` → `m`,
    `F′` → `F`, `A→` and `A¯` → `A`, `ΔU` → `U`."""
    base = _same_letter(name).split("_", 1)[0].rstrip("′'″*→^¯‾~˜˙¨")
    return base[1:] if len(base) > 1 and base[0] == "Δ" else base


def _written(symbol: str, written: set[str]) -> bool:
    """Whether a formula writes an annotated symbol: as it is, or as an indexed or primed
    form of the same letter (`m` for `m_1` and `m_2`, `p_i` for `p_1`, `F` beside `F′`)."""
    if _same_letter(symbol) in written:
        return True
    base = _base(symbol)
    return any(_base(name) == base for name in written)


def _not_in_formula(
    annotations: Sequence[Annotation], identifiers: set[str], written: set[str], unseen: bool
) -> list[Lead]:
    """Annotated symbols none of the item's formulae write (`written`: the names of all of
    them); `unseen`: the item has formulae the data does not hold."""
    out = []
    for a in annotations:
        if a.identifier in (None, TEMPLATE) or _written(a.identifier, identifiers | written):
            continue
        where = (
            "; the item has several defining formulae, so it may belong to another of them"
            if unseen
            else ""
        )
        out.append(
            Lead(
                NOT_IN_FORMULA,
                f"the symbol {a.identifier} of {_named(a.concept, a.label)} is not in the "
                f"formula (its identifiers: {', '.join(sorted(identifiers))}){where}",
                WEIGHT[NOT_IN_FORMULA] * (ANOTHER_FORMULA if unseen else 1.0),
                symbol=a.identifier,
                concept=a.concept,
            )
        )
    return out


def _shared(
    annotations: Sequence[Annotation], identifiers: set[str], labels: Mapping[str, str]
) -> list[Lead]:
    symbols: dict[str, set[str]] = {}
    concepts: dict[str, set[str]] = {}
    for a in annotations:
        if a.identifier in identifiers:
            symbols.setdefault(a.concept, set()).add(a.identifier)
            concepts.setdefault(a.identifier, set()).add(a.concept)
    out = []
    for name, on in sorted(concepts.items()):
        if len(on) > 1:
            listed = " and ".join(_named(c, labels.get(c)) for c in sorted(on))
            out.append(
                Lead(
                    TWO_CONCEPTS,
                    f"{name} carries two concepts, {listed}: keep the one the formula means",
                    WEIGHT[TWO_CONCEPTS],
                    symbol=name,
                )
            )
    for concept, on in sorted(symbols.items()):
        if len(on) > 1:
            out.append(
                Lead(
                    TWO_SYMBOLS,
                    f"{_named(concept, labels.get(concept))} is annotated on "
                    f"{' and '.join(sorted(on))}: check both mean it",
                    WEIGHT[TWO_SYMBOLS],
                    concept=concept,
                )
            )
    return out


def priority(leads: Sequence[Lead]) -> float:
    """An item's place in the editors' queue: its strongest lead's score."""
    return max((lead.score for lead in leads), default=0.0)
