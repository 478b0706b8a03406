"""A seeded generator of a realistic UDM corpus (default about 2,000 files / 100 MB / 60k tasks).

Files mix the styles people write by hand: ATX and setext headings, front matter, ``` and ~~~
fences, nested lists, tables, block quotes, HTML comments and <details> blocks, component field
lists (`- **ID:** `COMP-0001``), YAML task blocks whose `depends_on` always point at earlier tasks
(so the dependency graph is a DAG), and cross-references between files by ID and by link.

`ensure_corpus()` writes it once under benchmarks/.corpus/ and reuses it while the parameters match.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["CorpusInfo", "CorpusSpec", "ensure_corpus", "generate"]

CORPUS_DIR = Path(__file__).resolve().parent / ".corpus"

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "ta",
    "ve",
    "zo",
    "pa",
    "di",
    "fe",
    "gu",
    "hi",
    "jo",
    "lu",
    "mo",
    "na",
    "pe",
    "qui",
    "ro",
    "sa",
    "te",
    "vi",
    "wo",
    "xa",
    "yu",
    "ze",
    "bri",
    "cla",
    "dro",
]
_COMMON = [
    "the",
    "index",
    "query",
    "section",
    "manual",
    "task",
    "mode",
    "tool",
    "config",
    "value",
    "file",
    "line",
    "heading",
    "block",
    "table",
    "list",
    "service",
    "gateway",
    "request",
    "response",
    "cache",
    "token",
    "search",
    "result",
    "answer",
    "source",
    "passage",
    "crawl",
    "schedule",
    "deploy",
    "release",
    "review",
    "approve",
    "patch",
    "commit",
    "rollback",
    "journal",
    "lock",
    "retry",
    "timeout",
    "backoff",
    "latency",
    "throughput",
    "schema",
    "field",
    "record",
    "owner",
    "status",
    "milestone",
    "phase",
    "dependency",
    "graph",
    "cycle",
    "anchor",
    "link",
    "browser",
    "screenshot",
    "check",
    "verify",
    "claim",
    "citation",
    "appendix",
    "research",
    "library",
    "version",
    "upgrade",
    "migrate",
    "database",
    "parquet",
    "duckdb",
    "python",
    "prefect",
    "worker",
    "pool",
    "queue",
    "event",
    "stream",
    "metric",
    "alert",
    "incident",
    "runbook",
]


@dataclass(frozen=True)
class CorpusSpec:
    """Parameters of one corpus."""

    seed: int = 20261122
    files: int = 2000
    target_mb: float = 100.0
    tasks: int = 60000

    def key(self) -> str:
        """Folder name of this corpus."""
        return f"udm-v2-s{self.seed}-f{self.files}-mb{self.target_mb:g}-t{self.tasks}"


@dataclass
class CorpusInfo:
    """What was generated: root folder, sizes, and sample IDs for benchmarks."""

    root: str
    files: int
    bytes: int
    tasks: int
    components: int
    sample_ids: list[str]
    sample_words: list[str]


def _vocabulary(rng: random.Random) -> list[str]:
    words = set(_COMMON)
    while len(words) < 3000:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class _Writer:
    def __init__(self, rng: random.Random, vocab: list[str]) -> None:
        self.rng = rng
        self.vocab = vocab
        # Zipf-like weights: a few words are common, most are rare (as in real text).
        self.cum = list(itertools.accumulate(1.0 / (i + 1) ** 0.9 for i in range(len(vocab))))

    def words(self, n: int) -> str:
        return " ".join(self.rng.choices(self.vocab, cum_weights=self.cum, k=n))

    def sentence(self) -> str:
        text = self.words(self.rng.randint(6, 18))
        return text[0].upper() + text[1:] + "."

    def paragraph(self, refs: list[str]) -> str:
        parts = [self.sentence() for _ in range(self.rng.randint(2, 6))]
        if refs and self.rng.random() < 0.6:
            k = self.rng.randrange(len(parts))
            parts[k] = parts[k][:-1] + f" (see `{self.rng.choice(refs)}`)."
        lines: list[str] = []
        line = ""
        for word in " ".join(parts).split(" "):
            if len(line) + len(word) > 88:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
        return "\n".join(lines) + "\n"


def _slug(title: str) -> str:
    # GitHub-style, as udm.markdown.document.slugify (kept local so the generator stands alone).
    return "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_").replace(" ", "-")


def _heading(level: int, title: str, setext: bool) -> str:
    if setext and level <= 2:
        return f"{title}\n{('=' if level == 1 else '-') * max(3, len(title))}\n"
    return f"{'#' * level} {title}\n"


def generate(spec: CorpusSpec, root: Path) -> CorpusInfo:
    """Write the corpus under `root` (emptied first)."""
    rng = random.Random(spec.seed)
    vocab = _vocabulary(rng)
    w = _Writer(rng, vocab)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    per_file_tasks = max(1, spec.tasks // spec.files)
    target_bytes = int(spec.target_mb * 1_000_000 / spec.files)
    all_tasks: list[str] = []
    components: list[str] = []
    files: list[str] = []
    anchors: dict[str, list[str]] = {}
    total = 0
    for k in range(spec.files):
        area = f"area-{k // 100:02d}"
        rel = f"{area}/doc-{k:04d}.md"
        files.append(rel)
        setext = rng.random() < 0.25
        tilde = rng.random() < 0.3
        fence = "~~~" if tilde else "```"
        out: list[str] = []
        if rng.random() < 0.3:
            out.append(
                f"---\ntitle: Document {k}\nowner: team-{k % 17}\ntags: [{w.words(1)}, {w.words(1)}]\n---\n\n"
            )
        title = f"Document {k}: {w.words(3).title()}"
        out.append(_heading(1, title, setext) + "\n")
        out.append(w.paragraph(all_tasks[-50:]) + "\n")
        if rng.random() < 0.2:
            out.append(f"<!-- generated section {k}; reviewers: {w.words(3)} -->\n\n")
        my_anchors: list[str] = []
        phase, milestone = k // 50, k % 50
        # Components with field lists.
        for c in range(rng.randint(1, 3)):
            comp = f"COMP-{len(components) + 1:05d}"
            components.append(comp)
            out.append(_heading(2, f"{k}.{c + 1} Component: {w.words(2).title()}", setext) + "\n")
            out.append(f"-   **ID:** `{comp}`\n-   **Purpose:** {w.sentence()}\n")
            out.append(f"-   **Key Responsibilities:**\n    -   {w.sentence()}\n    -   {w.sentence()}\n")
            if components[:-1]:
                out.append(f"-   **Dependencies:** `{rng.choice(components[:-1])}`\n")
            out.append("\n")
        out.append(_heading(2, f"Milestone M{phase}.{milestone} tasks", setext) + "\n")
        for t in range(per_file_tasks):
            tid = f"TASK-P{phase}-M{phase}.{milestone}-T{t + 1:03d}"
            deps = rng.sample(all_tasks[-400:], k=min(len(all_tasks[-400:]), rng.choice([0, 1, 1, 2, 3])))
            out.append(f"### {tid}: {w.words(4).capitalize()}\n\n")
            out.append(w.paragraph(components[-20:] + all_tasks[-20:]) + "\n")
            dep_text = "[]" if not deps else "\n" + "".join(f"  - {d}\n" for d in deps).rstrip("\n")
            out.append(
                f'{fence}yaml\nid: {tid}\ntitle: "{w.words(4)}"\nstatus: {rng.choice(["todo", "done", "in_progress", "blocked"])}\n'
                f'phase: P{phase}\nmilestone: "M{phase}.{milestone}"\nmode: ROO-MODE-{rng.choice(["BUILD", "RESEARCH", "QA"])}\n'
                f"depends_on: {dep_text}\n{fence}\n\n"
            )
            all_tasks.append(tid)
        # Filler sections in varied styles until the file reaches its size.
        body_len = sum(len(x) for x in out)
        n = 0
        while body_len < target_bytes:
            n += 1
            heading = f"{k}.{n} {w.words(3).title()}"
            level = rng.choice([2, 2, 3, 3, 4])
            chunk = [
                _heading(level, heading, setext) + "\n",
                w.paragraph(components[-30:] + all_tasks[-30:]) + "\n",
            ]
            r = rng.random()
            if r < 0.2:
                chunk.append("| Key | Value | Note |\n| --- | --- | --- |\n")
                chunk.extend(
                    f"| {w.words(1)} | {rng.randint(1, 999)} | {w.words(4)} |\n"
                    for _ in range(rng.randint(3, 10))
                )
                chunk.append("\n")
            elif r < 0.4:
                for _ in range(rng.randint(3, 8)):
                    chunk.append(f"- {w.sentence()}\n")
                    if rng.random() < 0.3:
                        chunk.append(f"  - {w.sentence()}\n")
                chunk.append("\n")
            elif r < 0.5:
                chunk.append(f"> {w.sentence()}\n> {w.sentence()}\n\n")
            elif r < 0.6:
                chunk.append(
                    f"{fence}python\n# {w.words(3)}\ndef {w.words(1)}():\n    return {rng.randint(0, 99)}\n{fence}\n\n"
                )
            elif r < 0.65:
                chunk.append(
                    f"<details>\n<summary>{w.words(2)}</summary>\n\n{w.sentence()}\n\n</details>\n\n"
                )
            elif r < 0.8 and files[:-1]:
                target = rng.choice(files[:-1])
                anchor = rng.choice(anchors.get(target) or [""])
                href = f"../{target}{'#' + anchor if anchor else ''}"
                form = rng.random()
                # Every form of link real manuals use (the index must find each one).
                if form < 0.5:
                    chunk.append(f"See [{w.words(2)}]({href}) for details.\n\n")
                elif form < 0.7:
                    chunk.append(f"See the [{w.words(2)}][ref-{k}-{n}] notes.\n\n[ref-{k}-{n}]: {href}\n\n")
                elif form < 0.8:
                    chunk.append(f"Read more at <https://example.org/{w.words(1)}/{n}>.\n\n")
                elif form < 0.9:
                    chunk.append(f"![{w.words(2)}](img/{w.words(1)}.png)\n\n")
                else:
                    chunk.append(f"See [{w.words(2)}\n{w.words(2)}]({href}) for details.\n\n")
            if my_anchors and rng.random() < 0.2:
                chunk.append(f"Back to [the top](#{my_anchors[0]}).\n\n")
            text = "".join(chunk)
            out.append(text)
            body_len += len(text)
            if level == 2 and len(my_anchors) < 6:
                my_anchors.append(_slug(heading))
        anchors[rel] = my_anchors
        data = "".join(out)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data, encoding="utf-8")
        total += len(data.encode("utf-8"))
    sample_rng = random.Random(spec.seed + 1)
    info = CorpusInfo(
        root=str(root),
        files=len(files),
        bytes=total,
        tasks=len(all_tasks),
        components=len(components),
        sample_ids=sample_rng.sample(all_tasks, min(500, len(all_tasks)))
        + sample_rng.sample(components, min(100, len(components))),
        sample_words=_COMMON,
    )
    (root.parent / f"{root.name}.json").write_text(json.dumps(asdict(info)), encoding="utf-8")
    return info


def ensure_corpus(spec: CorpusSpec | None = None) -> CorpusInfo:
    """The corpus for `spec`, generated on first use and reused afterwards."""
    spec = spec or CorpusSpec()
    root = CORPUS_DIR / spec.key()
    meta = CORPUS_DIR / f"{spec.key()}.json"
    if root.is_dir() and meta.exists():
        return CorpusInfo(**json.loads(meta.read_text(encoding="utf-8")))
    return generate(spec, root)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    mb = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
    tasks = int(sys.argv[3]) if len(sys.argv) > 3 else 60000
    info = ensure_corpus(CorpusSpec(files=files, target_mb=mb, tasks=tasks))
    print(
        f"{info.root}: {info.files} files, {info.bytes / 1e6:.1f} MB, {info.tasks} tasks, {info.components} components"
    )
