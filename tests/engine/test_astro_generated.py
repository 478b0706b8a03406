"""Two conventions of Astro sites with generated content (Biome's site: 3,026 lint errors, 136 after):
HTML written in a JavaScript string (`<Fragment set:html={"<a href=\\"...\\">"} />`), whose escaped
attributes are links and whose entity-escaped text is none, and `redirects` spread from a generated
file beside the config (`redirects: {...redirects}` with `import redirects from './redirects.js'`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from udm.config import load_settings
from udm.markdown import parse_document
from udm.markdown.mdx import attr_links
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree


def _attrs(content: str) -> list[str]:
    found: list[tuple[int, str, str]] = []
    attr_links(content, 0, "jsx", found)
    return [target for _, target, _ in found]


DIAGNOSTIC = (
    '<Fragment set:html={"<pre><code>code-block.jsx:1:1 '
    '<a href=\\"https://biomejs.dev/linter/rules/use-alt-text\\">lint/a11y/useAltText</a> '
    '&lt;img src=&quot;image.png&quot; /&gt; <a href=\\"/guides/a\\/b\\">local</a></code></pre>"} />'
)


def test_html_in_a_javascript_string_gives_its_links_unescaped() -> None:
    assert _attrs(DIAGNOSTIC) == ["https://biomejs.dev/linter/rules/use-alt-text", "/guides/a/b"]
    # Before: `\` was taken as the target, and `"image.png"` (with its quotes) from the escaped text.
    doc = parse_document(f"# Rule\n\n{DIAGNOSTIC}\n", "rule.mdx")
    assert [(k.line, k.target, k.form) for k in doc.links] == [
        (2, "https://biomejs.dev/linter/rules/use-alt-text", "jsx"),
        (2, "/guides/a/b", "jsx"),
    ]


def test_entity_escaped_text_shows_attributes_it_does_not_have() -> None:
    assert _attrs("&lt;a href=&quot;no.md&quot;&gt; &lt;img src=&#39;no.png&#39;&gt;") == []
    assert (
        _attrs("<p>&lt;a target='_blank' href='example.org'&gt; &#60;a href=&#123;null&#125;&gt;</p>") == []
    )
    assert _attrs('<p>&lt;b&gt;</p> <a href="after.md">') == ["after.md"]  # a real tag after the text
    # Displayed code wrapped over lines: the attribute's `&lt;` is behind other tags.
    assert _attrs("&lt;Script<br /><strong>8</strong> src=&quot;https://example.com/s.js&quot;") == []
    assert _attrs('<Card icon={<Icon />} href="/x">') == ["/x"]  # a tag in an attribute expression
    assert _attrs('<img src=a\\b.png alt="win">') == ["a\\b.png"]  # an unquoted value keeps its backslash
    assert _attrs('<a href="one.md">1</a> <a href=two.md>2</a>') == ["one.md", "two.md"]


def test_many_attributes_in_one_tag_are_read_in_linear_time() -> None:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        found = _attrs("<a " + " href=x" * 150_000)
        best = min(best, time.process_time() - started)
    assert len(found) == 150_000 and best < 2.0, best


ASTRO = """\
import starlight from '@astrojs/starlight';
import generated from './redirects.js';
import listed from './more-redirects.json';
import outside from '../elsewhere.js';
export default {
  integrations: [starlight({ title: 'S' })],
  redirects: {
    ...generated,
    ...listed,
    ...outside,
    ...notImported,
    '/old-start': '/guides/start',
  },
};
"""


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    write_tree(
        site,
        {
            "astro.config.mjs": ASTRO,
            "redirects.js": "// generated\nexport default {\n  '/rules/no-x': '/rules/no-x/js',\n};\n",
            "more-redirects.json": '{"/listed": "/guides/start"}',
            "src/content/docs/guides/start.md": "# Start\n",
            "src/content/docs/rules/no-x/js.md": "# No x\n",
            "src/content/docs/index.md": (
                "# Home\n\n[a](/old-start) [b](/rules/no-x) [c](/listed) [d](/outside) [e](/gone)\n"
            ),
        },
    )
    write_tree(tmp_path, {"elsewhere.js": "export default { '/outside': '/guides/start' };\n"})
    (tmp_path / ".git").mkdir()
    return site


def test_redirects_spread_from_files_beside_the_config_are_read(tmp_path: Path) -> None:
    site = _site(tmp_path)
    detected = detect_site(site / "src/content/docs", stop=tmp_path)
    assert ("/rules/no-x", "/rules/no-x/js") in detected.redirects
    assert ("/listed", "/guides/start") in detected.redirects
    # A file outside the config's folder is not the site's to read.
    assert not any(src == "/outside" for src, _ in detected.redirects)
    settings = load_settings(cwd=tmp_path, root=site / "src/content/docs", state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "index.md")
    assert verdicts == {
        "/old-start": True,
        "/rules/no-x": True,
        "/listed": True,
        "/outside": False,
        "/gone": False,
    }
    # The generated file is part of the site's stamp: regenerated, the site is read again.
    (site / "redirects.js").write_text("export default {\n  '/gone': '/guides/start',\n};\n")
    verdicts = page_verdicts(settings, "index.md")
    assert verdicts["/gone"] is True and verdicts["/rules/no-x"] is False


def test_a_spread_file_that_is_huge_or_no_file_is_passed_over(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "redirects.js").write_text("export default {\n" + "  '/a': '/b',\n" * 120_000 + "};\n")
    (site / "more-redirects.json").unlink()
    os.mkfifo(site / "more-redirects.json")  # read, it would block
    started = time.perf_counter()
    detected = detect_site(site / "src/content/docs", stop=tmp_path)
    assert time.perf_counter() - started < 5
    assert [r for r in detected.redirects if not r[0].startswith("/:")] == [("/old-start", "/guides/start")]
