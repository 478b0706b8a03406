"""context7DocumentationTool: resolve a library name to a Context7 ID, and fetch its documentation.

Context7's HTTP API (base URL `settings.context7_url`, `Authorization: Bearer <key>` when a key is set):
- resolve:  `GET /api/v2/libs/search?libraryName=&query=` -> `{"results": [{"id", "title", ...}]}`
            (a bare list is accepted too); the best match is an exact name match, else the first;
- docs:     `GET /api/v2/context?libraryId=&query=&type=txt` -> Markdown/plain text; when that
            endpoint is missing (404/405 from an older server) `GET /api/v1/{id}?topic=&tokens=&type=txt`.
HTTP 202 means Context7 has not processed the library yet, 429 asks to wait (Retry-After or the
body's `retryAfterSeconds`): both are transient, so flows retry them; 5xx and network errors too.

`maxTokens` is enforced here with an estimate of 4 characters per token (the usual figure for English
text and code with GPT-style tokenizers): the text is cut at the last snippet boundary (or line)
before `maxTokens * 4` characters.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal
from urllib.parse import quote

import httpx
from pydantic import BaseModel, Field, model_validator

from tasks.base import Permission, Tool, ToolContext, ToolInput, ToolStatusError
from tasks.secrets import api_key, redact
from udm.config import Settings
from udm.net import api_client

__all__ = [
    "CHARS_PER_TOKEN",
    "Context7DocumentationTool",
    "Context7Input",
    "Context7Output",
    "Context7Status",
]

CHARS_PER_TOKEN = 4
_LIBRARY_ID = r"^/[^/\s]+/[^/\s]+(/[^/\s]+)?$"


class Context7Status(StrEnum):
    """Outcome of one Context7 call."""

    SUCCESS = "SUCCESS"
    ERROR_MCP_CONNECTION = "ERROR_MCP_CONNECTION"
    ERROR_LIBRARY_NOT_FOUND = "ERROR_LIBRARY_NOT_FOUND"
    ERROR_DOCS_NOT_FOUND = "ERROR_DOCS_NOT_FOUND"
    ERROR_INVALID_INPUT = "ERROR_INVALID_INPUT"
    ERROR_UNKNOWN = "ERROR_UNKNOWN"


class Context7Input(ToolInput):
    """Resolve a library name, or get documentation for a Context7 library ID."""

    action: Literal["resolve_library_id", "get_library_docs"] = Field(description="What to do.")
    libraryName: str | None = Field(
        default=None, min_length=1, max_length=200, description="Library to look up (resolve_library_id)."
    )
    context7CompatibleLibraryID: str | None = Field(
        default=None,
        pattern=_LIBRARY_ID,
        description="Context7 ID such as /vercel/next.js or /owner/repo/version (get_library_docs).",
    )
    topic: str | None = Field(
        default=None, min_length=1, max_length=500, description="Focus of the documentation, e.g. routing."
    )
    maxTokens: int = Field(
        default=10_000,
        ge=100,
        le=200_000,
        description="Most tokens of documentation (estimated, 4 chars each).",
    )

    @model_validator(mode="after")
    def _needs(self) -> Context7Input:
        if self.action == "resolve_library_id" and not self.libraryName:
            raise ValueError("'libraryName' is required for resolve_library_id")
        if self.action == "get_library_docs" and not self.context7CompatibleLibraryID:
            raise ValueError("'context7CompatibleLibraryID' is required for get_library_docs")
        return self


class Context7Output(BaseModel):
    """What Context7 answered."""

    actionPerformed: Literal["resolve_library_id", "get_library_docs"] = Field(description="The action.")
    status: Context7Status = Field(description="Outcome.")
    libraryNameQueried: str | None = Field(default=None, description="The library name looked up.")
    resolvedLibraryID: str | None = Field(default=None, description="The Context7 ID found.")
    context7LibraryIDQueried: str | None = Field(
        default=None, description="The ID documentation was asked for."
    )
    documentationTopic: str | None = Field(default=None, description="The topic asked for.")
    retrievedDocumentation: str | None = Field(
        default=None, description="The documentation text; null on error."
    )
    candidates: list[dict[str, Any]] = Field(
        default_factory=list, description="Other matches of a resolve (id, title, trustScore, totalSnippets)."
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="endpoint used, estimated tokens, truncation applied."
    )
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")


def cap_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """`text` cut to about `max_tokens` tokens (4 chars each) at a snippet or line boundary."""
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n---", 0, limit)
    if cut < limit // 2:
        cut = text.rfind("\n\n", 0, limit)
    if cut < limit // 2:
        cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    return text[:cut].rstrip(), True


def _retry(message: str, retry_after: float | None, status: Context7Status) -> ToolStatusError:
    """A failure worth retrying (after `retry_after` seconds when Context7 said so)."""
    return ToolStatusError(status, message, transient=True, retry_after=retry_after)


def _request(settings: Settings, path: str, params: dict[str, Any]) -> httpx.Response:
    from udm.net import parse_retry_after

    key = api_key(settings, "context7")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = settings.context7_url.rstrip("/") + path
    try:
        resp = api_client(settings).get(url, params=params, headers=headers)
    except httpx.HTTPError as exc:
        raise _retry(
            redact(f"Context7 unreachable at {settings.context7_url}: {type(exc).__name__}: {exc}"),
            None,
            Context7Status.ERROR_MCP_CONNECTION,
        ) from exc
    if resp.status_code == 429:
        wait = parse_retry_after(resp.headers.get("retry-after"))
        if wait is None:
            try:
                wait = float(resp.json().get("retryAfterSeconds"))
            except (ValueError, TypeError, AttributeError):
                wait = None
        raise _retry("Context7 rate limit reached (HTTP 429)", wait, Context7Status.ERROR_MCP_CONNECTION)
    if resp.status_code >= 500:
        raise _retry(
            f"Context7 failed with HTTP {resp.status_code}", None, Context7Status.ERROR_MCP_CONNECTION
        )
    return resp


def _resolve(settings: Settings, data: Context7Input, out: Context7Output) -> Context7Output:
    name = data.libraryName or ""
    resp = _request(settings, "/api/v2/libs/search", {"libraryName": name, "query": data.topic or name})
    if resp.status_code in (401, 403):
        return _fail(
            out,
            Context7Status.ERROR_MCP_CONNECTION,
            f"Context7 refused the API key (HTTP {resp.status_code})",
        )
    if resp.status_code >= 400:
        return _fail(out, Context7Status.ERROR_UNKNOWN, f"Context7 search failed: HTTP {resp.status_code}")
    try:
        body = resp.json()
    except ValueError:
        return _fail(
            out, Context7Status.ERROR_UNKNOWN, "Context7 search answered with something that is not JSON"
        )
    items = body.get("results") if isinstance(body, dict) else body
    libs = [i for i in (items or []) if isinstance(i, dict) and isinstance(i.get("id"), str)]
    if not libs:
        return _fail(
            out, Context7Status.ERROR_LIBRARY_NOT_FOUND, f"Context7 knows no library matching '{name}'"
        )
    wanted = name.strip().lower()
    exact = [lib for lib in libs if str(lib.get("title") or lib.get("name") or "").strip().lower() == wanted]
    best = (exact or libs)[0]
    out.resolvedLibraryID = best["id"]
    out.candidates = [
        {k: lib.get(k) for k in ("id", "title", "description", "trustScore", "totalSnippets") if k in lib}
        for lib in libs[:10]
    ]
    return out


def _docs(settings: Settings, data: Context7Input, out: Context7Output) -> Context7Output:
    lib = data.context7CompatibleLibraryID or ""
    query = data.topic or lib.strip("/").split("/")[-1]
    resp = _request(settings, "/api/v2/context", {"libraryId": lib, "query": query, "type": "txt"})
    endpoint = "v2/context"
    if resp.status_code in (404, 405, 410) and "not found" not in resp.text[:200].lower():
        # An older server without /api/v2/context: the v1 endpoint takes topic and tokens directly.
        params: dict[str, Any] = {"tokens": data.maxTokens, "type": "txt"}
        if data.topic:
            params["topic"] = data.topic
        resp = _request(settings, "/api/v1/" + quote(lib.lstrip("/"), safe="/"), params)
        endpoint = "v1"
    if resp.status_code == 202:
        raise _retry(
            f"Context7 has not processed {lib} yet (HTTP 202); try again later",
            10.0,
            Context7Status.ERROR_DOCS_NOT_FOUND,
        )
    if resp.status_code in (401, 403):
        return _fail(
            out,
            Context7Status.ERROR_MCP_CONNECTION,
            f"Context7 refused the API key (HTTP {resp.status_code})",
        )
    if resp.status_code == 404:
        return _fail(out, Context7Status.ERROR_LIBRARY_NOT_FOUND, f"Context7 has no library {lib}")
    if resp.status_code >= 400:
        return _fail(
            out, Context7Status.ERROR_UNKNOWN, f"Context7 docs request failed: HTTP {resp.status_code}"
        )
    text = resp.text.strip()
    if not text or text.lower().startswith(("no content", "no documentation")):
        return _fail(
            out, Context7Status.ERROR_DOCS_NOT_FOUND, f"Context7 has no documentation for {lib} on '{query}'"
        )
    text, cut = cap_tokens(text, data.maxTokens)
    out.retrievedDocumentation = text
    out.metadata = {
        "endpoint": endpoint,
        "estimated_tokens": -(-len(text) // CHARS_PER_TOKEN),
        "truncation_applied": cut,
        "chars_per_token_estimate": CHARS_PER_TOKEN,
    }
    return out


def _fail(out: Context7Output, status: Context7Status, message: str) -> Context7Output:
    out.status = status
    out.errorDetails = redact(message)
    out.retrievedDocumentation = None
    return out


class Context7DocumentationTool(Tool[Context7Input, Context7Output]):
    """Resolve library names to Context7 IDs and fetch up-to-date library documentation."""

    name: ClassVar[str] = "context7DocumentationTool"
    description: ClassVar[str] = (
        "Looks up a software library in Context7 and returns its Context7 ID (resolve_library_id), or "
        "fetches current documentation and code examples for a Context7 ID, optionally focused on a "
        "topic and limited to a number of tokens (get_library_docs)."
    )
    Input: ClassVar[type[BaseModel]] = Context7Input
    Output: ClassVar[type[BaseModel]] = Context7Output
    permission: ClassVar[Permission] = Permission.SAFE

    def execute(self, data: Context7Input, ctx: ToolContext) -> Context7Output:
        """Call the Context7 API for the requested action."""
        out = Context7Output(
            actionPerformed=data.action,
            status=Context7Status.SUCCESS,
            libraryNameQueried=data.libraryName,
            context7LibraryIDQueried=data.context7CompatibleLibraryID,
            documentationTopic=data.topic,
        )
        # A failure worth retrying raises a ToolStatusError; call_tool makes it this tool's `failed` Output.
        if data.action == "resolve_library_id":
            return _resolve(ctx.settings, data, out)
        return _docs(ctx.settings, data, out)

    def error_details(self, exc: BaseException) -> str:
        """Context7's message without any key it may hold."""
        return redact(str(exc))

    def failed(
        self, data: Context7Input, ctx: ToolContext, status: str, details: str, **fields: Any
    ) -> Context7Output:
        """A failed call still names what was asked."""
        return Context7Output(
            actionPerformed=data.action,
            status=Context7Status(status),
            libraryNameQueried=data.libraryName,
            context7LibraryIDQueried=data.context7CompatibleLibraryID,
            documentationTopic=data.topic,
            errorDetails=details,
            **fields,
        )
