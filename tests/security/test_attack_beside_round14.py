"""Attacker round 14: the Docusaurus folder beside the manual (7a0cf75: `beside_meta`, the resolver's
`_routed_beside`, anchors of a Markdown page beside the manual). The repository is hostile: its
config names the folder, and every file, name and link in it is the attacker's. Each test guards a
contained behaviour (refused, unknown, bounded, or the verdict Docusaurus' own build gives)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import udm.index.resolve as index_resolve
import udm.site.routes as routes_mod
from udm.config import Settings, load_settings
from udm.patch import PatchResult, apply_patch, parse_patch
from udm.site.routes import beside_meta

from ..engine.conftest import page_verdicts, write_tree

REPO = Path(__file__).resolve().parents[2]
CONFIG = "module.exports = {{ presets: [['classic', {{ docs: {{ path: '{}' }} }}]] }};\n"


def _site(tmp: Path, links: list[str], files: dict[str, str], path: str = "../docs") -> Settings:
    """React Native's layout: the manual is website/, the current docs `path` (beside it) at /docs/next."""
    write_tree(
        tmp,
        {
            "website/docusaurus.config.js": CONFIG.format(path),
            "website/versions.json": '["1.0"]',
            "website/versioned_docs/version-1.0/intro.md": "# Intro\n",
            "website/blog/post.md": "# Post\n\n" + "\n".join(f"- [x]({t})" for t in links) + "\n",
            **files,
        },
    )
    (tmp / ".git").mkdir(exist_ok=True)
    (tmp / "docs").mkdir(exist_ok=True)
    return load_settings(cwd=tmp, root=tmp / "website", state_dir=tmp / ".st")


def _verdicts(tmp: Path, links: list[str], files: dict[str, str], **kw: str) -> dict[str, bool | None]:
    return page_verdicts(_site(tmp, links, files, **kw), "blog/post.md")


_CHILD = (
    "import json, sys\nfrom pathlib import Path\nfrom udm.config import load_settings\n"
    "from tests.engine.conftest import page_verdicts\nroot = Path(sys.argv[1])\n"
    "s = load_settings(cwd=root, root=root / 'website', state_dir=root / '.st')\n"
    "print(json.dumps(page_verdicts(s, 'blog/post.md')))\n"
)


def _verdicts_apart(tmp: Path, timeout: float) -> dict[str, Any]:
    """`page_verdicts` in a child process, so a blocking read fails the test instead of hanging it."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(tmp)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the index build did not finish in {timeout} s (blocked)")
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _chain(base: Path, depth: int) -> Path:
    """A folder `depth` levels below `base` (a/a/a/...), made one level at a time."""
    base.mkdir(parents=True, exist_ok=True)
    here = base
    for _ in range(depth):
        here = here / "a"
        here.mkdir()
    return here


def _unchain(base: Path, depth: int) -> None:
    # shutil.rmtree recurses once per level (Python 3.11): take a very deep chain down by hand.
    levels = [base / "/".join(["a"] * k) for k in range(depth, 0, -1)]
    for level in levels:
        for entry in os.listdir(level):
            if entry != "a":
                os.unlink(level / entry)
        os.rmdir(level)


def _validator_site(tmp: Path, files: dict[str, str]) -> Settings:
    write_tree(tmp, files)
    write_tree(
        tmp / "website",
        {
            "docusaurus.config.js": CONFIG.format("../docs"),
            "versions.json": '["1.0"]',
            "versioned_docs/version-1.0/intro.md": "# Intro\n\n## Next\n\nText.\n",
        },
    )
    for sub in ("state", "logs"):
        (tmp / sub).mkdir()
    return load_settings(cwd=tmp, root=tmp / "website")


def _add_link(settings: Settings, content: str) -> PatchResult:
    op = {"op": "append_to_section", "file": "versioned_docs/version-1.0/intro.md", "section": "Next"}
    return apply_patch(
        parse_patch({"description": "t", "operations": [{**op, "content": content}]}), settings
    )


# --- where the folder is ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["../../../../../../../../../../..", "/", "../..", "../../sec", "../docs/../../sec", "~", "/etc"]
)
def test_a_docs_path_out_of_the_repository_is_never_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    asked: list[str] = []
    real = index_resolve.beside_meta

    def spy(root: Path) -> Any:
        inner = real(root)
        return lambda folder: asked.append(folder) or inner(folder)

    monkeypatch.setattr(index_resolve, "beside_meta", spy)
    write_tree(tmp_path, {"sec/secret.md": "---\nid: secret\n---\n# S\n"})
    links = ["/docs/next/secret", "/docs/next/sec/secret", "/docs/next/x"]
    verdicts = _verdicts(tmp_path / "repo", links, {"docs/x.md": "# x\n"}, path=path)
    assert verdicts["/docs/next/secret"] is not True and verdicts["/docs/next/sec/secret"] is not True
    repo = os.path.realpath(tmp_path / "repo")
    for folder in asked:
        assert os.path.realpath(tmp_path / "repo" / "website" / folder).startswith(repo + os.sep)


def test_a_docs_folder_that_is_a_link_out_is_not_read(tmp_path: Path) -> None:
    write_tree(tmp_path, {"elsewhere/secret.md": "---\nid: secret\n---\n# S\n", "repo/website/x.md": "# x\n"})
    (tmp_path / "repo" / "docs").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "repo" / "up").symlink_to(tmp_path, target_is_directory=True)
    read = beside_meta(tmp_path / "repo" / "website")
    # (`../../elsewhere` climbs out of the repository: detect drops such a mount, the test above.)
    assert read("../docs").pages == [] and read("../up/elsewhere").pages == []
    assert _verdicts(tmp_path / "repo", ["/docs/next/secret"], {}) == {"/docs/next/secret": False}


def test_symbolic_links_loops_and_chains_inside_the_folder(tmp_path: Path) -> None:
    write_tree(tmp_path, {"outside/secret.md": "---\nid: secret\n---\n# S\n"})
    docs = tmp_path / "repo" / "docs"
    write_tree(docs, {"real.md": "---\nid: real-id\n---\n# R\n"})
    (docs / "loop").symlink_to(".", target_is_directory=True)
    (docs / "up").symlink_to("..", target_is_directory=True)
    (docs / "root").symlink_to("/", target_is_directory=True)
    (docs / "hop.md").symlink_to(tmp_path / "outside" / "secret.md")
    (docs / "chain.md").symlink_to("hop.md")
    (docs / "self.md").symlink_to("self.md")
    started = time.monotonic()
    links = ["/docs/next/secret", "/docs/next/real-id", "/docs/next/loop/real-id", "/docs/next/chain"]
    verdicts = _verdicts(tmp_path / "repo", links, {})
    assert time.monotonic() - started < 10
    assert verdicts == {
        "/docs/next/secret": False,
        "/docs/next/real-id": True,
        "/docs/next/loop/real-id": False,
        "/docs/next/chain": False,
    }
    listed = [p for p, _ in beside_meta(tmp_path / "repo" / "website")("../docs").pages]
    assert not any(p.startswith(("../docs/loop/", "../docs/up/", "../docs/root/")) for p in listed)
    assert "../docs/hop.md" not in listed and "../docs/chain.md" not in listed


# --- size and shape ---------------------------------------------------------------------------------


def test_a_huge_folder_beside_is_read_in_bounded_time(tmp_path: Path) -> None:
    for d in range(12):
        folder = tmp_path / "docs" / f"d{d:02d}"
        folder.mkdir(parents=True)
        for k in range(1000):
            (folder / f"p{k:04d}.md").write_bytes(b"---\nid: x\n---\n")
    (tmp_path / "manual").mkdir()
    started = time.monotonic()
    pages = beside_meta(tmp_path / "manual")("../docs").pages
    assert len(pages) == routes_mod._BESIDE_PAGES
    assert time.monotonic() - started < 10


def test_a_deep_folder_beside_does_not_crash_the_walk(tmp_path: Path) -> None:
    # Python 3.11's os.walk recurses once per level: 1,100 nested one-letter folders (2,200 characters
    # of path, well under PATH_MAX and the 50,000-name bound) raise RecursionError in the index build.
    bottom = _chain(tmp_path / "repo" / "docs", 1100)
    (bottom / "deep.md").write_text("---\nid: deep\n---\n# D\n")
    try:
        verdicts = _verdicts(
            tmp_path / "repo", ["/docs/next/ok", "/docs/next/nope"], {"docs/ok.md": "# ok\n"}
        )
        assert verdicts["/docs/next/nope"] is not True
    finally:
        _unchain(tmp_path / "repo" / "docs", 1100)


def test_a_deep_tree_of_pages_is_read_in_linear_time(tmp_path: Path) -> None:
    # Each page's real path is resolved component by component (os.path.realpath), so the walk costs
    # depth^2 per page: 5,000 empty pages at depth 800 took 110 s (0.35 s at depth 1), under every
    # stated bound (5,800 names, 5,000 pages). Scaled down here: 800 pages at depth 300 (~3 s).
    # The walk now resolves only files that are links, and goes at most 32 folders deep: 800 pages
    # at depth 30 are read in linear time, and a tree 300 deep stops the walk, which says so.
    bottom = _chain(tmp_path / "docs", 30)
    for k in range(800):
        (bottom / f"p{k:04d}.md").write_bytes(b"")
    (tmp_path / "manual").mkdir()
    started = time.monotonic()
    pages, complete = beside_meta(tmp_path / "manual")("../docs")
    took = time.monotonic() - started
    assert len(pages) == 800 and complete
    assert took < 1.0, f"{took:.1f} s for 800 pages at depth 30"
    _chain(bottom, 270)
    started = time.monotonic()
    pages, complete = beside_meta(tmp_path / "manual")("../docs")
    assert len(pages) == 800 and not complete
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("bound", ["_BESIDE_PAGES", "_BESIDE_NAMES"])
def test_a_page_past_the_walks_bound_is_unknown_not_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: str
) -> None:
    # The walk stops at its bound: a page it never reached may well exist (before 7a0cf75 these links
    # resolved, by the file's path), so its route is unknown, not broken.
    monkeypatch.setattr(routes_mod, bound, 3)
    links = [f"/docs/next/p{k}" for k in range(5)]
    verdicts = _verdicts(tmp_path, links, {f"docs/p{k}.md": "# H\n" for k in range(5)})
    assert verdicts["/docs/next/p4"] is not False, verdicts


# --- files that are not pages ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "zero-device"])
def test_a_special_file_named_md_beside_does_not_block(tmp_path: Path, kind: str) -> None:
    # A named pipe `x.md` opened for reading blocks until a writer comes: the anchors of a page beside
    # the manual are read with a plain open() (udm/index/resolve.py, read_page).
    _site(tmp_path, ["/docs/next/x#a", "/docs/next/ok"], {"docs/ok.md": "# ok\n"})
    if kind == "fifo":
        os.mkfifo(tmp_path / "docs" / "x.md")
    else:
        try:
            os.mknod(tmp_path / "docs" / "x.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        except PermissionError:
            pytest.skip("no permission to make a device")
    verdicts = _verdicts_apart(tmp_path, timeout=5)
    assert verdicts["/docs/next/ok"] is True and verdicts["/docs/next/x#a"] is not True


def test_what_is_no_regular_file_is_no_page(tmp_path: Path) -> None:
    # Docusaurus builds a page of a file it can read: a pipe, a socket, a dangling link or a link loop
    # named `x.md` is none, so a link to its route is broken (as a relative link to it is).
    settings = _site(tmp_path, [f"/docs/next/{n}" for n in ("fifo", "sock", "dangling", "loop", "ok")], {})
    docs = tmp_path / "docs"
    (docs / "ok.md").write_text("# ok\n")
    os.mkfifo(docs / "fifo.md")
    (docs / "dangling.md").symlink_to("nowhere.md")
    (docs / "loop.md").symlink_to("loop.md")
    here = os.getcwd()
    os.chdir(docs)  # a socket's path is limited to 107 bytes
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind("sock.md")
    finally:
        os.chdir(here)
    try:
        verdicts = page_verdicts(settings, "blog/post.md")
    finally:
        sock.close()
    assert verdicts == {
        "/docs/next/fifo": False,
        "/docs/next/sock": False,
        "/docs/next/dangling": False,
        "/docs/next/loop": False,
        "/docs/next/ok": True,
    }


def test_a_name_that_is_not_utf8_beside_is_left_out(tmp_path: Path) -> None:
    # The index leaves out a name that is not UTF-8 (DuckDB stores UTF-8 only); the walk beside keeps
    # it (a surrogate escape), and writing the link's target file fails the whole index build.
    settings = _site(tmp_path, ["/docs/next/badname", "/docs/next/ok"], {"docs/ok.md": "# ok\n"})
    (tmp_path / "docs" / os.fsdecode(b"bad\xffname.md")).write_text("---\nid: badname\n---\n# B\n")
    verdicts = page_verdicts(settings, "blog/post.md")
    assert verdicts["/docs/next/ok"] is True and verdicts["/docs/next/badname"] is not True


def test_a_page_that_is_not_utf8_is_read_with_replacements(tmp_path: Path) -> None:
    settings = _site(tmp_path, ["/docs/next/latin", "/docs/next/latin#nope", "/docs/next/bin"], {})
    (tmp_path / "docs" / "latin.md").write_bytes(
        b"---\nid: latin\ntitle: caf\xe9\n---\n# caf\xe9\n\n## \xff\xfe\n"
    )
    (tmp_path / "docs" / "bin.md").write_bytes(bytes(range(256)) * 64)
    verdicts = page_verdicts(settings, "blog/post.md")
    assert verdicts == {"/docs/next/latin": True, "/docs/next/latin#nope": False, "/docs/next/bin": True}


# --- front matter ---------------------------------------------------------------------------------

_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9)
)


def test_hostile_front_matter_moves_no_route_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    cases = {
        "bomb": _BOMB + "id: *j\nslug: *j\n",
        "pyobj": f"id: !!python/object/apply:os.system ['touch {marker}']\n",
        "pyname": "id: !!python/name:os.system\n",
        "binary": "id: !!binary aGVsbG8=\n",
        "shapes": "id: [a, b]\nslug: {a: b}\n",
        "nested": "id: " + "[" * 5000 + "]" * 5000 + "\n",
        "unclosed": "id: unclosed\n" + "y: z\n" * 5000,
    }
    write_tree(tmp_path / "docs", {f"{k}.md": f"---\n{v}---\n# x\n" for k, v in cases.items()})
    (tmp_path / "manual").mkdir()
    started = time.monotonic()
    pages = dict(beside_meta(tmp_path / "manual")("../docs").pages)
    assert time.monotonic() - started < 5
    assert all(meta == {} for meta in pages.values()), pages
    assert len(pages) == len(cases) and not marker.exists()


@pytest.mark.parametrize("value", ["0x" + "f" * 8000, "9" * 5000])
def test_a_huge_integer_id_beside_does_not_crash_the_index(tmp_path: Path, value: str) -> None:
    # `id: 0xfff...` (8,000 hex digits, under the 16 KiB read) loads as an int; route_meta's str() of
    # it raises ValueError (Python's 4,300-digit limit), and so does the simple YAML reader's int()
    # of a 5,000-digit decimal: nothing between the walk and the index build catches it.
    files = {"docs/big.md": f"---\nid: {value}\n---\n# B\n", "docs/ok.md": "# ok\n"}
    verdicts = _verdicts(tmp_path, ["/docs/next/ok", "/docs/next/nope"], files)
    assert verdicts == {"/docs/next/ok": True, "/docs/next/nope": False}


def test_a_byte_order_mark_does_not_hide_the_front_matter(tmp_path: Path) -> None:
    # Docusaurus reads front matter with gray-matter, which strips a BOM first (lib/utils.js toString:
    # stripBom); the index does the same for a page inside the manual, so `id: bom-id` routes it.
    settings = _site(tmp_path, ["/docs/next/bom-id", "/docs/next/bom", "/docs/bomin-id"], {})
    (tmp_path / "docs" / "bom.md").write_bytes(b"\xef\xbb\xbf---\nid: bom-id\n---\n# x\n")
    inside = tmp_path / "website" / "versioned_docs" / "version-1.0" / "bomin.md"
    inside.write_bytes(b"\xef\xbb\xbf---\nid: bomin-id\n---\n# x\n")
    verdicts = page_verdicts(settings, "blog/post.md")
    assert verdicts == {"/docs/next/bom-id": True, "/docs/next/bom": False, "/docs/bomin-id": True}


def test_ids_and_slugs_that_try_to_escape(tmp_path: Path) -> None:
    files = {
        "docs/dots.md": "---\nid: ..\n---\n# d\n",
        "docs/slash.md": "---\nid: ../../../website/blog/post\n---\n# d\n",
        "docs/climb.md": "---\nslug: /../../../etc/passwd\n---\n# d\n",
        "docs/nul.md": '---\nid: "a\\0b"\nslug: "c\\nd"\n---\n# d\n',
        "docs/long.md": "---\nid: " + "x" * 15000 + "\n---\n# d\n",
        "docs/d1.md": "---\nid: dup\n---\n# d1\n",
        "docs/d2.md": "---\nslug: dup\n---\n# d2\n",
    }
    expected = {
        "/docs/next/..": False,
        "/docs/next/slash": True,  # an id holding `/` is refused by Docusaurus; the page keeps its name
        "/docs/next/climb": False,
        "/etc/passwd": False,
        "/docs/next/../../etc/passwd": False,
        "/docs/next/nul": False,
        "/docs/next/long": False,
        "/docs/next/dup": True,
        "/docs/next/d1": False,
        "/docs/next/d2": False,
    }
    assert _verdicts(tmp_path, list(expected), files) == expected


def test_names_and_cases_go_as_inside_the_manual(tmp_path: Path) -> None:
    # A page beside the manual and the same page inside it (the released version, at /docs/) get
    # the same verdicts: Unicode forms are not folded, nor is case.
    nfd, nfc = unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")
    page = "# T\n\n## Mixed Case\n"
    files = {f"docs/{nfd}.md": page, f"website/versioned_docs/version-1.0/{nfd}.md": page}
    files |= {"docs/Upper.md": page, "website/versioned_docs/version-1.0/Upper.md": page}
    tails = [nfc, nfd, "upper", "Upper", "Upper#mixed-case", "Upper#Mixed-Case"]
    verdicts = _verdicts(tmp_path, [f"/docs/next/{t}" for t in tails] + [f"/docs/{t}" for t in tails], files)
    assert {t: verdicts[f"/docs/next/{t}"] for t in tails} == {t: verdicts[f"/docs/{t}"] for t in tails}
    assert verdicts[f"/docs/next/{nfd}"] is True and verdicts["/docs/next/Upper#mixed-case"] is True


# --- anchors ---------------------------------------------------------------------------------------

ANCHORS = (
    '---\nid: anc\n---\n# Anchors\n\n## Build {#custom-id}\n\n<a id="raw"></a>\n\n## Dup\n\n## Dup\n\n'
    '## CamelCase\n\n## Code `x()` and *em*\n\n> ## In quote\n\n<h2 id="html-id">H</h2>\n\n## Émoji 🎉 ünï\n'
)
FRAGMENTS = {
    "custom-id": True, "build": False, "raw": True, "dup": True, "dup-1": True, "dup-2": False,
    "camelcase": True, "CamelCase": False, "code-x-and-em": True, "in-quote": True, "html-id": True,
    "émoji--ünï": True, "anchors": True, "nope": False,
}  # fmt: skip


def test_anchors_of_a_page_beside_are_those_docusaurus_makes(tmp_path: Path) -> None:
    files = {"docs/anc.md": ANCHORS, "website/versioned_docs/version-1.0/anc.md": ANCHORS}
    links = [f"/docs/next/anc#{f}" for f in FRAGMENTS] + [f"/docs/anc#{f}" for f in FRAGMENTS]
    verdicts = _verdicts(tmp_path, links, files)
    assert {f: verdicts[f"/docs/next/anc#{f}"] for f in FRAGMENTS} == FRAGMENTS
    assert {f: verdicts[f"/docs/anc#{f}"] for f in FRAGMENTS} == FRAGMENTS


# --- the cache -------------------------------------------------------------------------------------


def test_the_cache_follows_changes_and_special_files(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "p.md"
    write_tree(tmp_path, {"docs/p.md": "---\nid: aaaa\n---\n# P\n", "manual/x.md": "# x\n"})
    read = beside_meta(tmp_path / "manual")
    assert read("../docs").pages == [("../docs/p.md", {"id": "aaaa"})]
    page.write_text("---\nid: bbbb\n---\n# P\n")  # same size, a new mtime
    assert read("../docs").pages == [("../docs/p.md", {"id": "bbbb"})]
    # Documented (as the index's own freshness): a page whose size and mtime are forged back may not
    # be read again; only a local user with a shell can forge them, which SECURITY.md leaves out.
    st = page.stat()
    page.write_text("---\nid: cccc\n---\n# P\n")
    os.utime(page, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert read("../docs").pages[0][1] in ({"id": "bbbb"}, {"id": "cccc"})
    # Swapped for a named pipe between two passes: nothing blocks, and its route is no page's.
    page.unlink()
    os.mkfifo(page)
    started = time.monotonic()
    assert read("../docs").pages in ([], [("../docs/p.md", {})])
    assert time.monotonic() - started < 2


# --- the patch validator ---------------------------------------------------------------------------


@pytest.mark.parametrize("attack", ["hex-id", "deep", "fifo", "bad-name", "link-out"])
def test_the_validator_survives_a_hostile_folder_beside(tmp_path: Path, attack: str) -> None:
    files = {"docs/ok.md": "---\nid: ok-id\n---\n# ok\n\n## A\n", "elsewhere/s.md": "---\nid: s\n---\n# S\n"}
    if attack == "hex-id":
        files["docs/big.md"] = "---\nid: 0x" + "f" * 8000 + "\n---\n# B\n"
    settings = _validator_site(tmp_path, files)
    docs = tmp_path / "docs"
    if attack == "deep":
        _chain(docs, 1100)
    elif attack == "fifo":
        os.mkfifo(docs / "fifo.md")
    elif attack == "bad-name":
        (docs / os.fsdecode(b"b\xffd.md")).write_text("---\nid: bad\n---\n# B\n")
    elif attack == "link-out":
        (docs / "out.md").symlink_to(tmp_path / "elsewhere" / "s.md")
    try:
        good = _add_link(settings, "[o](/docs/next/ok-id#a)")
        assert good.status == "committed", good.error
        for target in ("/docs/next/s", "/docs/next/out", "/docs/next/ok"):
            bad = _add_link(settings, f"[x]({target})")
            if attack == "deep":
                # The walk stopped at its depth bound: a page it did not reach may exist (unknown).
                assert bad.status == "committed", bad.error
                continue
            assert bad.status == "invalid" and f"link to {target} would break" in (bad.error or "")
    finally:
        if attack == "deep":
            _unchain(docs, 1100)
