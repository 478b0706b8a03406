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

import hashlib
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from tasks.base import ErrorTable, Failure, Permission, Tool, ToolContext, ToolInput
from tasks.document_parsers import (
    DocType,
    _ParseFailed,
    cut_utf8,
    detect_type,
    parse_html,
    parse_pdf,
    parse_text,
)
from udm.errors import InvalidPathError, InvalidURLError, PathOutsideError
from udm.guard import tool_sandbox
from udm.net import FetchError, run_parser
from udm.research import rank_passages, split_passages, terms

__all__ = ["DocStatus", "DocType", "DocumentFetchingParsingTool", "FetchInput", "FetchOutput", "detect_type"]


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


# What a source gave: the output begun for it, the bytes (maybe cut), whether they were cut, their
# Content-Type, the name their type may be guessed from, and the URL links in them resolve against.
_Obtained = tuple[FetchOutput, bytes, bool, str, str, str | None]


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
        got = self._from_url(data, ctx) if data.url is not None else self._from_file(data, ctx)
        if isinstance(got, FetchOutput):
            return got
        out, raw, truncated, content_type, name, source_url = got
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
                title, text, extra = run_parser(parse_html, raw, content_type, source_url)
            elif kind == "pdf":
                title, text, extra = run_parser(parse_pdf, raw)
            else:
                title, text, extra = parse_text(raw, content_type, kind)
        except _ParseFailed as exc:
            return self._error(out, DocStatus.ERROR_PARSE_FAILED, str(exc))
        meta.update({k: v for k, v in extra.items() if v is not None})
        text = text or ""
        if data.sectionKeywords:
            text, matched = _prioritise(text, data.sectionKeywords)
            meta["passages_matching_keywords"] = matched
        text, cut = cut_utf8(text, data.maxLengthBytes)
        truncated = truncated or cut
        meta["truncation_applied"] = truncated
        meta["text_bytes"] = len(text.encode("utf-8"))
        out.extractedTitle = title
        out.cleanedTextContent = text
        out.status = DocStatus.PARTIAL_SUCCESS_TRUNCATED if truncated else DocStatus.SUCCESS
        return out

    def _from_url(self, data: FetchInput, ctx: ToolContext) -> FetchOutput | _Obtained:
        """The fetched body and the output begun for it, or the output of a failed fetch."""
        fetched = self._fetch(data, ctx)
        if isinstance(fetched, FetchOutput):
            return fetched
        body = fetched
        raw, truncated = body.content, body.truncated
        meta: dict[str, Any] = {
            "fetched_at": body.fetched_at,
            "final_url": body.final_url,
            "redirects": body.redirects,
            "from_cache": body.from_cache,
            "http_status": body.status_code,
            "content_hash": body.content_hash,
            "original_size_bytes": body.declared_length
            if body.declared_length is not None
            else (None if truncated else len(raw)),
        }
        # pydantic copies `meta` into the model: the caller goes on with out.metadata.
        out = FetchOutput(status=DocStatus.SUCCESS, urlFetched=body.final_url, metadata=meta)
        return out, raw, truncated, body.content_type, body.final_url, body.final_url

    def _from_file(self, data: FetchInput, ctx: ToolContext) -> FetchOutput | _Obtained:
        """The file's bytes (through the tools' sandbox) and the output begun for them, or an error output."""
        read = self._read_file(data, ctx)
        if isinstance(read, FetchOutput):
            return read
        raw, truncated, size, real = read
        meta = {"original_size_bytes": size, "content_hash": "sha256:" + hashlib.sha256(raw).hexdigest()}
        out = FetchOutput(status=DocStatus.SUCCESS, filePathProcessed=real, metadata=meta)
        return out, raw, truncated, "", real, None

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
            sandbox = tool_sandbox(settings)
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
