"""The bundled sample UDM keeps its promises: parses, links resolve, IDs unique, tasks form a DAG."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter import front_matter_plugin

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "udm"
FILES = [
    "00-index.md",
    "01-introduction.md",
    "02-system-architecture.md",
    "04-modes.md",
    "05-roadmap.md",
    "06-config.md",
    "appendices/00-appendix-index.md",
    "appendices/APP-NODEJS-FS-RESEARCH-V1.md",
    "appendices/APP-DUCKDB-FTS-RESEARCH-V1.md",
]
TASK_ID = re.compile(r"^TASK-(P\d+)-(M\d+\.\d+)-T\d{3}$")


def github_slug(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.replace("`", "").strip().lower()).replace(" ", "-")


@dataclass
class Parsed:
    """What the checks need from one file."""

    headings: list[tuple[int, str]] = field(default_factory=list)
    anchors: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    blocks: list[tuple[str, str]] = field(default_factory=list)
    front_matter: str | None = None


def parse(text: str) -> Parsed:
    """Headings, anchors, links and fenced blocks of one Markdown file."""
    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    tokens = md.parse(text)
    out = Parsed()
    seen: Counter[str] = Counter()
    for i, tok in enumerate(tokens):
        if tok.type == "front_matter":
            out.front_matter = tok.content
        elif tok.type == "heading_open":
            title = tokens[i + 1].content
            out.headings.append((int(tok.tag[1]), title))
            slug = github_slug(title)
            out.anchors.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
        elif tok.type == "fence":
            out.blocks.append((tok.info.strip(), tok.content))
        elif tok.type == "inline":
            out.links += [c.attrs["href"] for c in tok.children or [] if c.type == "link_open"]  # type: ignore[misc]
    return out


@pytest.fixture(scope="module")
def sample() -> dict[str, Parsed]:
    """Every file of the sample, parsed."""
    return {rel: parse((SAMPLE / rel).read_text(encoding="utf-8")) for rel in FILES}


def data_blocks(sample: dict[str, Parsed], lang: str) -> list[tuple[str, Any]]:
    """(file, parsed data) of every block in this language."""
    loader = yaml.safe_load if lang == "yaml" else json.loads
    # The language is the info string's first word (`yaml udm` marks a data block).
    return [
        (rel, loader(text))
        for rel, p in sample.items()
        for info, text in p.blocks
        if info.split()[:1] == [lang]
    ]


def test_files_exactly(sample: dict[str, Parsed]) -> None:
    on_disk = sorted(p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*") if p.is_file())
    assert on_disk == sorted(FILES)
    size = sum((SAMPLE / f).stat().st_size for f in FILES)
    assert 40_000 <= size <= 80_000
    assert sample["01-introduction.md"].front_matter is not None
    assert {"title", "version"} <= set(yaml.safe_load(sample["01-introduction.md"].front_matter))


def test_every_block_parses(sample: dict[str, Parsed]) -> None:
    assert len(data_blocks(sample, "yaml")) > 60
    assert len(data_blocks(sample, "json")) >= 8


def test_links_and_anchors_resolve(sample: dict[str, Parsed]) -> None:
    broken = []
    for rel, p in sample.items():
        for href in p.links:
            assert not href.startswith(("http:", "https:")), f"{rel}: external link {href}"
            path, _, frag = href.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
            if target not in sample or (frag and frag not in sample[target].anchors):
                broken.append(f"{rel}: {href}")
    assert not broken
    # The index reaches every other file.
    index_targets = {os.path.normpath(h.partition("#")[0]) for h in sample["00-index.md"].links}
    assert set(FILES) - {"00-index.md"} <= index_targets | {"appendices/00-appendix-index.md"}


def test_no_skipped_heading_levels(sample: dict[str, Parsed]) -> None:
    for rel, p in sample.items():
        levels = [lvl for lvl, _ in p.headings]
        assert levels[0] == 1, rel
        assert all(b <= a + 1 for a, b in itertools.pairwise(levels)), rel


def test_ids_defined_once_and_references_resolve(sample: dict[str, Parsed]) -> None:
    defined: Counter[str] = Counter()
    for _rel, data in data_blocks(sample, "yaml"):
        if isinstance(data, dict):
            for key in ("id", "api_id"):
                if key in data:
                    defined[data[key]] += 1
    text = "\n".join((SAMPLE / f).read_text(encoding="utf-8") for f in FILES)
    defined.update(re.findall(r"^-   \*\*ID:\*\* `(COMP-\d{3})`", text, re.M))
    assert [i for i, n in defined.items() if n > 1] == []
    assert {f"COMP-00{n}" for n in range(1, 7)} <= set(defined)
    pattern = r"\b(?:COMP-\d+|TASK-P\d+-M\d+\.\d+-T\d+|ROO-MODE-[A-Z-]*[A-Z]|APP-[A-Z0-9-]+-RESEARCH-V\d+|API-COMP-\d+-v\d+)"
    undefined = sorted(set(re.findall(pattern, text)) - set(defined))
    assert undefined == []


def test_tasks_form_a_dag(sample: dict[str, Parsed]) -> None:
    tasks = {
        d["id"]: d
        for _, d in data_blocks(sample, "yaml")
        if isinstance(d, dict) and TASK_ID.match(d.get("id", ""))
    }
    modes = {
        d["id"]
        for _, d in data_blocks(sample, "yaml")
        if isinstance(d, dict) and d.get("id", "").startswith("ROO-MODE-")
    }
    assert len(tasks) >= 45
    assert len(modes) >= 6
    headings = [t.split(":")[0] for lvl, t in sample["05-roadmap.md"].headings if lvl == 4]
    assert headings == list(tasks)
    graph: nx.DiGraph[str] = nx.DiGraph()
    for tid, task in tasks.items():
        assert set(task) == {"id", "title", "status", "phase", "milestone", "mode", "depends_on"}
        match = TASK_ID.match(tid)
        assert match is not None and match.groups() == (task["phase"], task["milestone"])
        assert task["status"] in {"todo", "in_progress", "done", "blocked"}
        assert task["mode"] in modes
        graph.add_node(tid)
        for dep in task["depends_on"]:
            assert dep in tasks, f"{tid} depends on unknown {dep}"
            graph.add_edge(dep, tid)
        if task["status"] in {"done", "in_progress"}:
            assert all(tasks[d]["status"] == "done" for d in task["depends_on"]), tid
    assert nx.is_directed_acyclic_graph(graph)
    assert sum(1 for n in graph if graph.in_degree(n) == 0) >= 3
    assert max(d for _, d in graph.in_degree()) >= 2
    assert nx.dag_longest_path_length(graph) >= 6


def test_modes_use_defined_tools(sample: dict[str, Parsed]) -> None:
    tools = {d["tool_id"] for _, d in data_blocks(sample, "json")}
    assert len(tools) >= 4
    for _, d in data_blocks(sample, "yaml"):
        if isinstance(d, dict) and d.get("id", "").startswith("ROO-MODE-"):
            assert {"id", "name", "model", "purpose", "tools", "inputs"} <= set(d)
            assert set(d["tools"]) <= tools, d["id"]


def test_config_and_appendices(sample: dict[str, Parsed]) -> None:
    config = (SAMPLE / "06-config.md").read_text(encoding="utf-8")
    assert config.count("timeout: 10\n") == 1
    keys = {k for _, d in data_blocks({"06-config.md": sample["06-config.md"]}, "yaml") for k in d}
    assert {"mcp_servers", "allowed_dirs", "api_endpoints"} <= keys
    for name in ("APP-NODEJS-FS-RESEARCH-V1", "APP-DUCKDB-FTS-RESEARCH-V1"):
        rel = f"appendices/{name}.md"
        sources = next(d["sources"] for _, d in data_blocks({rel: sample[rel]}, "yaml") if "sources" in d)
        text = (SAMPLE / rel).read_text(encoding="utf-8")
        for src in sources:
            assert f"[{src['n']}]" in text
            assert re.match(r"https://([a-z0-9-]+\.)*example\.(org|com)/", src["url"])
            assert src["sha256"] is None or re.fullmatch(r"[0-9a-f]{64}", src["sha256"])
