"""Passages of extracted text and how well they match a set of keywords (a small BM25).

Used by the fetch tool (`sectionKeywords` puts the best passages first) and by the research flow
(ranking every source's passages against the question). Pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["Passage", "rank_passages", "split_passages", "terms"]

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+#-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
# Words too common to say anything about relevance.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def _stem(word: str) -> str:
    # Plural, -ing and final -e only (passages ~ passage, caching ~ cache, ranks ~ ranking): enough
    # to match a question's words to a text's, without a stemmer's surprises on IDs and code names.
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix in ("ies", "ing", "es", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def terms(text: str) -> list[str]:
    """Lower-cased, lightly stemmed word tokens of `text` without stop words (IDs stay whole)."""
    return [_stem(w) for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP]


@dataclass(frozen=True)
class Passage:
    """One passage: its position in the document, its text and (after ranking) its score."""

    index: int
    text: str
    score: float = 0.0


def split_passages(text: str, max_chars: int = 1200) -> list[Passage]:
    """Blank-line separated blocks, a heading kept with the block after it, long blocks split."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    merged: list[str] = []
    pending_heading = ""
    for block in blocks:
        if block.startswith("#") and "\n" not in block:
            pending_heading = f"{pending_heading}\n{block}".strip()
            continue
        merged.append(f"{pending_heading}\n{block}".strip() if pending_heading else block)
        pending_heading = ""
    if pending_heading:
        merged.append(pending_heading)
    out: list[str] = []
    for block in merged:
        while len(block) > max_chars:
            cut = block.rfind(". ", 0, max_chars)
            cut = cut + 1 if cut > max_chars // 2 else max_chars
            out.append(block[:cut].strip())
            block = block[cut:].strip()
        if block:
            out.append(block)
    return [Passage(i, b) for i, b in enumerate(out)]


def rank_passages(
    passages: list[Passage], query_terms: list[str], k1: float = 1.2, b: float = 0.75
) -> list[Passage]:
    """Passages scored by BM25 against `query_terms`, best first; ties keep document order."""
    wanted = [_stem(t.lower()) for t in query_terms if t.strip()]
    if not passages or not wanted:
        return list(passages)
    wanted_set = set(wanted)
    # Only words that can stem to a query term are stemmed and counted (stemming only shortens a
    # word, so a match starts with the term's first 3 characters); every word counts for length.
    prefixes = sorted({t[:3] for t in wanted_set}, key=len, reverse=True)
    # Matched in lower-cased text: a case-insensitive alternation scans about 1.7x slower.
    candidates = re.compile(
        r"(?<![a-z0-9])(?:" + "|".join(re.escape(p) for p in prefixes) + r")[a-z0-9_.+#-]*"
    )
    tokenised: list[Counter[str]] = []
    lengths: list[int] = []
    # A word's query term (or None), once per distinct spelling: texts repeat their words a lot.
    term_of: dict[str, str | None] = {}
    for p in passages:
        lengths.append(len(p.text.split()) or 1)
        counts: Counter[str] = Counter()
        for raw in candidates.findall(p.text.lower()):
            try:
                st = term_of[raw]
            except KeyError:
                w = raw.rstrip(".-#+_")
                st = _stem(w) if w not in _STOP else None
                st = term_of[raw] = st if st in wanted_set else None
            if st is not None:
                counts[st] += 1
        tokenised.append(counts)
    avg = sum(lengths) / len(lengths)
    n = len(passages)
    df = {t: sum(1 for c in tokenised if t in c) for t in set(wanted)}
    scored = []
    for p, counts, length in zip(passages, tokenised, lengths, strict=True):
        score = 0.0
        for t in set(wanted):
            tf = counts.get(t, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
        scored.append(Passage(p.index, p.text, round(score, 4)))
    return sorted(scored, key=lambda p: (-p.score, p.index))
