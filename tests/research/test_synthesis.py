"""The extractive synthesizer, near-duplicate collapse, citation checks and the appendix's block check."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flows.research_report import AppendixCheckError, Source, check_markdown, check_quotes, render_appendix
from udm.research import Claim, Evidence, ExtractiveSynthesizer, Synthesis, split_sub_questions, verify_claims
from udm.research.synthesis import collapse_near_duplicates, normalise, prose_sentences, support_of

DOC = """# Caching in practice

Prefect caches a task's result under a key made from its inputs and its source code. A cached run
returns the stored result without running the task again.

```python
# Prefect caches nothing here. This sentence sits in a fence and must never be quoted.
@task(cache_policy=INPUTS)
```

| Setting | Meaning of the setting for caching results |
| --- | --- |
| cache_expiration | How long a cached result of a task stays valid. |

- Retries wait with exponential backoff between attempts of a task.
- Too short here.

Unrelated closing words about the weather in spring and nothing else at all.
"""


def test_prose_sentences_are_whole_sentences_outside_fences_tables_and_headings() -> None:
    found = prose_sentences(DOC)
    assert found[0].startswith("Prefect caches a task's result") and found[0].endswith("source code.")
    assert "A cached run returns the stored result without running the task again." in found
    assert "Retries wait with exponential backoff between attempts of a task." in found  # marker gone
    assert not any("fence" in s or "cache_expiration" in s or "Caching in practice" in s for s in found)
    assert "Too short here." not in found  # fewer than five words
    source = normalise(DOC)
    assert all(s in source for s in found)


_PROSE = st.text(alphabet=st.sampled_from(list("abc XYZ.,;:!?-*_`|#>[]()\n12")), max_size=400)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PROSE, max_size=6))
def test_every_extracted_sentence_occurs_verbatim_and_opens_no_block(parts: list[str]) -> None:
    text = "\n\n".join(parts)
    source = normalise(text)
    for sentence in prose_sentences(text):
        assert sentence in source
        assert sentence.count("`") % 2 == 0 and not sentence.startswith(("#", ">", "|", "-", "`", " "))


def test_extractive_answer_quotes_the_best_sentences_and_groups_by_sub_question() -> None:
    other = Evidence(
        2,
        "Retries",
        "https://b.example/",
        "Retries of a failed task wait with exponential backoff and honour Retry-After from servers.\n\n"
        "The weather was sunny and warm for the whole week in the valley.",
    )
    question = "How does Prefect cache task results? How do retries wait between attempts?"
    subs = split_sub_questions(question)
    assert subs == ["How does Prefect cache task results?", "How do retries wait between attempts?"]
    synthesis = ExtractiveSynthesizer().synthesize(question, subs, [Evidence(1, "Caching", "u", DOC), other])
    assert synthesis.answer and synthesis.answer[0].cites in ([1], [2])
    cache_group, retry_group = synthesis.groups
    assert cache_group[1] and all(c.cites == [1] for c in cache_group[1])
    assert any(c.cites == [2] and "exponential backoff" in c.text for c in retry_group[1])
    texts = [c.text for _, group in synthesis.groups for c in group]
    assert len(texts) == len(set(texts))  # findings never repeat each other (they may repeat the answer)
    assert not any("weather" in t for t in texts)
    assert check_quotes(synthesis, [_source(1, DOC), _source(2, other.text)]) == []


def test_mmr_prefers_a_new_fact_over_a_near_repeat() -> None:
    text = (
        "Caching stores task results by cache key for later runs of the flow.\n\n"
        "Caching stores task results by cache key for later runs of the flows.\n\n"
        "Caching expiry drops stored results after the configured expiration time."
    )
    synthesis = ExtractiveSynthesizer(answer_sentences=2).synthesize(
        "How does caching store results?", [], [Evidence(1, "t", "u", text)]
    )
    picked = [c.text for c in synthesis.answer]
    assert len(picked) == 2 and any("expiry" in p for p in picked)


def test_near_duplicate_passages_across_sources_collapse_into_the_first() -> None:
    base = (
        "The crawler keeps a politeness delay per host and never opens more than four connections to "
        "one site at a time, which keeps small servers responsive during a research run."
    )
    near = base.replace("small", "smaller")  # one word changed: a copy with an edit
    unrelated = (
        "Patches are applied inside a transaction and journaled so that a crash can be rolled back safely."
    )
    assert collapse_near_duplicates([base, near, unrelated]) == [None, 0, None]
    synthesis = ExtractiveSynthesizer().synthesize(
        "What politeness delay does the crawler keep per host?",
        [],
        [Evidence(1, "a", "u1", base), Evidence(2, "b", "u2", near)],
    )
    # The answer and the one finding are the same sentence, from the first source only.
    assert [c.cites for c in synthesis.claims()] == [[1], [1]]
    assert synthesis.notes == ["1 near-duplicate passages collapsed into their first source"]


def test_verify_claims_drops_unsupported_citations_and_lists_the_claims() -> None:
    ev = [
        Evidence(1, "a", "u", "The index stores sections by content hash.\nIt is rebuilt after each batch."),
        Evidence(2, "b", "v", "Weather reports mention rain in the north."),
    ]
    supported = Claim("The index stores sections keyed by their content hash.", [1, 2])
    invented = Claim("The index was written in COBOL in 1970.", [1])
    misquoted = Claim("Sections are stored by content hash.", [1], quote="stored by hash")
    bare = Claim("The index is fast.", [])
    synthesis = Synthesis(answer=[supported], groups=[("q", [invented, misquoted, bare])])
    verify_claims(synthesis, ev)
    assert synthesis.answer == [supported] and supported.cites == [1]  # [2] does not say it
    assert synthesis.groups == [("q", [])]
    reasons = {c.text: c.reason for c in synthesis.unsupported}
    assert reasons[invented.text] == "no sentence of [1] supports it"
    assert reasons[misquoted.text] == "its quote does not occur in [1]"
    assert reasons[bare.text] == "cites no source"
    assert support_of("content hash sections", ev[0].text) == 1.0


def _source(n: int, text: str, status: str = "SUCCESS") -> Source:
    return Source(
        n=n, url=f"https://s{n}.example/", kind="url", origin="seed", status=status, title=f"S{n}", text=text
    )


def test_the_appendix_answers_first_and_round_trips_its_blocks() -> None:
    q = "How does Prefect cache task results?"
    sources = [_source(1, DOC), _source(2, "", "ERROR_FETCH_FAILED")]
    synthesis = ExtractiveSynthesizer().synthesize(q, [q], [Evidence(1, "Caching", "u", DOC)])
    synthesis.unsupported.append(
        Claim("A claim | with a pipe\nand a newline", [3], reason="no sentence of [3] supports it")
    )
    md = render_appendix("APP-PREFECT-CACHE-RESEARCH-V1", q, sources, synthesis)
    answer = md.split("## 1. Answer\n\n", 1)[1].split("\n\n", 1)[0]
    assert answer.startswith("“Prefect caches a task") and answer.rstrip().endswith("[1]")
    assert "## Unsupported claims" in md and "A claim \\| with a pipe and a newline" in md
    assert md.index("## 1. Answer") < md.index("## 2. Findings") < md.index("## 3. Sources")


def test_a_broken_block_structure_is_refused_before_the_write() -> None:
    q = "How does the index rank?"
    # An LLM sentence opening with a fence would swallow the rest of the appendix as code.
    opened = Claim("```python the index ranks passages by BM25.", [1])
    with pytest.raises(AppendixCheckError, match="does not parse back"):
        render_appendix("APP-X-RESEARCH-V1", q, [_source(1, "x")], Synthesis(answer=[opened], groups=[]))
    check_markdown("| a |\n| - |\n| 1 |\n", [("table", 1)])
    with pytest.raises(AppendixCheckError, match="block 1 should be \\('table', 2\\)"):
        check_markdown("| a |\n| - |\n| 1 |\n", [("table", 2)])
    with pytest.raises(AppendixCheckError):
        check_markdown("```yaml\na: 1\n\n# Heading\n", [("fence", 0), ("heading", 0)])


def test_check_quotes_names_a_quote_missing_from_its_source() -> None:
    synthesis = Synthesis(answer=[Claim("Made up words here.", [1], "Made up words here.")], groups=[])
    assert check_quotes(synthesis, [_source(1, DOC)]) == [
        "the quote 'Made up words here.'… is not in source [1]"
    ]


def test_markdown_escapes_in_extracted_text_read_as_their_characters() -> None:
    extracted = "The match\\_bm25 function returns a score per row; higher is better."
    claim = Claim(
        "The match_bm25 function returns a score per row.", [1], quote="match_bm25 function returns a score"
    )
    synthesis = Synthesis(answer=[claim], groups=[])
    verify_claims(synthesis, [Evidence(1, "a", "u", extracted)])
    assert synthesis.answer == [claim] and not synthesis.unsupported


_WORDS = st.sampled_from(
    [
        "The",
        "index",
        "ranks",
        "passages",
        "with",
        "BM25",
        "cache",
        "keys",
        "`code`",
        "*em*",
        "a|b",
        "<b>",
        "[link](https://x.example/)",
        "```",
        "~~~",
        "#",
        ">",
        "-",
        "1.",
        "|",
        "**",
        "_",
        "\\\\",
        "&amp;",
        "x.",
    ]
)
_SENTENCE = st.lists(_WORDS, min_size=1, max_size=12).map(lambda words: " ".join(words) + ".")
_LINE = st.lists(_SENTENCE, min_size=1, max_size=3).map(" ".join)
_DOC = st.lists(
    st.one_of(_LINE, st.just(""), st.just("```"), st.just("| a | b |"), st.just("| --- | --- |")), max_size=30
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_DOC.map("\n".join), min_size=1, max_size=3))
@example(["The The The index.\n>."])
def test_an_extractive_appendix_always_round_trips_and_quotes_verbatim(texts: list[str]) -> None:
    # Found by this test: a block quote's marker joined its line to the paragraph before (not verbatim).
    q = "How does the index rank passages with BM25 and cache keys?"
    sources = [_source(n, text) for n, text in enumerate(texts, 1)]
    evidence = [Evidence(s.n, s.title, s.url, s.text) for s in sources]
    synthesis = ExtractiveSynthesizer().synthesize(q, split_sub_questions(q), evidence)
    verify_claims(synthesis, evidence)
    assert not synthesis.unsupported
    render_appendix("APP-X-RESEARCH-V1", q, sources, synthesis)  # raises if a block broke
    assert check_quotes(synthesis, sources) == []


def test_a_sentence_goes_to_the_sub_question_it_answers_best() -> None:
    text = (
        "Readers of the index retry with a bounded wait while a writer holds the index lock.\n\n"
        "The index ranks passages with BM25 scores per query term."
    )
    subs = ["How should the index rank passages?", "How should index readers wait for the writer lock?"]
    synthesis = ExtractiveSynthesizer().synthesize(" ".join(subs), subs, [Evidence(1, "a", "u", text)])
    (_, ranking), (_, readers) = synthesis.groups
    assert [c.text for c in ranking] == ["The index ranks passages with BM25 scores per query term."]
    assert [c.text for c in readers] == [
        "Readers of the index retry with a bounded wait while a writer holds the index lock."
    ]
