"""Attacker round 6: Jekyll's Liquid links and front matter defaults, Fumadocs sites, MyST's
`project:`/`path:` links. Each test either guards a behaviour that holds, or was written failing on a
real bug (marked `# FINDING`, with what happened and what should) and passes since its fix."""

from __future__ import annotations

from pathlib import Path

from udm.config import load_settings
from udm.site.routes import LinkResolver, Routes, detect_site

from ..engine.conftest import cpu_seconds, page_verdicts, write_tree
from ..engine.test_jekyll_site import _site as _jekyll_site
from .cli_process import run_udm


def _jekyll(tmp_path: Path, page: str) -> dict[str, bool | None]:
    site = _jekyll_site(tmp_path)
    (tmp_path / "secret.md").write_text("# Secret\n")
    (site / "p.md").write_text(page)
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    return page_verdicts(settings, "p.md")


# --- Jekyll Liquid links ------------------------------------------------------------------------


def test_liquid_link_out_of_the_site_is_broken(tmp_path: Path) -> None:
    # Guard: `{% link %}` climbing out of the site's folder names nothing Jekyll builds.
    verdicts = _jekyll(
        tmp_path,
        "# P\n[a]({% link ../secret.md %}) [b]({% link /../secret.md %})\n"
        "[c]({% link _docs/../../secret.md %}) [d]({{ '/../secret.md' | relative_url }})\n"
        "[e]({{ site.baseurl }}/../../secret.md) [f]({% link . %}) [g]({% link .git %})\n",
    )
    assert verdicts and not any(verdicts.values()), verdicts


def test_liquid_link_to_a_file_jekyll_does_not_publish_is_broken(tmp_path: Path) -> None:
    # FINDING: `{% link %}` to a partial (_includes/), an excluded file (notes/ in `exclude`), a
    # document of a collection with `output: false` (_hidden/) or the config itself is reported
    # resolved: `_locate_liquid` only asks whether the file exists. Jekyll's link tag looks among the
    # pages, static files and documents it writes, and its build fails on each of these. They should
    # be broken (as `[x](../_includes/part.md)` is "unpublished").
    verdicts = _jekyll(
        tmp_path,
        "# P\n[inc]({% link _includes/part.md %}) [excl]({% link notes/todo.md %})\n"
        "[hidden]({% link _hidden/x.md %}) [cfg]({% link _config.yml %})\n",
    )
    assert verdicts == dict.fromkeys(verdicts, False), verdicts


def _jekyll_posts_resolver(tmp_path: Path, n: int) -> LinkResolver:
    site = tmp_path / "site"
    write_tree(site, {"_config.yml": "baseurl: ''\n"})
    (tmp_path / ".git").mkdir(exist_ok=True)
    detected = detect_site(site, stop=tmp_path)
    assert detected.generator == "jekyll"
    pages = {f"_posts/2024-01-01-p{i}.md" for i in range(n)}
    return LinkResolver(Routes(detected, pages), lambda _path: False)


def _post_url_seconds(tmp_path: Path, n: int) -> float:
    resolver = _jekyll_posts_resolver(tmp_path, n)
    return cpu_seconds(
        lambda: [
            resolver.locate(f"_posts/2024-01-01-p{i}.md", f"{{% post_url 2020-01-01-gone{i} %}}")
            for i in range(n)
        ]
    )


def test_post_url_links_resolve_in_linear_time(tmp_path: Path) -> None:
    # FINDING: each `{% post_url %}` walks (and sorts) every page of the site (`_locate_liquid` keeps no
    # table of posts), so a blog of N posts each linking to a missing post costs N^2: 1,000 posts
    # 1.0 s, 2,000 posts 4.2 s (the time of the resolver alone; an index of 2,000 such posts 9.7 s against
    # 1.5 s with plain links). A table of posts by name, built once, should make it linear.
    small = _post_url_seconds(tmp_path / "a", 500)
    large = _post_url_seconds(tmp_path / "b", 1000)
    assert large < 0.5 and large < 3 * max(small, 0.02), (small, large)


# --- Fumadocs -----------------------------------------------------------------------------------

FUMA_CONFIG = (
    "import { defineDocs } from 'fumadocs-mdx/config';\n"
    "export const docs = defineDocs({ dir: 'content/docs' });\n"
)


def _fuma(tmp_path: Path, files: dict[str, str]) -> Path:
    write_tree(
        tmp_path / "web", {"source.config.ts": FUMA_CONFIG, "content/docs/index.mdx": "# x\n", **files}
    )
    (tmp_path / ".git").mkdir(exist_ok=True)
    return tmp_path / "web"


def _detect_seconds(tmp_path: Path, files: dict[str, str]) -> float:
    web = _fuma(tmp_path, files)
    seconds = cpu_seconds(lambda: detect_site(web, stop=tmp_path))
    assert detect_site(web, stop=tmp_path).generator == "fumadocs"
    return seconds


def test_unclosed_loader_calls_are_read_in_linear_time(tmp_path: Path) -> None:
    # FINDING: `_loaders` runs `_balanced` from every `loader(` to the end of the script when none
    # closes, so a script of k unclosed `loader(` costs k^2: 2,000 of them (14 KB) 0.8 s, 4,000 3.3 s,
    # 8,000 15 s; a script may be 256 KB (~36,000 of them, minutes) and 400 scripts are read. The
    # scan should stop once the text is known unclosed (one scan per text), or the calls be capped.
    small = _detect_seconds(tmp_path / "a", {"lib/source.ts": "loader(" * 1000})
    large = _detect_seconds(tmp_path / "b", {"lib/source.ts": "loader(" * 2000})
    assert large < 0.5 and large < 3 * max(small, 0.02), (small, large)


def test_unclosed_collections_are_read_in_linear_time(tmp_path: Path) -> None:
    # FINDING: the same in `_collections`: an unclosed `defineCollections(` with no `dir` is skipped
    # without counting towards the 50 collections, after a scan to the end of the text; 2,000 of them
    # in source.config.ts 1.5 s, 4,000 4.9 s (quadratic). Should be linear.
    unclosed = "export const a = defineCollections("
    small = _detect_seconds(tmp_path / "a", {"source.config.ts": FUMA_CONFIG + unclosed * 700})
    large = _detect_seconds(tmp_path / "b", {"source.config.ts": FUMA_CONFIG + unclosed * 1400})
    assert large < 0.5 and large < 3 * max(small, 0.02), (small, large)


def test_scripts_linked_out_of_the_project_are_not_read(tmp_path: Path) -> None:
    # FINDING: `lib/` (or `app/`, or one script) that is a symbolic link to a folder outside the
    # project is walked and read: its `loader({ baseUrl: '/leaked' })` publishes the docs at
    # /leaked, and its `app/secret/page.tsx` becomes the route /secret. os.walk follows a top that is
    # a link, and read_head follows a linked file. What lies outside the project should not be read
    # (as the Jekyll reader leaves out an HTML page linked out of the site).
    outside = tmp_path / "outside"
    write_tree(
        outside,
        {
            "lib/source.ts": "loader({ baseUrl: '/leaked', source: docs.toFumadocsSource() })\n",
            "app/secret/page.tsx": "export default function S() {}\n",
            "one.ts": "loader({ baseUrl: '/one', source: docs.toFumadocsSource() })\n",
        },
    )
    web = _fuma(tmp_path / "p", {})
    (web / "lib").symlink_to(outside / "lib")
    (web / "app").symlink_to(outside / "app")
    site = detect_site(web, stop=tmp_path / "p")
    assert [m.prefix for m in site.mounts] == ["docs"], site.mounts
    assert not any(route == "secret" for route, _ in site.html_pages), site.html_pages
    web2 = _fuma(tmp_path / "q", {})
    (web2 / "src").mkdir()
    (web2 / "src" / "source.ts").symlink_to(outside / "one.ts")
    site2 = detect_site(web2, stop=tmp_path / "q")
    assert [m.prefix for m in site2.mounts] == ["docs"], site2.mounts


def test_a_dotted_page_name_is_not_a_language(tmp_path: Path) -> None:
    # FINDING: on a Fumadocs site with i18n (languages en and cn, lib/i18n.ts), `node.js.mdx` is read as
    # the "js" translation of `node`: `/docs/node.js` is reported broken and `/js/docs/install` (no
    # such language: a 404) resolves through the fallback redirect made for "js". Fumadocs' dot parser
    # takes the suffix as a language only when it is one of i18n's `languages`; udm should too (or
    # read only suffixes that are languages of the config it can read).
    from ..engine.test_fumadocs_site import _site as _fumadocs_site

    site = _fumadocs_site(tmp_path)
    (site / "content/docs/node.js.mdx").write_text("# Node\n")
    (site / "content/docs/p.mdx").write_text("# P\n[node](/docs/node.js) [js](/js/docs/install)\n")
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "content/docs/p.mdx")
    assert verdicts == {"/docs/node.js": True, "/js/docs/install": False}, verdicts


# --- MyST project: and path: --------------------------------------------------------------------


def test_myst_schemes_never_resolve_outside_the_manual(tmp_path: Path) -> None:
    # Guard: `project:`/`path:` climbing out (written, percent-encoded, through a symbolic link to a
    # file or a folder outside) or naming the root itself resolve to nothing.
    from ..engine.test_myst_targets import _myst_site

    site = _myst_site(tmp_path)
    (tmp_path / "secret.md").write_text("# S\n\n## Key\n")
    (site / "leak.md").symlink_to(tmp_path / "secret.md")
    (site / "up").symlink_to(tmp_path)
    (site / "q.md").write_text(
        "# Q\n[a](project:/../secret.md) [b](path:../secret.md) [c](project:leak.md#key)\n"
        "[d](path:leak.md) [e](project:up/secret.md) [f](path:up/secret.md) [g](project:%2e%2e/secret.md)\n"
        "[h](path:/etc/passwd) [j](path:.) [k](project:/) [n](project:..)\n"
    )
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "q.md")
    assert len(verdicts) == 11 and not any(verdicts.values()), verdicts


# --- Messages -----------------------------------------------------------------------------------


def test_liquid_targets_with_terminal_escapes_are_shown_escaped(tmp_path: Path) -> None:
    # Guard: a Liquid link holding ESC/BEL reaches `udm links` and `udm lint` escaped.
    site = tmp_path / "site"
    write_tree(
        site,
        {
            "_config.yml": "baseurl: ''\n",
            "p.md": "# P\n\n[a]({% link x\x1b]0;PWNED\x07y.md %}) [b]({% post_url 2020\x1b[31m-01-01-z %})"
            " [c]({{ site.baseurl }}/q\x1b[2Jz/)\n",
        },
    )
    (tmp_path / ".git").mkdir()
    for command in ("links", "lint"):
        code, out = run_udm(tmp_path, "--root", "site", "--state-dir", "st", command)
        assert code == 1 and b"\x1b" not in out and b"\x07" not in out and b"Traceback" not in out, out
        assert out.count(b"\\x1b") >= 3, out


def _heading_anchor_seconds(tmp_path: Path, spaces: int) -> float:
    from udm.site.anchors import page_anchors

    site = detect_site(_fuma(tmp_path, {}), stop=tmp_path)
    assert site.generator == "fumadocs"
    return cpu_seconds(
        lambda: page_anchors(site, "content/docs/wide.mdx", "# Wide\n\n## a" + " " * spaces + "x\n")
    )


def test_custom_heading_ids_are_read_in_linear_time(tmp_path: Path) -> None:
    # FINDING: `_CUSTOM_ID.search` (`[ \t]*\[#...\][ \t]*$`) is tried at every blank of a heading's
    # title and each try runs over the rest of the blanks: `page_anchors` of a Fumadocs page with the
    # heading `## a<40,000 spaces>x` takes 1.7 s (20,000: 0.44 s), quadratic. Match the id at the
    # end only (strip the title, then `\[#(...)\]$`), or anchor the search.
    small = _heading_anchor_seconds(tmp_path / "a", 12_000)
    large = _heading_anchor_seconds(tmp_path / "b", 24_000)
    assert large < 0.2 and large < 3 * max(small, 0.02), (small, large)
