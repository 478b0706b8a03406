"""Research synthesis without Prefect: evidence in, a cited answer out, and the checks on both.

A synthesizer (`Synthesizer`) turns the question and the sources' extracted text (`Evidence`) into a
`Synthesis`: a short answer, findings grouped by sub-question, every claim with its citations, and the
claims that could not be supported. `ExtractiveSynthesizer` (the offline default) quotes whole
sentences of prose (never a fence, table row, heading or list fragment), ranked by BM25 against each
sub-question and picked with maximal marginal relevance (MMR) so that near-repeats make room for
other facts; near-duplicate sentences across sources (MinHash over word shingles) collapse into one.
`tasks/llm_synth.py` is the other synthesizer (an LLM behind the same interface).

`verify_claims` keeps what checks out: a quote must occur in its cited source's text after
whitespace normalisation (`comparable`), and a cited source must hold a sentence that overlaps the claim above
`SUPPORT_THRESHOLD`; a citation failing either is dropped, and a claim left with none is listed under
"unsupported", never published as a fact.
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass, field
from typing import Protocol

from udm.research.passages import Passage, rank_passages, terms

__all__ = [
    "SUPPORT_THRESHOLD",
    "Claim",
    "Evidence",
    "ExtractiveSynthesizer",
    "Synthesis",
    "Synthesizer",
    "collapse_near_duplicates",
    "comparable",
    "minhash",
    "normalise",
    "prose_sentences",
    "split_sub_questions",
    "support_of",
    "verify_claims",
]

# Share of a claim's words a sentence of the cited source must hold for the citation to stand.
SUPPORT_THRESHOLD = 0.5


@dataclass(frozen=True)
class Evidence:
    """A usable source: its number in the appendix, title, URL and extracted text."""

    n: int
    title: str
    url: str
    text: str


@dataclass
class Claim:
    """One sentence of the answer with the sources it cites and (when quoted) its verbatim span."""

    text: str
    cites: list[int]
    quote: str | None = None
    reason: str = ""  # why it is unsupported, when it is


@dataclass
class Synthesis:
    """What a synthesizer produced: the answer, findings by sub-question, unsupported claims."""

    answer: list[Claim]
    groups: list[tuple[str, list[Claim]]]
    unsupported: list[Claim] = field(default_factory=list)
    synthesizer: str = "extractive"
    notes: list[str] = field(default_factory=list)

    def claims(self) -> list[Claim]:
        """Every published claim (answer and findings)."""
        return [*self.answer, *(c for _, claims in self.groups for c in claims)]


class Synthesizer(Protocol):
    """Turns a question and its evidence into a cited synthesis."""

    name: str

    def synthesize(self, question: str, sub_questions: list[str], evidence: list[Evidence]) -> Synthesis:
        """The cited answer to `question` from `evidence` (claims not yet verified)."""
        ...


_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """`text` with every run of whitespace made one space, stripped."""
    return _WS.sub(" ", text).strip()


_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def comparable(text: str) -> str:
    """`text` as quotes are compared: whitespace normalised, and a Markdown backslash escape read as
    the character it escapes (extracted text says `match\\_bm25` where the page says `match_bm25`)."""
    return normalise(_ESCAPE.sub(r"\1", text))


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6}(\s|$)|(=+|-+)\s*$)")
_TABLE = re.compile(r"^\s*\|")
_ITEM = re.compile(r"^(\s*)([-+*]|\d{1,9}[.)])\s+")
_QUOTE_MARK = re.compile(r"^\s*>\s?")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(])")
# A quote must not start a Markdown block of its own or read as this appendix's citation.
_BLOCK_START = re.compile(r"^([#>|<=~`*+\-]|\d{1,9}[.)](\s|$)|\s)")
_CITATION_LIKE = re.compile(r"\[\d{1,4}\]")
# A relative link or an image pointed somewhere in its own site: quoted here it would be a broken link.
_LOCAL_LINK = re.compile(r"!\[|\]\((?!https?://)|^\[[^\]]*\]:")


def _units(text: str) -> list[str]:
    """Prose blocks of Markdown-ish text: paragraphs and list items, whitespace-normalised; fences,
    tables, headings, block quotes and HTML-looking lines are left out whole."""
    out: list[str] = []
    current: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if current:
            out.append(normalise(" ".join(current)))
            current.clear()

    for line in text.splitlines():
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) <= set(fence[0]):
                fence = None
            continue
        if m := _FENCE_OPEN.match(line):
            flush()
            fence = m.group(1)
            continue
        if _QUOTE_MARK.match(line):
            # A source's block quote is someone else's words, and its markers would sit inside a
            # quote spanning its lines: left out whole.
            flush()
            continue
        stripped = line
        if not stripped.strip() or _HEADING.match(stripped) or _TABLE.match(stripped):
            flush()
            continue
        if item := _ITEM.match(stripped):
            flush()
            current.append(stripped[item.end() :])
            continue
        if stripped.lstrip().startswith("<"):
            flush()
            continue
        current.append(stripped)
    flush()
    return out


def _quotable(unit: str, min_words: int = 5, max_chars: int = 400) -> list[str]:
    out: list[str] = []
    for sentence in _SENTENCE_END.split(unit):
        s = sentence.strip()
        if (
            len(s.split()) < min_words
            or len(s) > max_chars
            or not s.endswith((".", "!", "?", '."', ".)", "?)", '?"'))
            or _BLOCK_START.match(s)
            or _CITATION_LIKE.search(s)
            or _LOCAL_LINK.search(s)
            or s.count("`") % 2
            or s.count("[") != s.count("]")
        ):
            continue
        out.append(s)
    return out


def prose_sentences(text: str) -> list[str]:
    """Whole sentences of `text`'s prose that are safe to quote inline, in document order."""
    return [s for unit in _units(text) for s in _quotable(unit)]


def split_sub_questions(question: str) -> list[str]:
    """The question's own sub-questions: its sentences ending in '?' (or ';'-separated parts)."""
    parts = [normalise(p) for p in re.split(r"(?<=\?)\s+|;\s+", question.strip())]
    parts = [p for p in parts if len(terms(p)) >= 1]
    return parts or [normalise(question)]


_SHINGLE = 3
_PERMUTATIONS = 32
_BANDS = 8
_EMPTY = 1 << 64


def _shingles(text: str) -> set[int]:
    words = [w.lower() for w in re.findall(r"\w+", text)]
    grams = [" ".join(words[i : i + _SHINGLE]) for i in range(max(1, len(words) - _SHINGLE + 1))]
    return {struct.unpack("<Q", hashlib.blake2b(g.encode(), digest_size=8).digest())[0] for g in grams}


def minhash(text: str, shingles: set[int] | None = None) -> tuple[int, ...]:
    """The MinHash signature of `text`'s word 3-shingles: one-permutation hashing, the least hash of
    each of 32 bins (one pass over the shingles instead of 32)."""
    hashes = _shingles(text) if shingles is None else shingles
    mins = [_EMPTY] * _PERMUTATIONS
    for h in hashes:
        k = h & (_PERMUTATIONS - 1)
        if h < mins[k]:
            mins[k] = h
    return tuple(mins)


def collapse_near_duplicates(texts: list[str], threshold: float = 0.7) -> list[int | None]:
    """For each text, the index of an earlier near-duplicate it collapses into (estimated Jaccard of
    word shingles >= `threshold`), else None. Candidates come from MinHash bands (LSH), so texts are
    not compared pairwise; a candidate pair's Jaccard is then computed exactly."""
    rows = _PERMUTATIONS // _BANDS
    sets = [_shingles(t) for t in texts]
    sigs = [minhash(t, s) for t, s in zip(texts, sets, strict=True)]
    buckets: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    out: list[int | None] = []
    for i, sig in enumerate(sigs):
        into: int | None = None
        seen: set[int] = set()
        for band in range(_BANDS):
            key = (band, sig[band * rows : (band + 1) * rows])
            if all(v == _EMPTY for v in key[1]):
                continue  # a short text's empty bins say nothing about similarity
            for j in buckets.get(key, []):
                if j in seen or out[j] is not None:
                    continue
                seen.add(j)
                if len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= threshold:
                    into = j
                    break
            if into is not None:
                break
        out.append(into)
        if into is None:
            for band in range(_BANDS):
                buckets.setdefault((band, sig[band * rows : (band + 1) * rows]), []).append(i)
    return out


def support_of(claim: str, source_text: str) -> float:
    """The best share of the claim's words that one sentence of the source holds (0..1)."""
    wanted = set(terms(claim))
    if not wanted:
        return 0.0
    best = 0.0
    plain = _ESCAPE.sub(r"\1", source_text)
    for unit in _units(plain) or [normalise(plain)]:
        for sentence in _SENTENCE_END.split(unit):
            have = wanted & set(terms(sentence))
            best = max(best, len(have) / len(wanted))
            if best >= 1.0:
                return best
    return best


def verify_claims(
    synthesis: Synthesis, evidence: list[Evidence], threshold: float = SUPPORT_THRESHOLD
) -> None:
    """Drop every citation that does not check out (quote not in the source, or no sentence of the
    source overlapping the claim above `threshold`); claims left without one move to `unsupported`."""
    texts = {e.n: comparable(e.text) for e in evidence}
    raw = {e.n: e.text for e in evidence}

    def check(claims: list[Claim]) -> list[Claim]:
        kept: list[Claim] = []
        for claim in claims:
            if not claim.cites:
                claim.reason = "cites no source"
                synthesis.unsupported.append(claim)
                continue
            good: list[int] = []
            reasons: list[str] = []
            for n in dict.fromkeys(claim.cites):
                if n not in texts:
                    reasons.append(f"[{n}] is not a usable source")
                elif claim.quote and comparable(claim.quote) not in texts[n]:
                    reasons.append(f"its quote does not occur in [{n}]")
                elif support_of(claim.text, raw[n]) < threshold:
                    reasons.append(f"no sentence of [{n}] supports it")
                else:
                    good.append(n)
            if good:
                claim.cites = good
                kept.append(claim)
            else:
                claim.reason = "; ".join(reasons)
                synthesis.unsupported.append(claim)
        return kept

    synthesis.answer = check(synthesis.answer)
    synthesis.groups = [(q, check(claims)) for q, claims in synthesis.groups]


@dataclass
class _Candidate:
    text: str
    source: int
    terms: frozenset[str]
    score: float = 0.0


class ExtractiveSynthesizer:
    """Quotes the sentences that best answer each sub-question (BM25 + MMR), verbatim, with citations."""

    name = "extractive"

    def __init__(
        self, *, answer_sentences: int = 2, per_group: int = 4, pool: int = 120, mmr_lambda: float = 0.7
    ) -> None:
        self.answer_sentences = answer_sentences
        self.per_group = per_group
        self.pool = pool
        self.mmr_lambda = mmr_lambda

    def _candidates(self, question: str, evidence: list[Evidence]) -> tuple[list[_Candidate], int]:
        query = terms(question)
        # Passages (paragraphs, list items) first: one BM25 corpus over every source, so scores compare.
        units: list[tuple[int, str]] = [(e.n, u) for e in evidence for u in _units(e.text)]
        ranked = rank_passages([Passage(i, u) for i, (_, u) in enumerate(units)], query)
        top = [p for p in ranked[: self.pool] if p.score > 0]
        # The same passage on two sites (a mirror, a syndicated post) is one finding, cited once.
        dup_of = collapse_near_duplicates([p.text for p in top])
        kept = [p for p, dup in zip(top, dup_of, strict=True) if dup is None]
        sentences = [(units[p.index][0], s, p.score) for p in kept for s in _quotable(p.text)]
        ranked_s = rank_passages([Passage(i, s) for i, (_, s, _) in enumerate(sentences)], query)
        out = [
            # A sentence of a strong passage outranks the same words in a weak one.
            _Candidate(
                p.text, sentences[p.index][0], frozenset(terms(p.text)), p.score + 0.1 * sentences[p.index][2]
            )
            for p in ranked_s
            if p.score > 0
        ]
        return out, len(top) - len(kept)

    def _mmr(
        self,
        candidates: list[_Candidate],
        query: list[str],
        k: int,
        taken: list[_Candidate],
        strict: bool = False,
    ) -> list[_Candidate]:
        wanted = set(query)
        # A sentence sharing one word with a longer question rarely answers it: ask for two of its
        # words. The answer settles for as many as the best sentence holds (a question may use words
        # no source does); a sub-question's findings do not (better "nothing answers this part").
        overlap = {id(c): len(wanted & c.terms) for c in candidates}
        most = max(overlap.values(), default=0)
        need = 2 if len(wanted) >= 3 else 1
        need = need if strict else max(1, min(need, most))
        pool = [c for c in candidates if c not in taken and overlap[id(c)] >= need]
        if not pool:
            return []
        rel = {id(c): sum(1 for t in wanted if t in c.terms) / len(wanted) for c in pool}
        top = max(c.score for c in pool) or 1.0
        picked: list[_Candidate] = []
        while pool and len(picked) < k:

            def value(c: _Candidate) -> float:
                relevance = 0.5 * c.score / top + 0.5 * rel[id(c)]
                similar = max((_jaccard(c.terms, o.terms) for o in [*taken, *picked]), default=0.0)
                return self.mmr_lambda * relevance - (1 - self.mmr_lambda) * similar

            best = max(pool, key=value)
            picked.append(best)
            pool.remove(best)
        return picked

    def synthesize(self, question: str, sub_questions: list[str], evidence: list[Evidence]) -> Synthesis:
        """The cited answer to `question`: whole quoted sentences from `evidence`."""
        subs = sub_questions or [question]
        candidates, collapsed = self._candidates(" ".join([question, *subs]), evidence)
        answer = self._mmr(candidates, _asked(question), self.answer_sentences, [])
        # The findings may repeat an answer sentence (the answer sums them up), never each other; a
        # sentence goes to the sub-question(s) sharing the most words with it.
        asked = [set(_asked(sub)) for sub in subs]
        best = {id(c): max(len(a & c.terms) for a in asked) for c in candidates}
        taken: list[_Candidate] = []
        groups: list[tuple[str, list[Claim]]] = []
        for sub, wanted in zip(subs, asked, strict=True):
            mine = [c for c in candidates if len(wanted & c.terms) == best[id(c)]]
            picked = self._mmr(mine, sorted(wanted), self.per_group, taken, strict=True)
            taken += picked
            groups.append((sub, [Claim(c.text, [c.source], c.text) for c in picked]))
        notes = (
            [f"{collapsed} near-duplicate passages collapsed into their first source"] if collapsed else []
        )
        return Synthesis(
            answer=[Claim(c.text, [c.source], c.text) for c in answer],
            groups=groups,
            synthesizer=self.name,
            notes=notes,
        )


# Words of a question that ask rather than say what about: matching them finds nothing.
_ASKING = frozenset(["should", "would", "could", "might", "must", "shall", "way", "ways", "best", "need"])


def _asked(question: str) -> list[str]:
    """The question's terms that a sentence answering it would share."""
    return [t for t in terms(question) if t not in _ASKING]


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0
