"""The LLM synthesizer: the research answer written by a model, behind `udm.research.synthesis.Synthesizer`.

Two wire protocols, through httpx exactly as their public APIs document them:
- `openai`: POST `{llm_url}/chat/completions` (`Authorization: Bearer <key>` when a key is set;
  `{"model", "messages", "max_tokens", "temperature"}`; the reply in `choices[0].message.content`).
  Any OpenAI-compatible server answers it: Ollama, vLLM, llama.cpp's server.
- `anthropic`: POST `{llm_url}/v1/messages` (`x-api-key`, `anthropic-version: 2023-06-01`;
  `{"model", "max_tokens", "system", "messages"}`; the reply in the `text` blocks of `content`).

API keys come from tasks/secrets.py (`UDM_OPENAI_API_KEY` / `OPENAI_API_KEY`, `UDM_ANTHROPIC_API_KEY`
/ `ANTHROPIC_API_KEY`, or a Prefect Secret block). The token budget bounds one call: the evidence in the
prompt is cut (at 4 characters a token) to leave room for `llm_max_output_tokens`. 429, 5xx and 529
(overloaded) are retried `llm_retries` times with exponential backoff, waiting what `Retry-After` asks
when the server sends it (capped by `retry_max_wait_s`). An unreachable endpoint, a refused key or a
reply that is not the JSON asked for raise `LLMError` with a clear message (keys redacted).

The model answers in JSON: claims with the numbers of the sources they rest on and, where it can,
the verbatim span it relied on; `udm.research.synthesis.verify_claims` then keeps only what checks out.
"""

from __future__ import annotations

import json
import random
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from tasks.secrets import api_key, redact
from udm.config import Settings
from udm.datalimits import DataLimitError, check_json
from udm.errors import ToolError
from udm.research import Claim, Evidence, ExtractiveSynthesizer, Synthesis

__all__ = ["ANTHROPIC_VERSION", "LLMError", "LLMSynthesizer", "chat"]

ANTHROPIC_VERSION = "2023-06-01"
_RETRY_CODES = frozenset({429, 500, 502, 503, 504, 529})
_CHARS_PER_TOKEN = 4

_SYSTEM = (
    "You answer research questions for a technical manual using only the numbered sources given. "
    "Reply with one JSON object and nothing else, of this shape: "
    '{"answer": [{"text": "...", "cites": [1], "quote": "..."}], '
    '"findings": [{"sub_question": "...", "claims": [{"text": "...", "cites": [2], "quote": "..."}]}]}. '
    '"answer" holds one to three sentences that directly answer the question. "findings" holds one '
    "entry per sub-question, in the order given, each with a few claims. Every claim is one sentence "
    'and cites the numbers of the sources that state it; "quote" is a short span copied verbatim '
    "from the first cited source. Do not state anything the sources do not say."
)


class LLMError(ToolError):
    """The LLM endpoint could not give an answer (unreachable, refused, or an unusable reply)."""


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _request(settings: Settings, system: str, user: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    base = settings.llm_url.rstrip("/")
    if settings.llm_protocol == "anthropic":
        key = api_key(settings, "anthropic")
        if not key:
            raise LLMError(
                "no Anthropic API key: set UDM_ANTHROPIC_API_KEY or ANTHROPIC_API_KEY "
                "(or a Prefect Secret block udm-anthropic-api-key with UDM_SECRETS_FROM_PREFECT=true)"
            )
        body: dict[str, Any] = {
            "model": settings.llm_model,
            "max_tokens": settings.llm_max_output_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        headers = {
            "x-api-key": key,
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
        }
        return f"{base}/v1/messages", body, headers
    body = {
        "model": settings.llm_model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "max_tokens": settings.llm_max_output_tokens,
        "temperature": 0,
    }
    headers = {"content-type": "application/json"}
    if key := api_key(settings, "openai"):
        headers["authorization"] = f"Bearer {key}"
    return f"{base}/chat/completions", body, headers


def _text_of(settings: Settings, data: Any) -> str:
    try:
        if settings.llm_protocol == "anthropic":
            return "".join(b["text"] for b in data["content"] if b.get("type") == "text")
        return str(data["choices"][0]["message"]["content"] or "")
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMError(
            f"the {settings.llm_protocol} reply lacks its text ({type(exc).__name__}: {exc})"
        ) from None


def chat(settings: Settings, system: str, user: str, *, sleep: Any = time.sleep) -> str:
    """One completion from the configured endpoint, retried on 429/5xx; the reply's text."""
    url, body, headers = _request(settings, system, user)
    attempts = settings.llm_retries + 1
    last = ""
    with httpx.Client(timeout=settings.llm_timeout_s, trust_env=False) as client:
        for attempt in range(1, attempts + 1):
            try:
                resp = client.post(url, json=body, headers=headers)
            except httpx.TimeoutException:
                last = f"no answer within {settings.llm_timeout_s:g} s"
            except httpx.HTTPError as exc:
                raise LLMError(
                    redact(f"cannot reach the LLM endpoint {url}: {type(exc).__name__}: {exc}")
                ) from None
            else:
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                    except ValueError:
                        raise LLMError(f"the LLM endpoint {url} answered 200 with no JSON body") from None
                    return _text_of(settings, data)
                detail = redact(resp.text[:300])
                last = f"HTTP {resp.status_code}: {detail}"
                if resp.status_code not in _RETRY_CODES:
                    raise LLMError(f"the LLM endpoint {url} refused the request: {last}")
                wait = _retry_after(resp)
                if wait is not None and attempt < attempts:
                    sleep(min(wait, settings.retry_max_wait_s))
                    continue
            if attempt < attempts:
                backoff = min(settings.retry_max_wait_s, 0.5 * 2 ** (attempt - 1))
                sleep(backoff * (1 + 0.2 * random.random()))
    raise LLMError(f"the LLM endpoint {url} failed {attempts} times; last: {last}")


def _json_object(text: str) -> dict[str, Any]:
    text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise LLMError(f"the model's reply holds no JSON object: {text[:200]!r}")
    try:
        # The reply may echo fetched pages: its nesting is measured before json.loads recurses into it.
        check_json(text[start : end + 1], what="the model's reply")
        data = json.loads(text[start : end + 1])
    except DataLimitError as exc:
        raise LLMError(f"the model's reply is refused: {exc}") from None
    except json.JSONDecodeError as exc:
        raise LLMError(f"the model's reply is not valid JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(data, dict):
        raise LLMError("the model's reply is not a JSON object")
    return data


def _claims(items: Any) -> list[Claim]:
    out: list[Claim] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            continue
        cites = [int(n) for n in item.get("cites") or [] if isinstance(n, int | str) and str(n).isdigit()]
        quote = item.get("quote") if isinstance(item.get("quote"), str) and item["quote"].strip() else None
        # Every sentence is a claim of its own, checked on its own: a supported first sentence must
        # not carry an unsupported second one into the appendix.
        sentences = [
            p.strip() for p in _SENTENCES.split(re.sub(r"\s+", " ", item["text"]).strip()) if p.strip()
        ]
        for k, sentence in enumerate(sentences):
            out.append(Claim(sentence, list(cites), quote if k == 0 else None))
    return out


_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


class LLMSynthesizer:
    """The answer written by a chat model from the best passages, every claim with its citations."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.name = f"llm ({settings.llm_protocol}: {settings.llm_model})"

    def _evidence_prompt(self, question: str, sub_questions: list[str], evidence: list[Evidence]) -> str:
        budget = (self.settings.llm_token_budget - self.settings.llm_max_output_tokens) * _CHARS_PER_TOKEN
        # The extractive ranking picks what the model reads: the sentences that best answer each part.
        picked = ExtractiveSynthesizer(answer_sentences=4, per_group=12).synthesize(
            question, sub_questions, evidence
        )
        by_source: dict[int, list[str]] = {}
        for claim in picked.claims():
            by_source.setdefault(claim.cites[0], []).append(claim.text)
        titles = {e.n: e.title or e.url for e in evidence}
        head = (
            f"Question: {question}\nSub-questions:\n"
            + "\n".join(f"- {q}" for q in sub_questions)
            + "\n\nSources:\n"
        )
        parts: list[str] = []
        used = len(head) + len(_SYSTEM)
        for n, sentences in sorted(by_source.items()):
            block = f"[{n}] {titles[n]}\n" + "\n".join(sentences) + "\n"
            if used + len(block) > budget:
                break
            parts.append(block)
            used += len(block)
        if not parts:
            raise LLMError(
                f"the token budget ({self.settings.llm_token_budget}) leaves no room for any source "
                f"after {self.settings.llm_max_output_tokens} output tokens"
            )
        return head + "\n".join(parts)

    def synthesize(self, question: str, sub_questions: list[str], evidence: list[Evidence]) -> Synthesis:
        """The model's cited answer (citations not yet verified: see udm.research.synthesis.verify_claims)."""
        subs = sub_questions or [question]
        if not evidence:
            return Synthesis(answer=[], groups=[(q, []) for q in subs], synthesizer=self.name)
        data = _json_object(chat(self.settings, _SYSTEM, self._evidence_prompt(question, subs, evidence)))
        answer = _claims(data.get("answer"))
        raw_found = data.get("findings")
        found: list[Any] = raw_found if isinstance(raw_found, list) else []
        groups: list[tuple[str, list[Claim]]] = []
        for i, sub in enumerate(subs):
            entry = found[i] if i < len(found) and isinstance(found[i], dict) else {}
            groups.append((sub, _claims(entry.get("claims"))))
        return Synthesis(answer=answer, groups=groups, synthesizer=self.name)
