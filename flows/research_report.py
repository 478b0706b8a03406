"""The research flow's pure parts: URL canonicalisation, appendix ID and version, and the appendix
Markdown (answer, findings by sub-question with a citation on every sentence, unsupported claims,
sources table, `sources` YAML block), checked to parse back to the blocks it was built from.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlencode, urlunsplit

from udm.errors import FlowError, InvalidURLError
from udm.net import split_url
from udm.research import Claim, Synthesis, comparable, terms

__all__ = [
    "AppendixCheckError",
    "Latest",
    "Source",
    "appendix_id",
    "canonical_url",
    "check_markdown",
    "check_quotes",
    "index_link_operation",
    "latest_fingerprint",
    "next_version",
    "render_appendix",
    "research_fingerprint",
    "topic_of",
]

# Tracking parameters that never change what a page says.
_TRACKING = re.compile(r"^(utm_[a-z]+|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|ref_src|_hsenc|_hsmi)$", re.I)
_GENERIC = frozenset(
    [
        "does",
        "should",
        "use",
        "using",
        "used",
        "best",
        "way",
        "ways",
        "work",
        "works",
        "make",
        "makes",
        "get",
        "getting",
        "need",
        "needs",
        "versus",
        "vs",
        "compare",
        "compared",
        "comparison",
        "about",
        "into",
        "than",
        "more",
        "most",
        "much",
        "many",
        "any",
        "some",
        "there",
        "their",
    ]
)


def canonical_url(url: str) -> str:
    """A URL in one spelling: lower-case scheme/host, no default port, fragment or tracking parameters."""
    try:
        parts = split_url(url.strip(), schemes=None)
    except InvalidURLError:
        return url.strip()  # a malformed URL keeps its spelling; fetching it names the problem
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    if not scheme or not host:
        return url.strip()
    port = parts.port  # checked by split_url
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    if ":" in host and not host.startswith("["):
        netloc = f"[{host}]" + (
            f":{port}" if port and (scheme, port) not in (("http", 80), ("https", 443)) else ""
        )
    query = urlencode(
        sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING.match(k))
    )
    path = re.sub(r"/{2,}", "/", parts.path) or "/"
    return urlunsplit((scheme, netloc, path, query, ""))


def topic_of(question: str, words: int = 3) -> str:
    """An appendix topic from a question: its first significant words, upper-case, dash-joined."""
    picked: list[str] = []
    for t in terms(question):
        t = re.sub(r"[^A-Za-z0-9]", "", t).upper()
        if len(t) < 2 or t.lower() in _GENERIC or t in picked:
            continue
        picked.append(t)
        if len(picked) == words:
            break
    return "-".join(picked) or "GENERAL"


def appendix_id(topic: str, version: int) -> str:
    """`APP-<TOPIC>-RESEARCH-V<n>`."""
    clean = re.sub(r"[^A-Z0-9]+", "-", topic.upper()).strip("-") or "GENERAL"
    return f"APP-{clean}-RESEARCH-V{version}"


def next_version(appendices_dir: Path, topic: str) -> int:
    """The next free version number of a topic's research appendix in `appendices_dir`."""
    stem = appendix_id(topic, 0)[: -len("V0")]
    pattern = re.compile(re.escape(stem) + r"V(\d+)\.md$")
    found = [
        int(m.group(1))
        for p in (appendices_dir.iterdir() if appendices_dir.is_dir() else [])
        if (m := pattern.match(p.name))
    ]
    return max(found, default=0) + 1


@dataclass
class Source:
    """One source the flow tried: where it came from and what fetching it gave."""

    n: int
    url: str
    kind: str  # "url" | "file" | "context7"
    origin: str  # "seed", "search: <query>", "file", "library: <name>"
    status: str = "PENDING"
    title: str = ""
    fetched_at: str = ""
    content_hash: str = ""
    reason: str = ""
    text: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the source gave citable text."""
        return self.status in ("SUCCESS", "PARTIAL_SUCCESS_TRUNCATED") and bool(self.text.strip())


_ID_LIKE = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Za-z0-9.]+)+\b")


def heading_safe(text: str) -> str:
    """Heading text that defines no ID: a heading defines every ID it names, so ID-like words
    (COMP-004, APP-X-RESEARCH-V1) of a source's title are lower-cased there."""
    return _ID_LIKE.sub(lambda m: m.group(0).lower(), text)


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


def _yaml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


_FINGERPRINT_LINE = re.compile(r'^fingerprint: "?([0-9a-f]{16,64})"?\s*$', re.M)
_FINDINGS_LINE = re.compile(r"^findings: (\d{1,4})\s*$", re.M)


def research_fingerprint(question: str, libraries: list[str], sources: list[Source]) -> str:
    """What a research appendix is made of: the question, libraries and each source's URL, status and content hash."""
    parts = [question.strip(), ",".join(sorted(libraries))]
    parts += [f"{s.kind}|{s.url}|{'ok' if s.ok else s.status}|{s.content_hash}" for s in sources]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


class Latest(NamedTuple):
    """The newest version of a topic's appendix: its ID, fingerprint and number of findings."""

    app_id: str
    fingerprint: str
    findings: int | None  # None: an appendix written before the count was recorded


def latest_fingerprint(appendices_dir: Path, topic: str) -> Latest | None:
    """The newest existing version of a topic's appendix and what its header records, or None."""
    version = next_version(appendices_dir, topic) - 1
    if version < 1:
        return None
    app_id = appendix_id(topic, version)
    try:
        text = (appendices_dir / f"{app_id}.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = _FINGERPRINT_LINE.search(text[:4000])
    if not match:
        return None
    count = _FINDINGS_LINE.search(text[:4000])
    return Latest(app_id, match.group(1), int(count.group(1)) if count else None)


class AppendixCheckError(FlowError):
    """The appendix's Markdown does not parse back to the blocks it was built from."""


@dataclass(frozen=True)
class _Block:
    kind: str  # the parser's top-level node name: heading, paragraph, fence, bullet_list, table
    text: str
    size: int = 0  # list items or table body rows


def check_markdown(markdown: str, expected: list[tuple[str, int]]) -> None:
    """Raise AppendixCheckError unless `markdown` parses to exactly the `expected` top-level blocks
    (node name, and the item count of a list or body-row count of a table)."""
    from udm.markdown import markdown_tree

    # The index's own parse (CommonMark + GFM), which survives the parser's known panics on text
    # quoted from the web (a bare URL running into non-ASCII characters).
    tree = markdown_tree(markdown)
    got: list[tuple[str, int]] = []
    for node in tree.children:
        size = 0
        if node.name == "bullet_list":
            size = len(node.children)
        elif node.name == "table":
            size = sum(len(part.children) for part in node.children if part.name == "tbody")
        got.append((node.name, size))
    if got == expected:
        return
    at = next(
        (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
        min(len(got), len(expected)),
    )
    want = expected[at] if at < len(expected) else "nothing"
    found = got[at] if at < len(got) else "nothing"
    raise AppendixCheckError(
        f"the appendix's Markdown does not parse back to the blocks it was built from: block {at + 1} "
        f"should be {want} but parses as {found} ({len(got)} blocks parsed, {len(expected)} built)"
    )


def _cite(claim: Claim) -> str:
    return " ".join(f"[{n}]" for n in claim.cites)


def _quoted(claim: Claim) -> str:
    # Extractive claims are verbatim quotes and read as such; an LLM's sentences are its own words.
    return f"“{claim.text}” {_cite(claim)}" if claim.quote == claim.text else f"{claim.text} {_cite(claim)}"


def _header(
    app_id: str,
    heading: str,
    question: str,
    synthesis: Synthesis,
    created: datetime,
    run_id: str | None,
    fingerprint: str | None,
) -> list[_Block]:
    """The appendix's heading and its YAML header block."""
    header = [
        f"appendix: {app_id}",
        f"title: {_yaml_str(heading)}",
        f"question: {_yaml_str(question)}",
        "mode: ROO-MODE-RESEARCH",
        "status: draft",
        f'created: "{created.date().isoformat()}"',
        f"synthesizer: {_yaml_str(synthesis.synthesizer)}",
    ]
    if run_id:
        header.append(f'flow_run: "{run_id}"')
    if fingerprint:
        header.append(f'fingerprint: "{fingerprint}"')
        # With the fingerprint, an unchanged re-run reports this count without synthesising again.
        header.append(f"findings: {len(synthesis.claims())}")
    return [
        _Block("heading", f"# {app_id}: {heading_safe(heading)}"),
        _Block("fence", "```yaml\n" + "\n".join(header) + "\n```"),
    ]


def _answer(synthesis: Synthesis, sources: list[Source]) -> list[_Block]:
    """Section 1: the answer and how it was written."""
    ok_sources = [s for s in sources if s.ok]
    blocks = [_Block("heading", "## 1. Answer")]
    if synthesis.answer:
        blocks.append(_Block("paragraph", " ".join(_quoted(c) for c in synthesis.answer)))
    else:
        blocks.append(
            _Block(
                "paragraph",
                f"No source gave text answering the question ({len(ok_sources)} of {len(sources)} sources usable).",
            )
        )
    how = (
        "The answer and findings are quoted verbatim from the sources they cite."
        if synthesis.synthesizer == "extractive"
        else f"Written by {synthesis.synthesizer} from the sources' text; every citation was checked "
        "against the cited source, and claims no source supports are listed apart."
    )
    notes = "".join(f" {n[0].upper()}{n[1:]}." for n in synthesis.notes)
    blocks.append(
        _Block("paragraph", f"{how} {len(ok_sources)} of {len(sources)} sources gave usable text.{notes}")
    )
    return blocks


def _findings(synthesis: Synthesis) -> list[_Block]:
    """Section 2, the findings by sub-question, and the unsupported claims."""
    blocks = [_Block("heading", "## 2. Findings")]
    for i, (sub, group) in enumerate(synthesis.groups, 1):
        blocks.append(_Block("heading", f"### 2.{i} {heading_safe(_cell(sub))}"))
        if group:
            blocks.append(_Block("bullet_list", "\n".join(f"- {_quoted(c)}" for c in group), len(group)))
        else:
            blocks.append(_Block("paragraph", "No source passage answers this part."))
    if synthesis.unsupported:
        blocks.append(_Block("heading", "## Unsupported claims"))
        blocks.append(
            _Block(
                "paragraph",
                "These sentences of the draft were not published as findings: no cited source supports them.",
            )
        )
        items = [f"- {_cell(c.text)} ({_cell(c.reason) or 'unsupported'})" for c in synthesis.unsupported]
        blocks.append(_Block("bullet_list", "\n".join(items), len(items)))
    return blocks


def _sources(sources: list[Source]) -> list[_Block]:
    """Section 3: the sources table and the `sources` YAML block."""
    rows = [
        "| n | Title | URL | Fetched at | Content hash | Status |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in sources:
        short = f"`{s.content_hash.removeprefix('sha256:')[:12]}`" if s.content_hash else ""
        status = "ok" if s.ok else (s.status if not s.reason else f"{s.status}: {_cell(s.reason)[:120]}")
        rows.append(
            f"| {s.n} | {_cell(s.title or '-')} | {_cell(s.url)} | {s.fetched_at or '-'} | {short} | {status} |"
        )
    yaml_lines = ["```yaml", "sources:"]
    for s in sources:
        yaml_lines += [
            f"  - n: {s.n}",
            f"    title: {_yaml_str(s.title or s.url)}",
            f"    url: {_yaml_str(s.url)}",
            f"    fetched_at: {_yaml_str(s.fetched_at)}",
            f"    sha256: {_yaml_str(s.content_hash.removeprefix('sha256:'))}",
            f"    status: {_yaml_str('ok' if s.ok else s.status)}",
        ]
    return [
        _Block("heading", "## 3. Sources"),
        _Block("table", "\n".join(rows), len(sources)),
        _Block("fence", "\n".join([*yaml_lines, "```"])),
    ]


def render_appendix(
    app_id: str,
    question: str,
    sources: list[Source],
    synthesis: Synthesis,
    *,
    title: str | None = None,
    run_id: str | None = None,
    created: datetime | None = None,
    fingerprint: str | None = None,
) -> str:
    """The research appendix as Markdown: header, answer, findings by sub-question, unsupported
    claims, sources table and `sources` block; checked to parse back to the blocks built (raises
    AppendixCheckError otherwise)."""
    heading = title or question.rstrip("?").strip()
    blocks = [
        *_header(app_id, heading, question, synthesis, created or datetime.now(UTC), run_id, fingerprint),
        *_answer(synthesis, sources),
        *_findings(synthesis),
        *_sources(sources),
    ]
    markdown = "\n\n".join(b.text for b in blocks) + "\n"
    check_markdown(markdown, [(b.kind, b.size) for b in blocks])
    return markdown


def check_quotes(synthesis: Synthesis, sources: list[Source]) -> list[str]:
    """Problems with the published quotes: each must occur in its cited sources' text (whitespace
    normalised). Empty when every quote checks out."""
    texts = {s.n: comparable(s.text) for s in sources if s.ok}
    problems = []
    for claim in synthesis.claims():
        if claim.quote is None:
            continue
        for n in claim.cites:
            if comparable(claim.quote) not in texts.get(n, ""):
                problems.append(f"the quote {claim.quote[:60]!r}… is not in source [{n}]")
    return problems


def index_link_operation(index_text: str, app_id: str, title: str, anchor: str) -> dict[str, Any]:
    """A patch operation adding the appendix to the appendix index: a new table row when the index
    has a table of appendices (after its last row), else a list item appended to its first section."""
    link = f"[{app_id}]({app_id}.md#{anchor})"
    rows = [ln for ln in index_text.splitlines() if ln.startswith("| [APP-")]
    if rows:
        last = rows[-1]
        columns = last.count("|") - 1
        cells = [link, _cell(title)] + ["-"] * max(0, columns - 2)
        return {
            "op": "replace_text",
            "file": "appendices/00-appendix-index.md",
            "old": last,
            "new": last + "\n| " + " | ".join(cells[:columns]) + " |",
            "rationale": f"link {app_id} from the appendix index",
        }
    first_heading = next(
        (ln.lstrip("#").strip() for ln in index_text.splitlines() if ln.startswith("#")), "Appendix Index"
    )
    return {
        "op": "append_to_section",
        "file": "appendices/00-appendix-index.md",
        "section": first_heading,
        "content": f"- {link}: {title}\n",
        "rationale": f"link {app_id} from the appendix index",
    }
