"""Attacks on the Jekyll reader: its `_config.yml`, its HTML pages and the route front matter are all
files of the manual, so untrusted. Each either reads as Jekyll would, or is left out, in bounded time
and memory; nothing outside the site is read, and nothing raises."""

from __future__ import annotations

import os
import time
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from udm.config import load_settings
from udm.site.routes import Routes, detect_site, route_meta

from ..engine.conftest import page_verdicts, write_tree

SLOW = 2.0


def _site(tmp_path: Path, config: str, files: dict[str, str] | None = None) -> Path:
    site = tmp_path / "site"
    write_tree(site, {"_config.yml": config, "_layouts/default.html": "x", **(files or {})})
    (tmp_path / ".git").mkdir(exist_ok=True)
    return site


def test_an_html_page_linked_out_of_the_site_is_not_read(tmp_path: Path) -> None:
    # A symbolic link `secret.html` -> a file outside: its front matter would name a route, and reading
    # it at all reads outside the site.
    outside = tmp_path / "outside.html"
    outside.write_text("---\npermalink: /leak/\n---\n")
    site = _site(tmp_path, "baseurl: ''\n", {"index.md": "[l](/leak/) [s](/secret)\n"})
    (site / "secret.html").symlink_to(outside)
    detected = detect_site(site, stop=tmp_path)
    assert detected.generator == "jekyll"
    assert not any(file == "secret.html" for _, file in detected.html_pages)
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "index.md")["/leak/"] is False


def test_a_named_pipe_called_like_a_page_does_not_block(tmp_path: Path) -> None:
    site = _site(tmp_path, "theme: minima\n", {"index.md": "# Home\n"})
    os.mkfifo(site / "pipe.html")
    started = time.perf_counter()
    detected = detect_site(site, stop=tmp_path)
    assert time.perf_counter() - started < SLOW
    assert not any(file == "pipe.html" for _, file in detected.html_pages)


def test_a_permalink_pattern_of_a_hundred_kilobytes_is_not_used(tmp_path: Path) -> None:
    # Every page's route would be made from it: 2,000 pages of 100 KB routes is 200 MB.
    pattern = "/:path" * 20_000
    files = {f"_docs/p{i}.md": "# P\n" for i in range(2000)}
    site = _site(
        tmp_path,
        f"permalink: '{pattern}'\ncollections:\n  docs:\n    output: true\n    permalink: '{pattern}'\n",
        files,
    )
    started = time.perf_counter()
    detected = detect_site(site, stop=tmp_path)
    assert all(len(p) <= 300 for _, p in detected.permalinks)
    routes = Routes(detected, set(files))
    assert routes.by_route("docs/p7") == "_docs/p7.md"  # the collection's default
    assert time.perf_counter() - started < SLOW


def test_more_html_pages_than_the_cap_are_read_in_bounded_time(tmp_path: Path) -> None:
    site = _site(tmp_path, "theme: minima\n")
    folder = site / "many"
    folder.mkdir()
    for i in range(6000):
        (folder / f"p{i:05d}.html").write_text(f"---\npermalink: /p/{i}/\n---\n")
    started = time.perf_counter()
    detected = detect_site(site, stop=tmp_path)
    assert time.perf_counter() - started < 5 * SLOW
    assert len(detected.html_pages) == 5000


def test_an_html_page_with_a_megabyte_of_front_matter_is_read_by_its_head(tmp_path: Path) -> None:
    site = _site(tmp_path, "theme: minima\n")
    (site / "big.html").write_text("---\ntitle: '" + "x" * 1_000_000 + "'\npermalink: /late/\n---\n")
    (site / "one-line.html").write_text("---\npermalink: " + "/a" * 500_000 + "\n---\n")
    started = time.perf_counter()
    detected = detect_site(site, stop=tmp_path)
    assert time.perf_counter() - started < SLOW
    # The permalink past the first 4 KiB is not read: the page is at its path.
    assert ("big", "big.html") in detected.html_pages


_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=20)
    | st.sampled_from(["pretty", "/:path/", "../.."]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_KEYS = st.sampled_from(["permalink", "collections", "collections_dir", "baseurl", "exclude", "theme", "x"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(_KEYS, _VALUE, max_size=6))
def test_any_config_shape_reads_as_a_site_or_a_problem(tmp_path: Path, data: dict[str, object]) -> None:
    site = tmp_path / "site"
    write_tree(site, {"_config.yml": yaml.safe_dump(data), "_layouts/a.html": "x", "_docs/a.md": "# A\n"})
    (tmp_path / ".git").mkdir(exist_ok=True)
    detected = detect_site(site, stop=tmp_path)
    assert detected.generator == "jekyll"
    for mount in detected.mounts:
        assert ".." not in mount.folder.split("/")
    Routes(detected, {"_docs/a.md", "index.md"}).by_route("docs/a")


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["permalink", "redirect_from", "categories", "category", "date", "slug", "title"]),
        _VALUE,
        max_size=7,
    )
)
def test_any_route_front_matter_gives_bounded_metadata(front: dict[str, object]) -> None:
    meta = route_meta(front) or {}
    assert len(meta.get("aliases", [])) <= 100
    assert len(meta.get("categories", [])) <= 20
    assert all(isinstance(c, str) and c for c in meta.get("categories", []))


def test_a_thousand_redirect_froms_and_categories_are_capped() -> None:
    meta = route_meta({"redirect_from": [f"/old/{i}" for i in range(1000)], "categories": "a " * 5000}) or {}
    assert len(meta["aliases"]) == 100 and len(meta["categories"]) == 20
