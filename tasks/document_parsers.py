"""Turning a document's bytes into citable text: type detection, encodings, the HTML, PDF and text
parsers, and the quality gate that refuses challenge pages, login walls and empty pages.

The parsers run in the research fan-out's parsing processes (`udm.net.run_parser`), so they live at
module level here and import trafilatura and pypdf only when first used.
"""

from __future__ import annotations

import codecs
import io
import re
from enum import StrEnum
from typing import Any

__all__ = [
    "PARSER_MODULES",
    "DocType",
    "cut_utf8",
    "detect_type",
    "parse_html",
    "parse_pdf",
    "parse_text",
    "quality_problem",
]


# What a parsing process imports before its first document (`udm.net.parse_pool`'s preload).
PARSER_MODULES = ("trafilatura", "trafilatura.metadata", "pypdf", __name__)


class DocType(StrEnum):
    """Document type hints (`txt` is the earlier specification's spelling of `text`)."""

    AUTO = "auto"
    HTML = "html"
    PDF = "pdf"
    TEXT = "text"
    TXT = "txt"
    MARKDOWN = "markdown"


_MIME = {"html": "text/html", "pdf": "application/pdf", "text": "text/plain", "markdown": "text/markdown"}
_BINARY_MAGIC = (
    (b"\x89PNG", "image/png"),
    (b"GIF8", "image/gif"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"RIFF", "application/octet-stream"),
    (b"\x7fELF", "application/x-executable"),
)
_EXT = {
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".rst": "text",
    ".csv": "text",
    ".json": "text",
    ".yaml": "text",
    ".yml": "text",
    ".toml": "text",
}


def detect_type(hint: DocType, content_type: str, data: bytes, name: str) -> tuple[str | None, str]:
    """(kind, mime): kind is html/pdf/text/markdown, or None with the unsupported mime type."""
    if hint is not DocType.AUTO:
        kind = "text" if hint is DocType.TXT else hint.value
        return kind, _MIME[kind]
    head = data[:2048]
    if head.startswith(b"%PDF-"):
        return "pdf", _MIME["pdf"]
    for magic, mime in _BINARY_MAGIC:
        if head.startswith(magic):
            return None, mime
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or (b"<head" in lowered and b"<body" in lowered):
        return "html", _MIME["html"]
    mime = content_type.split(";", 1)[0].strip().lower()
    ext = "." + name.rsplit(".", 1)[-1].lower().split("?", 1)[0] if "." in name.rsplit("/", 1)[-1] else ""
    if mime in ("text/html", "application/xhtml+xml"):
        return "html", _MIME["html"]
    if mime == "application/pdf":
        return "pdf", _MIME["pdf"]
    if mime in ("text/markdown", "text/x-markdown"):
        return "markdown", _MIME["markdown"]
    if mime.startswith("text/") or mime in ("application/json", "application/xml", "application/yaml"):
        return ("markdown" if _EXT.get(ext) == "markdown" else "text"), _MIME[
            "markdown" if _EXT.get(ext) == "markdown" else "text"
        ]
    if mime and mime != "application/octet-stream":
        return None, mime
    if ext in _EXT:
        kind = _EXT[ext]
        return kind, _MIME[kind]
    if b"\x00" in head:
        return None, mime or "application/octet-stream"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a multi-byte character cut at the end of the sample is fine
            return None, mime or "application/octet-stream"
    return "text", _MIME["text"]


# -- quality gate ----------------------------------------------------------------------------------

_CHALLENGE_TITLE = re.compile(
    r"just a moment|attention required|checking your browser|verify you are human|are you a robot|"
    r"access denied|security check|ddos protection|captcha",
    re.I,
)
_CHALLENGE_MARKERS = (
    "cf-browser-verification",
    "challenge-platform",
    "cf_chl_",
    "g-recaptcha",
    "h-captcha",
    "hcaptcha.com",
    "checking your browser before accessing",
    "enable javascript and cookies to continue",
    "ddos protection by",
    "please verify you are a human",
    "px-captcha",
)
_LOGIN_TITLE = re.compile(r"\b(sign[ -]?in|log[ -]?in|login)\b", re.I)
_LOGIN_PHRASES = re.compile(
    r"(sign|log) in to (continue|read|view|access)|subscribe to (continue|read)|"
    r"you must be (logged|signed) in|members only|create (a free )?account to (continue|read)",
    re.I,
)
MIN_TEXT_CHARS = 80


def quality_problem(html: str, title: str | None, text: str | None) -> str | None:
    """Why an extracted page must not be cited (challenge, login wall, empty), or None."""
    body = (text or "").strip()
    lowered = html[:200_000].lower()
    short = len(body) < 2000
    if (title and _CHALLENGE_TITLE.search(title) and short) or (
        short and any(m in lowered for m in _CHALLENGE_MARKERS)
    ):
        return "an anti-bot/challenge page, not the document"
    has_password = re.search(r"<input[^>]+type=[\"']?password", lowered) is not None
    login_title = bool(title and _LOGIN_TITLE.search(title)) and len(body) < 600
    if short and (has_password or login_title or _LOGIN_PHRASES.search(body)):
        return "a login wall: the content needs an account"
    if len(body) < MIN_TEXT_CHARS:
        return f"the page has no main text to extract ({len(body)} characters)"
    return None


# -- parsers ---------------------------------------------------------------------------------------


def _charset(content_type: str) -> str | None:
    m = re.search(r"charset=[\"']?([A-Za-z0-9_.:-]+)", content_type)
    return m.group(1) if m else None


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
# As in the WHATWG Encoding Standard: pages that say Latin-1 or ASCII are decoded as windows-1252.
_WINDOWS_1252_LABELS = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii"}


def _known(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().lower()
    if label in _WINDOWS_1252_LABELS:
        return "cp1252"
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _decode(data: bytes, content_type: str, *, html: bool = False) -> str:
    """Bytes to text the way a browser picks the encoding: BOM, HTTP charset, <meta>, then a guess."""
    for bom, bom_encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(bom_encoding, errors="replace")
    encoding = _known(_charset(content_type))
    if encoding is None and html:
        meta = _META_CHARSET.search(data[:1024])
        encoding = _known(meta.group(1).decode("ascii")) if meta else None
        # A page saved as UTF-16 cannot declare it in ASCII-compatible bytes; the meta tag is wrong then.
        encoding = None if encoding and encoding.startswith("utf-16") else encoding
    if encoding is not None:
        return data.decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Not UTF-8 and undeclared: windows-1252 maps every byte, which is what browsers fall back to.
        return data.decode("cp1252", errors="replace")


def parse_html(
    data: bytes, content_type: str, url: str | None
) -> tuple[str | None, str | None, dict[str, Any]]:
    """Title, main text (Markdown) and metadata of an HTML page; _ParseFailed when nothing is citable."""
    import trafilatura
    from trafilatura.metadata import extract_metadata

    html = _decode(data, content_type, html=True)
    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_comments=False,
        include_formatting=True,
        include_tables=True,
    )
    # Metadata separately and without the extensive date search: `with_metadata=True` made
    # extraction about 4x slower (htmldate scans the whole page); meta tags and JSON-LD suffice.
    try:
        doc = extract_metadata(html, default_url=url, extensive=False)
        meta: dict[str, Any] = doc.as_dict() if doc is not None else {}
    except Exception:  # trafilatura's metadata heuristics must never lose the text they decorate
        meta = {}
    title = meta.get("title")
    if not title:
        m = re.search(r"<title[^>]*>(.*?)</title>", html, re.I | re.S)
        title = re.sub(r"\s+", " ", m.group(1)).strip() if m else None
    problem = quality_problem(html, str(title) if title else None, text)
    if problem:
        raise _ParseFailed(problem)
    info = {
        "author": meta.get("author"),
        "date": str(meta["date"]) if meta.get("date") else None,
        "canonical_url": meta.get("url"),
        "site_name": meta.get("sitename"),
        "description": meta.get("description"),
    }
    return (str(title) if title else None), text, info


def parse_pdf(data: bytes) -> tuple[str | None, str | None, dict[str, Any]]:
    """Title, text (per page) and document info of a PDF; _ParseFailed when it has no readable text."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _ParseFailed("the PDF is encrypted")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info: dict[str, Any] = dict(reader.metadata or {})
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise _ParseFailed(f"not a readable PDF: {type(exc).__name__}: {exc}") from exc
    text = "\n\n".join(f"<!-- page {i} -->\n{p}" for i, p in enumerate(pages, 1) if p)
    if sum(len(p) for p in pages) < 20:
        raise _ParseFailed("the PDF has no text layer (scanned images?)")
    title = info.get("/Title")
    meta = {
        "author": str(info["/Author"]) if info.get("/Author") else None,
        "date": str(info["/CreationDate"]) if info.get("/CreationDate") else None,
        "page_count": len(pages),
        "description": str(info["/Subject"]) if info.get("/Subject") else None,
    }
    return (str(title) if title else None), text, meta


def parse_text(data: bytes, content_type: str, kind: str) -> tuple[str | None, str | None, dict[str, Any]]:
    """Title (a Markdown heading, else the first line) and text of a text or Markdown document."""
    text = _decode(data, content_type).replace("\r\n", "\n").strip("\ufeff")
    if not text.strip():
        raise _ParseFailed("the document is empty")
    title = None
    m = re.search(r"^#\s+(.+)$", text, re.M) if kind == "markdown" else None
    if m:
        title = m.group(1).strip()
    else:
        first = text.strip().splitlines()[0].strip()
        title = first[:200] if first else None
    return title, text, {}


class _ParseFailed(Exception):
    """The document was read but yields nothing citable; the message says why."""


def cut_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    """`text` cut to at most `max_bytes` of UTF-8 (never inside a character), and whether it was cut."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text, False
    return raw[:max_bytes].decode("utf-8", errors="ignore"), True
