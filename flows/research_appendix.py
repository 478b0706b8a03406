"""From fetched sources to the research appendix: the cited synthesis (extractive or LLM), the appendix
Markdown and its checks (or the newest appendix, when the same question, sources and contents would
make nothing new), the run's artifacts, and the write through the update flow's steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.research_report import (
    AppendixCheckError,
    Source,
    appendix_id,
    check_quotes,
    heading_safe,
    index_link_operation,
    latest_fingerprint,
    next_version,
    render_appendix,
    research_fingerprint,
    topic_of,
)
from udm.config import ApprovalPolicy, Settings
from udm.markdown import slugify
from udm.research import (
    Evidence,
    ExtractiveSynthesizer,
    Synthesis,
    Synthesizer,
    split_sub_questions,
    verify_claims,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from flows.research import ResearchRequest

__all__ = ["Draft", "draft_appendix", "write_appendix"]


@dataclass
class Draft:
    """The appendix a run would write: its ID, title and text, or why there is none."""

    app_id: str
    title: str
    markdown: str = ""
    synthesis: Synthesis | None = None
    findings: int = 0
    failure: str = ""
    # The newest appendix already holds these findings (same question, sources and contents).
    unchanged: bool = False


def _synthesizer(settings: Settings) -> Synthesizer:
    """The synthesizer the settings name (research_synthesizer)."""
    if settings.research_synthesizer == "llm":
        from tasks.llm_synth import LLMSynthesizer

        return LLMSynthesizer(settings)
    return ExtractiveSynthesizer()


def _synthesize(
    settings: Settings, question: str, sub_questions: list[str], sources: list[Source]
) -> Synthesis:
    """The cited answer from the usable sources, every citation verified against its source's text."""
    evidence = [Evidence(s.n, s.title, s.url, s.text) for s in sources if s.ok]
    subs = [q.strip() for q in sub_questions if q.strip()] or split_sub_questions(question)
    synthesis = _synthesizer(settings).synthesize(question, subs, evidence)
    verify_claims(synthesis, evidence)
    return synthesis


def _synthesis_or_failure(
    settings: Settings, request: ResearchRequest, sources: list[Source]
) -> tuple[Synthesis | None, str]:
    """(the synthesis, "") or (None, why the synthesizer failed)."""
    try:
        return _synthesize(settings, request.question, request.sub_questions, sources), ""
    except Exception as exc:  # an LLM endpoint's failure is this run's outcome, not a traceback
        from tasks.llm_synth import LLMError

        if not isinstance(exc, LLMError):
            raise
        return None, f"the synthesizer failed: {exc}"


def _render(
    draft: Draft, request: ResearchRequest, sources: list[Source], run_id: str | None, fingerprint: str
) -> None:
    """The draft's Markdown from its synthesis, or its failure when the appendix fails its checks."""
    if draft.synthesis is None:
        return
    problems = check_quotes(draft.synthesis, sources)
    try:
        draft.markdown = render_appendix(
            draft.app_id,
            request.question,
            sources,
            draft.synthesis,
            title=draft.title,
            run_id=run_id,
            fingerprint=fingerprint,
        )
    except AppendixCheckError as exc:
        problems.append(str(exc))
    if problems:
        draft.failure = "the appendix failed its checks: " + "; ".join(problems[:5])


def draft_appendix(
    settings: Settings,
    request: ResearchRequest,
    sources: list[Source],
    run_id: str | None,
    lap: Callable[[str], None],
) -> Draft:
    """The appendix these sources make (its artifacts published); `lap` marks the synthesize and
    render phases."""
    topic = request.topic or topic_of(request.question)
    appendices = settings.udm_root / "appendices"
    title = request.question.rstrip("?").strip()
    fingerprint = research_fingerprint(request.question, request.libraries, sources)
    latest = latest_fingerprint(appendices, topic) if request.write else None
    # Same question, same sources with the same contents: a new version would say nothing new.
    if latest and latest.fingerprint == fingerprint and not request.new_version_if_unchanged:
        draft = Draft(latest.app_id, title, unchanged=True)
    else:
        draft = Draft(appendix_id(topic, next_version(appendices, topic)), title)
    if draft.unchanged and latest and latest.findings is not None:
        # The same texts synthesise the same: that appendix already holds these findings.
        draft.findings = latest.findings
    else:
        draft.synthesis, draft.failure = _synthesis_or_failure(settings, request, sources)
        if draft.synthesis is not None:
            draft.findings = len(draft.synthesis.claims())
    lap("synthesize")
    if draft.unchanged:
        draft.markdown = (appendices / f"{draft.app_id}.md").read_text(encoding="utf-8")
    else:
        _render(draft, request, sources, run_id, fingerprint)
    # An unchanged run's appendix is the artifact of the run that wrote it; its sources are listed anew.
    _artifacts(draft.app_id, sources, "" if draft.unchanged else draft.markdown)
    lap("render")
    return draft


def _artifacts(app_id: str, sources: list[Source], markdown: str) -> None:
    """The sources table (and one of the failed ones) and the appendix, as the run's artifacts."""
    rows = [
        {
            "n": s.n,
            "status": "ok" if s.ok else s.status,
            "title": s.title[:120],
            "url": s.url,
            "origin": s.origin,
            "cached": bool(s.meta.get("from_cache")),
            "reason": s.reason[:300],
        }
        for s in sources
    ]
    slug = re.sub(r"[^a-z0-9-]+", "-", app_id.lower())
    create_table_artifact(
        table=rows, key=f"{slug}-sources", description=f"Sources of {app_id} (failed ones with their reason)"
    )
    failed = [r for r in rows if r["status"] not in ("ok", "DUPLICATE")]
    if failed:
        create_table_artifact(
            table=failed, key=f"{slug}-failed-sources", description=f"Sources of {app_id} that failed"
        )
    if markdown:
        create_markdown_artifact(
            markdown=markdown[:100_000], key=f"{slug}-appendix", description=f"Research appendix {app_id}"
        )


def write_appendix(
    settings: Settings, app_id: str, title: str, markdown: str, policy: ApprovalPolicy | None, timeout_s: int
) -> dict[str, Any]:
    """Write the appendix and its link from the appendix index through the update flow's steps, in
    this run; the update's result."""
    from flows.udm_update import UpdateOptions, update_steps
    from udm.patch import Patch

    index = settings.udm_root / "appendices" / "00-appendix-index.md"
    anchor = slugify(f"{app_id}: {heading_safe(title)}")
    ops: list[dict[str, Any]] = [
        {
            "op": "create_file",
            "file": f"appendices/{app_id}.md",
            "content": markdown,
            "rationale": "research appendix",
        }
    ]
    if index.is_file():
        ops.append(index_link_operation(index.read_text(encoding="utf-8"), app_id, title, anchor))
    else:
        table = f"# Appendix Index\n\n| ID | Title |\n| --- | --- |\n| [{app_id}]({app_id}.md#{anchor}) | {title} |\n"
        ops.append({"op": "create_file", "file": "appendices/00-appendix-index.md", "content": table})
    patch = Patch.model_validate(
        {
            "description": f"research appendix {app_id}",
            "author": "research_flow",
            "source": app_id,
            "operations": ops,
        }
    )
    result = update_steps(
        patch, UpdateOptions(approval_policy=policy, approval_timeout_s=timeout_s), settings
    )
    return result.model_dump(mode="json")
