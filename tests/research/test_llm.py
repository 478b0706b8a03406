"""The LLM synthesizer against a loopback server speaking the OpenAI chat-completions and Anthropic
Messages APIs with recorded replies (tests/research/llm_replies): both protocols, 429 with Retry-After,
5xx, an unreachable endpoint, and the citation checks on what the model said."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.research_report import Source, render_appendix
from tasks.llm_synth import ANTHROPIC_VERSION, LLMError, LLMSynthesizer, chat
from tests.fakes.llm_apis import LlmApi as Api
from tests.fakes.llm_apis import running_llm_api
from udm.config import Settings, load_settings
from udm.research import Evidence, verify_claims

REPLIES = Path(__file__).parent / "llm_replies"
ARTICLE_TEXT = (
    "DuckDB ships a full-text search extension that builds an inverted index over a table and ranks\n"
    "matches with BM25. The index is created with a pragma and queried with a scalar macro.\n\n"
    "## Ranking with BM25\n\n"
    "The match_bm25 function returns a score per row; higher is better. Parameters k and b tune term\n"
    "saturation and length normalisation, just as in the classic Okapi formula.\n\n"
    "## Offline installation\n\n"
    "Extensions are normally downloaded on INSTALL. Without network access the extension file has to be\n"
    "loaded from a local path, which pins the DuckDB version the extension was built for."
)
NOTES_TEXT = "Notes on caching: the fetch cache keeps response bodies for conditional requests later."
EVIDENCE = [
    Evidence(1, "DuckDB full-text search in practice", "https://a.example/fts", ARTICLE_TEXT),
    Evidence(2, "Notes", "https://b.example/notes", NOTES_TEXT),
]
QUESTION = "How does DuckDB rank matches?"


@pytest.fixture
def llm_api() -> Iterator[Api]:
    """The fake LLM endpoint (tests/fakes/llm_apis.py)."""
    with running_llm_api() as api:
        yield api


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    for sub in ("docs/udm", "state", "logs"):
        (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    return load_settings(cwd=tmp_path, research_synthesizer="llm", retry_max_wait_s=5.0, **overrides)


def _reply(name: str) -> bytes:
    return (REPLIES / name).read_bytes()


def test_openai_compatible_endpoint(llm_api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-key")
    settings = _settings(
        tmp_path, llm_url=llm_api.base + "/v1", llm_model="llama3.1", llm_max_output_tokens=700
    )
    llm_api.queue("/v1/chat/completions", 200, _reply("openai_chat_completion.json"))
    synth = LLMSynthesizer(settings)
    synthesis = synth.synthesize(QUESTION, [QUESTION], EVIDENCE)
    verify_claims(synthesis, EVIDENCE)

    path, headers, body = llm_api.requests[0]
    assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer sk-test-openai-key"
    assert body["model"] == "llama3.1" and body["max_tokens"] == 700
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "[1] DuckDB full-text search in practice" in body["messages"][1]["content"]

    assert [c.text for c in synthesis.answer] == [
        "The match_bm25 function gives each row a BM25 score, and a higher score is better."
    ]
    ((sub, claims),) = synthesis.groups
    assert sub == QUESTION and [(c.text, c.cites) for c in claims] == [
        ("The parameters k and b tune term saturation and length normalisation.", [1])
    ]
    reasons = {c.text: c.reason for c in synthesis.unsupported}
    assert reasons == {
        "DuckDB was first released by the Apache Software Foundation in 1999.": "no sentence of [1] supports it",
        "The index is created with a pragma and queried with a scalar macro.": "its quote does not occur in [2]",
        "Ranking results are cached forever.": "cites no source",
    }
    sources = [
        Source(n=e.n, url=e.url, kind="url", origin="seed", status="SUCCESS", title=e.title, text=e.text)
        for e in EVIDENCE
    ]
    md = render_appendix("APP-DUCKDB-RANK-RESEARCH-V1", QUESTION, sources, synthesis)
    published = md.split("## Unsupported claims", 1)[0]
    assert "Apache Software Foundation" not in published and "Apache Software Foundation" in md
    assert 'synthesizer: "llm (openai: llama3.1)"' in md


def test_anthropic_messages_api(llm_api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    settings = _settings(
        tmp_path, llm_protocol="anthropic", llm_url=llm_api.base, llm_model="claude-sonnet-4-5"
    )
    llm_api.queue("/v1/messages", 200, _reply("anthropic_message.json"))
    synthesis = LLMSynthesizer(settings).synthesize(QUESTION, [QUESTION], EVIDENCE)
    verify_claims(synthesis, EVIDENCE)

    path, headers, body = llm_api.requests[0]
    assert path == "/v1/messages"
    assert headers["x-api-key"] == "sk-ant-test-key" and headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in headers
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == settings.llm_max_output_tokens
    assert (
        body["system"].startswith("You answer research questions") and body["messages"][0]["role"] == "user"
    )

    # The quote spans a line break in the source: it is found after whitespace normalisation.
    assert [c.cites for c in synthesis.answer] == [[1]]
    ((_, claims),) = synthesis.groups
    # [2] does not say it: that citation is dropped, the claim stands on [1].
    assert [(c.text, c.cites) for c in claims] == [
        ("Without network access the extension is loaded from a local path.", [1])
    ]
    assert [c.reason for c in synthesis.unsupported] == ["its quote does not occur in [1]"]


def test_anthropic_without_a_key_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("UDM_ANTHROPIC_API_KEY", raising=False)
    settings = _settings(tmp_path, llm_protocol="anthropic", llm_url="http://127.0.0.1:9")
    with pytest.raises(LLMError, match="no Anthropic API key"):
        LLMSynthesizer(settings).synthesize(QUESTION, [QUESTION], EVIDENCE)


def test_429_waits_what_retry_after_asks(llm_api: Api, tmp_path: Path) -> None:
    settings = _settings(tmp_path, llm_url=llm_api.base + "/v1", llm_retries=2)
    route = "/v1/chat/completions"
    llm_api.queue(route, 429, _reply("openai_rate_limited.json"), Retry_After="3")
    llm_api.queue(route, 200, _reply("openai_chat_completion.json"))
    waits: list[float] = []
    text = chat(settings, "system", "user", sleep=waits.append)
    assert waits == [3.0] and len(llm_api.requests) == 2 and text.startswith('{"answer"')
    # A longer Retry-After is capped by retry_max_wait_s.
    llm_api.queue(route, 429, _reply("openai_rate_limited.json"), Retry_After="600")
    llm_api.queue(route, 200, _reply("openai_chat_completion.json"))
    waits.clear()
    chat(settings, "system", "user", sleep=waits.append)
    assert waits == [5.0]


def test_5xx_is_retried_with_backoff_then_reported(
    llm_api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    settings = _settings(tmp_path, llm_protocol="anthropic", llm_url=llm_api.base, llm_retries=2)
    llm_api.queue("/v1/messages", 529, _reply("anthropic_overloaded.json"))
    llm_api.queue("/v1/messages", 503, "upstream unavailable")
    llm_api.queue("/v1/messages", 200, _reply("anthropic_message.json"))
    waits: list[float] = []
    assert "answer" in chat(settings, "s", "u", sleep=waits.append)
    assert len(waits) == 2 and 0.5 <= waits[0] < waits[1] <= 1.2  # exponential backoff with jitter
    for _ in range(3):
        llm_api.queue("/v1/messages", 500, "boom")
    with pytest.raises(LLMError, match="failed 3 times; last: HTTP 500: boom"):
        chat(settings, "s", "u", sleep=lambda s: None)
    llm_api.queue("/v1/messages", 401, '{"type":"error","error":{"type":"authentication_error"}}')
    with pytest.raises(LLMError, match="refused the request: HTTP 401"):
        chat(settings, "s", "u", sleep=lambda s: None)


def test_unreachable_endpoint_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: the connection is refused
        settings = _settings(tmp_path, llm_url=f"http://127.0.0.1:{port}/v1")
        with pytest.raises(
            LLMError, match=f"cannot reach the LLM endpoint http://127.0.0.1:{port}/v1/chat/completions"
        ):
            LLMSynthesizer(settings).synthesize(QUESTION, [QUESTION], EVIDENCE)


def test_the_token_budget_bounds_the_prompt(llm_api: Api, tmp_path: Path) -> None:
    long = [Evidence(n, f"Source {n}", f"https://s{n}.example/", ARTICLE_TEXT) for n in range(1, 40)]
    settings = _settings(
        tmp_path, llm_url=llm_api.base + "/v1", llm_token_budget=1000, llm_max_output_tokens=500
    )
    llm_api.queue("/v1/chat/completions", 200, _reply("openai_chat_completion.json"))
    LLMSynthesizer(settings).synthesize(QUESTION, [QUESTION], long)
    _, _, body = llm_api.requests[0]
    prompt = sum(len(m["content"]) for m in body["messages"])
    assert prompt <= (1000 - 500) * 4
    tight = _settings(
        tmp_path, llm_url=llm_api.base + "/v1", llm_token_budget=1000, llm_max_output_tokens=900
    )
    with pytest.raises(LLMError, match="leaves no room for any source"):
        LLMSynthesizer(tight).synthesize(QUESTION, [QUESTION], long)


def test_a_reply_that_is_not_json_is_a_clear_error(llm_api: Api, tmp_path: Path) -> None:
    settings = _settings(tmp_path, llm_url=llm_api.base + "/v1")
    reply = json.loads(_reply("openai_chat_completion.json"))
    reply["choices"][0]["message"]["content"] = "Sure! DuckDB uses BM25."
    llm_api.queue("/v1/chat/completions", 200, json.dumps(reply))
    with pytest.raises(LLMError, match="holds no JSON object"):
        LLMSynthesizer(settings).synthesize(QUESTION, [QUESTION], EVIDENCE)


@pytest.mark.prefect
@pytest.mark.slow
def test_research_flow_with_an_llm_writes_checked_claims_or_fails_with_the_reason(
    prefect_server: None, site: Any, llm_api: Api, workspace: Path
) -> None:
    from prefect import get_client

    from flows.research import ResearchRequest, run_research

    settings = load_settings(
        cwd=workspace,
        fetch_allow=["127.0.0.1"],
        fetch_host_delay_s=0.0,
        approval_policy="full_auto",
        research_synthesizer="llm",
        llm_url=llm_api.base + "/v1",
        llm_retries=0,
    )
    request = ResearchRequest(question=QUESTION, urls=[site.base + "/article.html"], max_sources=1)
    llm_api.queue("/v1/chat/completions", 200, _reply("openai_chat_completion.json"))
    result = run_research(request, settings)
    assert result.status == "written", result.message
    assert result.synthesizer == "llm (openai: llama3.1)" and result.findings == 2
    assert {u["reason"] for u in result.unsupported} == {
        "no sentence of [1] supports it",
        "[2] is not a usable source",
        "cites no source",
    }
    text = (settings.udm_root / result.appendix_path).read_text(encoding="utf-8")
    assert "## Unsupported claims" in text and "match_bm25 function gives each row" in text

    # The per-source results are a table artifact, one row per source.
    with get_client(sync_client=True) as client:
        table = client._client.get(f"/artifacts/{result.appendix_id.lower()}-sources/latest").json()
    rows = json.loads(table["data"]) if isinstance(table["data"], str) else table["data"]
    assert [(r["n"], r["status"], r["url"]) for r in rows] == [(1, "ok", site.base + "/article.html")]

    # A sentence that would open a fence breaks the appendix's block structure: Failed before the write.
    reply = json.loads(_reply("openai_chat_completion.json"))
    draft = json.loads(reply["choices"][0]["message"]["content"])
    draft["answer"][0]["text"] = (
        "```python The match_bm25 function returns a score per row; higher is better."
    )
    draft["answer"][0].pop("quote")
    reply["choices"][0]["message"]["content"] = json.dumps(draft)
    llm_api.queue("/v1/chat/completions", 200, json.dumps(reply))
    broken = run_research(request.model_copy(update={"new_version_if_unchanged": True}), settings)
    assert broken.status == "failed" and "does not parse back to the blocks" in broken.message
    assert not (settings.udm_root / broken.appendix_path).exists()

    # The endpoint goes away: the run ends Failed, nothing is written, the reason is in its artifacts.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        failed = run_research(
            request.model_copy(update={"new_version_if_unchanged": True}),
            settings.model_copy(update={"llm_url": dead}),
        )
    assert failed.status == "failed" and "cannot reach the LLM endpoint" in failed.message
    assert not (settings.udm_root / failed.appendix_path).exists()
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(failed.flow_run_id)  # type: ignore[arg-type]
        assert run.state is not None and run.state.is_failed()
        slug = failed.appendix_id.lower()
        art = client._client.get(f"/artifacts/{slug}-write-refused/latest").json()
    assert "cannot reach the LLM endpoint" in art["data"]


def test_each_sentence_of_a_claim_is_checked_on_its_own(llm_api: Api, tmp_path: Path) -> None:
    settings = _settings(tmp_path, llm_url=llm_api.base + "/v1")
    reply = json.loads(_reply("openai_chat_completion.json"))
    two = {
        "answer": [
            {
                "text": "The match_bm25 function returns a score per row. It was invented at CERN in 1989.",
                "cites": [1],
            }
        ],
        "findings": [],
    }
    reply["choices"][0]["message"]["content"] = json.dumps(two)
    llm_api.queue("/v1/chat/completions", 200, json.dumps(reply))
    synthesis = LLMSynthesizer(settings).synthesize(QUESTION, [QUESTION], EVIDENCE)
    verify_claims(synthesis, EVIDENCE)
    assert [c.text for c in synthesis.answer] == ["The match_bm25 function returns a score per row."]
    assert [c.text for c in synthesis.unsupported] == ["It was invented at CERN in 1989."]
    assert synthesis.groups == [(QUESTION, [])]
