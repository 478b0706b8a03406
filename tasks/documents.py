"""documentFetchingParsingTool: fetch a URL (or read a sandboxed file) and extract its main text.

HTML goes through trafilatura (Markdown output, comments dropped, its metadata), PDF through pypdf
(text per page, document info), text and Markdown are read directly. The type comes from the hint,
else from the bytes themselves when they are decisive (PDF magic, HTML markup, binary signatures),
else from the Content-Type header, else from the file extension.

Size policy (`maxLengthBytes` caps both the download and the text returned):
- a PDF larger than the cap is `ERROR_TOO_LARGE`: a cut PDF has lost its cross-reference table and
  cannot be parsed, so nothing partial could be returned;
- HTML, text and Markdown larger than the cap are parsed from their first `maxLengthBytes` bytes and
  returned as `PARTIAL_SUCCESS_TRUNCATED` with `metadata.truncation_applied = true`.

Quality gate: an empty page, a login wall or an anti-bot/challenge page is `ERROR_PARSE_FAILED` with
the reason — never content a research appendix could cite.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import re
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from tasks.base import ErrorTable, Failure, Permission, Tool, ToolContext, ToolInput
from udm.errors import InvalidPathError, InvalidURLError, PathOutsideError
from udm.net import FetchError, run_parser
from udm.research import rank_passages, split_passages, terms

__all__ = ["DocStatus", "DocType", "DocumentFetchingParsingTool", "FetchInput", "FetchOutput", "detect_type"]


class DocType(StrEnum):
    """Document type hints (`txt` is the earlier specification's spelling of `text`)."""

    AUTO = "auto"
    HTML = "html"
    PDF = "pdf"
    TEXT = "text"
    TXT = "txt"
    MARKDOWN = "markdown"


class DocStatus(StrEnum):
    """Outcome of one fetch-and-parse."""

    SUCCESS = "SUCCESS"
    PARTIAL_SUCCESS_TRUNCATED = "PARTIAL_SUCCESS_TRUNCATED"
    ERROR_FETCH_FAILED = "ERROR_FETCH_FAILED"
    ERROR_TOO_LARGE = "ERROR_TOO_LARGE"
    ERROR_UNSUPPORTED_FORMAT = "ERROR_UNSUPPORTED_FORMAT"
    ERROR_PARSE_FAILED = "ERROR_PARSE_FAILED"
    ERROR_INVALID_INPUT = "ERROR_INVALID_INPUT"
    ERROR_UNKNOWN = "ERROR_UNKNOWN"


class FetchInput(ToolInput):
    """Exactly one of `url` and `filePath`, plus optional parsing hints."""

    url: str | None = Field(default=None, min_length=1, description="http(s) URL to fetch and parse.")
    filePath: str | None = Field(
        default=None,
        min_length=1,
        description="Local file to read and parse (inside the allowed directories).",
    )
    documentTypeHint: DocType = Field(
        default=DocType.AUTO, description="html, pdf, text, markdown, or auto (infer from headers and bytes)."
    )
    maxLengthBytes: int = Field(
        default=500_000,
        ge=1,
        le=50_000_000,
        description="Most bytes downloaded/read, and most bytes of text returned.",
    )
    sectionKeywords: list[str] | None = Field(
        default=None, description="Keywords; the passages matching them best are put first."
    )

    @model_validator(mode="after")
    def _exactly_one_source(self) -> FetchInput:
        if (self.url is None) == (self.filePath is None):
            raise ValueError("give exactly one of 'url' and 'filePath'")
        return self


class FetchOutput(BaseModel):
    """The extracted document and how it was obtained."""

    status: DocStatus = Field(description="Outcome of the fetch and parse.")
    urlFetched: str | None = Field(default=None, description="The URL finally fetched (after redirects).")
    filePathProcessed: str | None = Field(default=None, description="The local file read, as resolved.")
    contentTypeDetected: str | None = Field(default=None, description="Detected type, e.g. text/html.")
    extractedTitle: str | None = Field(default=None, description="The document's title, when found.")
    cleanedTextContent: str | None = Field(
        default=None, description="Main text (Markdown for HTML), boilerplate removed; null on error."
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="author, date, canonical_url, site_name, description, page_count, original_size_bytes, "
        "truncation_applied, content_hash, fetched_at, from_cache ...",
    )
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")


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


def _parse_html(
    data: bytes, content_type: str, url: str | None
) -> tuple[str | None, str | None, dict[str, Any]]:
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


def _parse_pdf(data: bytes) -> tuple[str | None, str | None, dict[str, Any]]:
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


def _parse_text(data: bytes, content_type: str, kind: str) -> tuple[str | None, str | None, dict[str, Any]]:
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
    """Internal: the document was fetched but yields nothing citable."""


def _cut_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text, False
    return raw[:max_bytes].decode("utf-8", errors="ignore"), True


def _prioritise(text: str, keywords: list[str]) -> tuple[str, int]:
    """The text with the passages matching `keywords` first (best first), the rest after in order."""
    query = [t for k in keywords for t in terms(k)]
    passages = split_passages(text)
    ranked = rank_passages(passages, query)
    hits = [p for p in ranked if p.score > 0]
    rest = sorted((p for p in ranked if p.score <= 0), key=lambda p: p.index)
    return "\n\n".join(p.text for p in hits + rest), len(hits)


class DocumentFetchingParsingTool(Tool[FetchInput, FetchOutput]):
    """Fetch a URL or read a local file, and extract clean main text with metadata."""

    name: ClassVar[str] = "documentFetchingParsingTool"
    description: ClassVar[str] = (
        "Fetches a web page, PDF or text file by URL (or reads a local file inside the allowed "
        "directories) and returns its main text with boilerplate removed, as Markdown for web pages, "
        "with title and metadata. Respects robots.txt, refuses private network addresses, caps the "
        "size, and can put the passages matching given keywords first."
    )
    Input: ClassVar[type[BaseModel]] = FetchInput
    Output: ClassVar[type[BaseModel]] = FetchOutput
    permission: ClassVar[Permission] = Permission.SAFE
    # A file that cannot be read, or text that cannot be parsed, is reported where it happens: the
    # details name the input's path, and a parse failure keeps what was fetched.
    errors: ClassVar[ErrorTable] = {
        InvalidURLError: DocStatus.ERROR_INVALID_INPUT,
        PathOutsideError: DocStatus.ERROR_INVALID_INPUT,
        InvalidPathError: DocStatus.ERROR_INVALID_INPUT,
        FetchError: Failure(
            DocStatus.ERROR_FETCH_FAILED,
            fields=lambda exc: {
                "urlFetched": exc.url,
                "metadata": {"http_status": exc.status_code} if exc.status_code else {},
            },
            transient=lambda exc: exc.transient,
        ),
    }

    def execute(self, data: FetchInput, ctx: ToolContext) -> FetchOutput:
        """Obtain the bytes, detect the type, parse, gate on quality, rank, cap."""
        meta: dict[str, Any] = {}
        if data.url is not None:
            fetched = self._fetch(data, ctx)
            if isinstance(fetched, FetchOutput):
                return fetched
            body = fetched
            raw, truncated, content_type = body.content, body.truncated, body.content_type
            name, source_url = body.final_url, body.final_url
            meta.update(
                fetched_at=body.fetched_at,
                final_url=body.final_url,
                redirects=body.redirects,
                from_cache=body.from_cache,
                http_status=body.status_code,
                content_hash=body.content_hash,
                original_size_bytes=body.declared_length
                if body.declared_length is not None
                else (None if truncated else len(raw)),
            )
            out = FetchOutput(status=DocStatus.SUCCESS, urlFetched=body.final_url, metadata=meta)
        else:
            read = self._read_file(data, ctx)
            if isinstance(read, FetchOutput):
                return read
            raw, truncated, size, real = read
            content_type, name, source_url = "", real, None
            meta.update(
                original_size_bytes=size,
                content_hash="sha256:" + hashlib.sha256(raw).hexdigest(),
            )
            out = FetchOutput(status=DocStatus.SUCCESS, filePathProcessed=real, metadata=meta)
        # pydantic copied `meta` into the model: keep one dict from here on.
        meta = out.metadata
        meta["bytes_read"] = len(raw)
        meta["truncation_applied"] = truncated
        kind, mime = detect_type(data.documentTypeHint, content_type, raw, name)
        out.contentTypeDetected = mime
        if kind is None:
            return self._error(out, DocStatus.ERROR_UNSUPPORTED_FORMAT, f"unsupported content type {mime}")
        if kind == "pdf" and truncated:
            return self._error(
                out,
                DocStatus.ERROR_TOO_LARGE,
                f"the PDF is larger than maxLengthBytes={data.maxLengthBytes} and a cut PDF cannot be parsed",
            )
        try:
            if kind == "html":
                title, text, extra = run_parser(_parse_html, raw, content_type, source_url)
            elif kind == "pdf":
                title, text, extra = run_parser(_parse_pdf, raw)
            else:
                title, text, extra = _parse_text(raw, content_type, kind)
        except _ParseFailed as exc:
            return self._error(out, DocStatus.ERROR_PARSE_FAILED, str(exc))
        meta.update({k: v for k, v in extra.items() if v is not None})
        text = text or ""
        if data.sectionKeywords:
            text, matched = _prioritise(text, data.sectionKeywords)
            meta["passages_matching_keywords"] = matched
        text, cut = _cut_utf8(text, data.maxLengthBytes)
        truncated = truncated or cut
        meta["truncation_applied"] = truncated
        meta["text_bytes"] = len(text.encode("utf-8"))
        out.extractedTitle = title
        out.cleanedTextContent = text
        out.status = DocStatus.PARTIAL_SUCCESS_TRUNCATED if truncated else DocStatus.SUCCESS
        return out

    @staticmethod
    def _error(out: FetchOutput, status: DocStatus, details: str) -> FetchOutput:
        out.status = status
        out.errorDetails = details
        out.cleanedTextContent = None
        return out

    def _fetch(self, data: FetchInput, ctx: ToolContext) -> Any:
        from udm.net import fetch_url, split_url

        url = (data.url or "").strip()
        parts = split_url(url, schemes=None)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return FetchOutput(
                status=DocStatus.ERROR_INVALID_INPUT,
                errorDetails=f"'url' must be an absolute http(s) URL, got {url[:200]!r}",
            )
        return fetch_url(url, ctx.settings, data.maxLengthBytes)

    def _read_file(self, data: FetchInput, ctx: ToolContext) -> Any:
        settings = ctx.settings
        try:
            sandbox = settings.tool_sandbox()
            read = sandbox.read(data.filePath or "", max_bytes=data.maxLengthBytes)
        except FileNotFoundError:
            return FetchOutput(
                status=DocStatus.ERROR_FETCH_FAILED, errorDetails=f"file not found: {data.filePath}"
            )
        except OSError as exc:
            return FetchOutput(
                status=DocStatus.ERROR_FETCH_FAILED,
                errorDetails=f"cannot read {data.filePath}: {exc.strerror or exc}",
            )
        return read.data, read.truncated, read.size, str(read.path)
