"""The research flow's pure parts: URL canonicalisation, appendix ID and version, ranking, and the
appendix Markdown (extractive summary with numbered citations, sources table, `sources` YAML block).
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

from udm.errors import InvalidURLError
from udm.netguard import split_url
from udm.passages import Passage, rank_passages, split_passages, terms

__all__ = [
    "Finding",
    "Latest",
    "Source",
    "appendix_id",
    "canonical_url",
    "index_link_operation",
    "latest_fingerprint",
    "next_version",
    "rank_findings",
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


@dataclass(frozen=True)
class Finding:
    """A ranked passage of one source."""

    source: int
    passage: Passage


def rank_findings(question: str, sources: list[Source], limit: int = 8, per_source: int = 2) -> list[Finding]:
    """The best passages for the question across all sources (one BM25 corpus, so scores compare
    across sources), at most `per_source` from each."""
    query = terms(question)
    owners: list[int] = []
    corpus: list[Passage] = []
    for src in sources:
        if not src.ok:
            continue
        for p in split_passages(src.text):
            owners.append(src.n)
            corpus.append(Passage(len(corpus), p.text))
    taken: dict[int, int] = {}
    out: list[Finding] = []
    for p in rank_passages(corpus, query):
        if p.score <= 0 or len(out) >= limit:
            break
        n = owners[p.index]
        if taken.get(n, 0) >= per_source:
            continue
        taken[n] = taken.get(n, 0) + 1
        out.append(Finding(n, p))
    return out


def _sentences(text: str, count: int = 2) -> str:
    no_code = re.sub(r"(?ms)^\s*(`{3,}|~{3,}).*?^\s*\1\s*$", "", text)
    # A passage's heading line (or bold title line) is not a sentence of its findings.
    no_code = re.sub(r"(?m)^\s*(#{1,6}\s+.*|\*\*[^*]+\*\*\s*)$", "", no_code)
    flat = re.sub(r"\s+", " ", re.sub(r"^#+\s*.*$", "", quotable(no_code), flags=re.M)).strip()
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(])", flat)
    out = " ".join(parts[:count]).strip()
    return out[:600].rstrip() + ("…" if len(out) > 600 else "")


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\S*\s*$")
_CITATION = re.compile(r"\s?(\[\d{1,3}\])+(?!\()")
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")


def quotable(text: str) -> str:
    """Source text made safe to quote inside the manual: headings become bold lines (a quoted heading
    must not define the IDs it names), fenced blocks lose their language (a quoted YAML block must
    not define IDs either), and relative links become their text (they pointed elsewhere)."""
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        fence = _FENCE.match(line)
        if fence:
            out.append(fence.group(1) + fence.group(2) + ("" if in_fence else "text"))
            in_fence = not in_fence
        elif in_fence:
            out.append(line)
        elif heading := re.match(r"^\s*#{1,6}\s+(.*?)\s*#*\s*$", line):
            out.append(f"**{heading.group(1)}**")
        else:
            # The source's own numbered citations would read as this appendix's: drop them.
            out.append(_CITATION.sub("", _LINK.sub(_keep_web_link, line)))
    if in_fence:
        out.append("```")
    return "\n".join(out)


def _keep_web_link(m: re.Match[str]) -> str:
    return m.group(0) if re.match(r"^https?://", m.group(3)) and not m.group(1) else m.group(2)


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


def render_appendix(
    app_id: str,
    question: str,
    sources: list[Source],
    findings: list[Finding],
    *,
    title: str | None = None,
    run_id: str | None = None,
    created: datetime | None = None,
    fingerprint: str | None = None,
) -> str:
    """The research appendix as Markdown (see the module docstring)."""
    created = created or datetime.now(UTC)
    heading = title or question.rstrip("?").strip()
    lines = [f"# {app_id}: {heading_safe(heading)}", "", "```yaml"]
    lines += [
        f"appendix: {app_id}",
        f"title: {_yaml_str(heading)}",
        f"question: {_yaml_str(question)}",
        "mode: ROO-MODE-RESEARCH",
        "status: draft",
        f'created: "{created.date().isoformat()}"',
    ]
    if run_id:
        lines.append(f'flow_run: "{run_id}"')
    if fingerprint:
        lines.append(f'fingerprint: "{fingerprint}"')
        # With the fingerprint, an unchanged re-run reports this count without ranking again.
        lines.append(f"findings: {len(findings)}")
    lines += ["```", "", "## 1. Summary", ""]
    ok_sources = [s for s in sources if s.ok]
    if findings:
        lead = findings[: min(4, len(findings))]
        lines.append(" ".join(f"{_sentences(f.passage.text, 1)} [{f.source}]" for f in lead))
        lines.append("")
        lines.append(
            f"This summary is extractive: each sentence is quoted from the source it cites. "
            f"{len(ok_sources)} of {len(sources)} sources gave usable text."
        )
    else:
        lines.append(
            f"No source gave text matching the question ({len(ok_sources)} of {len(sources)} sources usable)."
        )
    lines += ["", "## 2. Findings", ""]
    by_number = {s.n: s for s in sources}
    for i, f in enumerate(findings, 1):
        src = by_number[f.source]
        lines += [f"### 2.{i} {heading_safe(_cell(src.title or src.url))} [{f.source}]", ""]
        excerpt = quotable(f.passage.text.strip())
        if len(excerpt) > 1200:
            excerpt = excerpt[:1200].rsplit(" ", 1)[0] + " …"
        lines += ["> " + line if line.strip() else ">" for line in excerpt.splitlines()]
        lines.append("")
    if not findings:
        lines += ["No passage matched the question.", ""]
    lines += [
        "## 3. Sources",
        "",
        "| n | Title | URL | Fetched at | Content hash | Status |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in sources:
        short = f"`{s.content_hash.removeprefix('sha256:')[:12]}`" if s.content_hash else ""
        status = "ok" if s.ok else (s.status if not s.reason else f"{s.status}: {_cell(s.reason)[:120]}")
        lines.append(
            f"| {s.n} | {_cell(s.title or '-')} | {s.url} | {s.fetched_at or '-'} | {short} | {status} |"
        )
    lines += ["", "```yaml", "sources:"]
    for s in sources:
        lines += [
            f"  - n: {s.n}",
            f"    title: {_yaml_str(s.title or s.url)}",
            f"    url: {_yaml_str(s.url)}",
            f"    fetched_at: {_yaml_str(s.fetched_at)}",
            f"    sha256: {_yaml_str(s.content_hash.removeprefix('sha256:'))}",
            f"    status: {_yaml_str('ok' if s.ok else s.status)}",
        ]
    lines += ["```", ""]
    return "\n".join(lines)


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
