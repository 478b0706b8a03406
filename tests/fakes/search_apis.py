"""A loopback server speaking the search and documentation APIs the research tools call, as documented.

- SearXNG: GET /search?q=&format=json&pageno= -> {"results": [{"title", "url", "content", ...}], ...}
  (pages of 8 overlapping by 2, three pages).
- Brave Search: GET /res/v1/web/search?q=&count= with X-Subscription-Token -> {"web": {"results": [...]}}.
- Google Programmable Search: GET /customsearch/v1?key=&cx=&q=&start=&num= -> {"items": [...]}.
- Context7: GET /api/v2/libs/search?libraryName=&query= -> {"results": [{"id", "title", ...}]};
  GET /api/v2/context?libraryId=&query=&type=txt -> text; GET /api/v1/<id>?topic=&tokens= -> text.

`mode[path]` makes a path answer 429 (once, with Retry-After and retryAfterSeconds), 500, 401, or on
/api/v2/context 404 (no route) and 202 (still processing); `requests` records what was asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.loopback import Responder, serve

__all__ = ["SearchApi", "running_search_api"]


@dataclass
class SearchApi:
    """A loopback server speaking SearXNG, Brave, Google Custom Search and Context7 formats."""

    base: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    mode: dict[str, str] = field(default_factory=dict)


def _api_handler(api: SearchApi) -> type[BaseHTTPRequestHandler]:
    class Handler(Responder):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(parts.query).items()}
            api.requests.append({"path": parts.path, "params": q, "headers": dict(self.headers)})
            mode = api.mode.get(parts.path, "ok")
            if mode == "429":
                api.mode[parts.path] = "ok"
                self.send_json(
                    429,
                    {"error": "Too many requests", "status": 429, "retryAfterSeconds": 1},
                    Retry_After="1",
                )
                return
            if mode == "500":
                self.send_json(500, {"error": "internal"})
                return
            if mode == "401":
                self.send_json(401, {"error": "invalid key"})
                return
            if parts.path == "/search":
                # Pages of 8 that overlap by 2, as a metasearch engine's pages do; three pages in all.
                page = int(q.get("pageno", "1"))
                first = (page - 1) * 6
                results = [
                    {
                        "title": f"SearX result {i}",
                        "url": f"https://searx{i}.example/page",
                        "content": f"snippet {i}",
                        "engine": "duckduckgo",
                        "score": 1.0 / (i + 1),
                    }
                    for i in range(first, first + 8 if page <= 3 else first)
                ]
                self.send_json(
                    200,
                    {
                        "query": q.get("q"),
                        "number_of_results": 8,
                        "results": results,
                        "answers": [],
                        "suggestions": [],
                        "infoboxes": [],
                        "unresponsive_engines": [],
                    },
                )
            elif parts.path == "/res/v1/web/search":
                if self.headers.get("X-Subscription-Token") != "brave-secret-key":
                    self.send_json(
                        401, {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}
                    )
                    return
                count = int(q.get("count", "20"))
                results = [
                    {
                        "title": f"Brave {i}",
                        "url": f"https://brave{i}.example/",
                        "description": f"<strong>desc</strong> {i}",
                        "type": "search_result",
                    }
                    for i in range(count)
                ]
                self.send_json(
                    200,
                    {
                        "type": "search",
                        "query": {"original": q.get("q")},
                        "web": {"type": "search", "results": results},
                    },
                )
            elif parts.path == "/customsearch/v1":
                if q.get("key") != "google-secret-key" or q.get("cx") != "cx123":
                    self.send_json(
                        400,
                        {
                            "error": {
                                "code": 400,
                                "message": "API key not valid. Please pass a valid API key.",
                            }
                        },
                    )
                    return
                start = int(q.get("start", "1"))
                num = int(q.get("num", "10"))
                items = [
                    {
                        "kind": "customsearch#result",
                        "title": f"Google {i}",
                        "link": f"https://g{i}.example/",
                        "snippet": f"gsnippet {i}",
                        "displayLink": f"g{i}.example",
                    }
                    for i in range(start, min(start + num, 26))
                ]
                self.send_json(
                    200,
                    {
                        "kind": "customsearch#search",
                        "items": items,
                        "queries": {"request": [{"startIndex": start, "count": num}]},
                    },
                )
            elif parts.path == "/api/v2/libs/search":
                name = q.get("libraryName", "").lower()
                if name == "nosuchlib":
                    self.send_json(200, {"results": []})
                    return
                self.send_json(
                    200,
                    {
                        "results": [
                            {
                                "id": f"/acme/{name}",
                                "title": name.title(),
                                "description": "A library",
                                "totalSnippets": 120,
                                "trustScore": 9,
                                "versions": ["v1.0.0"],
                            },
                            {
                                "id": f"/other/{name}-fork",
                                "title": f"{name} fork",
                                "description": "fork",
                                "totalSnippets": 3,
                                "trustScore": 2,
                            },
                        ]
                    },
                )
            elif parts.path == "/api/v2/context":
                lib = q.get("libraryId", "")
                if mode == "404":
                    self.send_json(404, {"error": "no route"})
                elif mode == "202":
                    self.send_json(202, {"message": "Library is being processed"})
                elif lib == "/acme/missing":
                    self.send_json(404, {"error": "Library not found"})
                else:
                    doc = "\n\n".join(
                        f"### Snippet {i} about {q.get('query')}\nSource: https://acme.example/{i}\n"
                        + "word " * 200
                        for i in range(10)
                    )
                    self.send_text(200, doc)
            elif parts.path.startswith("/api/v1/"):
                self.send_text(
                    200, f"v1 docs for {parts.path[7:]} topic={q.get('topic')} tokens={q.get('tokens')}"
                )
            else:
                self.send_json(404, {"error": "no route"})

    return Handler


@contextmanager
def running_search_api() -> Iterator[SearchApi]:
    """The fake search/Context7 API server on 127.0.0.1."""
    api = SearchApi(base="")
    with serve(_api_handler(api)) as server:
        api.base = server.base
        yield api
