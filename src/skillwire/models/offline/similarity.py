"""Character n-gram TF-IDF similarity: intent detection with nothing downloaded.

Each intent is represented by its examples and description; a message's score for an
intent is the best cosine similarity to any of them. Character n-grams (3 to 5) are
robust to inflection, typos and word order, which matters for short messages.

Short n-grams also make unrelated words look alike (``translate`` and ``track`` share
``tra``), so a score alone can accept a message that has nothing to do with an intent.
:meth:`NgramIndex.related` asks for evidence: the message and one of the intent's texts
share a content word, or a word stem of at least four letters (a 5-gram of the padded
word: ``refund`` and ``refunded`` share `` refu``; ``translate`` and ``track`` share
nothing that long). A message related to no intent is out of domain whatever its score.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["NgramIndex", "normalize"]

_KEEP = set("abcdefghijklmnopqrstuvwxyz0123456789 ")
STOPWORDS = frozenset(
    """
a about am an and any are as at be been but by can could did do does doing for
from get got had has have how i i'd i'm im is it it's its let me my of on or
our please so some than that the their them then there these they this those to
too up us was we were what whats what's when where wheres which who why will
with would you your yours s t d ll m re ve just also into out over want wants
like need needs give tell show help hi hello
""".split()  # noqa: SIM905 - a word list reads best as text
)
"""Function words left out of the features: they say nothing about intent."""


def normalize(text: str) -> str:
    """Lowercase, letters and digits only, single spaces."""
    lowered = "".join(ch if ch in _KEEP else " " for ch in text.lower())
    return " ".join(lowered.split())


def ngrams(text: str, sizes: Sequence[int] = (3, 4, 5)) -> Counter[str]:
    """Character n-grams of the padded content words of ``text`` (also whole words)."""
    grams: Counter[str] = Counter()
    for word in normalize(text).split():
        if word in STOPWORDS:
            continue
        padded = f" {word} "
        grams[f"w:{word}"] += 1
        for n in sizes:
            for i in range(max(1, len(padded) - n + 1)):
                grams[padded[i : i + n]] += 1
    return grams


EVIDENCE_SIZE = 5
"""The shortest n-gram (of a padded word) that relates a message to a text, besides a
whole content word."""


def _telling(gram: str) -> bool:
    return gram.startswith("w:") or len(gram) >= EVIDENCE_SIZE


class NgramIndex:
    """Labelled documents; :meth:`scores` gives each label's best cosine similarity."""

    def __init__(self, docs: Iterable[tuple[str, str]]) -> None:
        pairs = [(label, grams) for label, text in docs if (grams := ngrams(text))]
        df: Counter[str] = Counter()
        for _, grams in pairs:
            df.update(grams.keys())
        total = len(pairs) or 1
        self.idf = {g: math.log((1 + total) / (1 + n)) + 1.0 for g, n in df.items()}
        self.docs = [(label, self._vector(grams)) for label, grams in pairs]
        self.evidence: dict[str, set[str]] = {}
        for label, grams in pairs:
            self.evidence.setdefault(label, set()).update(g for g in grams if _telling(g))

    def _vector(self, grams: Counter[str]) -> dict[str, float]:
        vec = {g: (1 + math.log(c)) * self.idf.get(g, 1.0) for g, c in grams.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {g: v / norm for g, v in vec.items()}

    def scores(self, text: str) -> dict[str, float]:
        """Label -> best similarity of ``text`` to that label's documents (0 to 1)."""
        query = self._vector(ngrams(text))
        best: dict[str, float] = {}
        for label, vec in self.docs:
            small, large = (query, vec) if len(query) < len(vec) else (vec, query)
            score = sum(v * large.get(g, 0.0) for g, v in small.items())
            if score > best.get(label, -1.0):
                best[label] = score
        return best

    def related(self, text: str) -> set[str]:
        """The labels whose texts share a content word or a stem of four letters or
        more with ``text`` (see the module's docstring)."""
        telling = {g for g in ngrams(text) if _telling(g)}
        return {label for label, grams in self.evidence.items() if telling & grams}

    def lead(self, text: str, label: str, named: set[str]) -> float:
        """How far ``label``'s score for ``text`` is ahead of the best related label
        not in ``named`` (0 to 1; its score when there is none)."""
        related = self.related(text)
        scores = {k: s for k, s in self.scores(text).items() if k in related}
        rest = max((s for k, s in scores.items() if k not in named), default=0.0)
        return max(0.0, scores.get(label, 0.0) - rest)

    def best(self, text: str) -> tuple[str, float, float]:
        """The label ``text`` fits best among those it is :meth:`related` to, its score,
        and a confidence: the score less the next label's (0 to 1; the score itself
        when no other label is related). Two labels that fit about as well leave little
        confidence, however high their scores. ``("", 0.0, 0.0)`` when none is related.
        """
        related = self.related(text)
        scores = {label: s for label, s in self.scores(text).items() if label in related}
        if not scores:
            return "", 0.0, 0.0
        ranked = sorted(scores.values(), reverse=True)
        second = ranked[1] if len(ranked) > 1 else 0.0
        label = max(scores, key=lambda k: scores[k])
        return label, ranked[0], max(0.0, ranked[0] - second)
