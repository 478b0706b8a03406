"""LLM tool use: recorded Anthropic and OpenAI payloads executed through call_tool."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tasks.base import ToolContext, always_approve, deny_all
from tasks.llm_tools import ToolUseExecutor, split_media


def load(fixtures_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((fixtures_dir / name).read_text())


def test_anthropic_tool_use_blocks_become_tool_results(test_tools, ctx, fixtures_dir) -> None:
    response = load(fixtures_dir, "anthropic_tool_use.json")
    message = ToolUseExecutor(ctx).anthropic(response)
    assert message["role"] == "user"
    results = message["content"]
    ids = [b["id"] for b in response["content"] if b["type"] == "tool_use"]
    assert [r["tool_use_id"] for r in results] == ids
    assert all(r["type"] == "tool_result" for r in results)

    echo = json.loads(results[0]["content"][0]["text"])
    assert echo["success"] is True and echo["data"]["echoed"] == ["System Architecture"] * 2
    assert "is_error" not in results[0]

    snap = results[1]["content"]
    body = json.loads(snap[0]["text"])
    assert "sent as an image block" in body["data"]["screenshot"]  # no base64 in the text
    images = [b for b in snap if b["type"] == "image"]
    assert len(images) == 2  # the data URL and the saved file
    for img in images:
        assert img["source"]["type"] == "base64" and img["source"]["media_type"] == "image/png"
        assert base64.b64decode(img["source"]["data"]).startswith(b"\x89PNG")
    assert body["data"]["screenshotPath"].endswith("snap.png")

    bad = results[2]
    assert bad["is_error"] is True
    err = json.loads(bad["content"][0]["text"])["error"]
    assert "text" in err and "times" in err

    unknown = results[3]
    assert (
        unknown["is_error"] is True and "unknown tool 'deleteEverythingTool'" in unknown["content"][0]["text"]
    )


def test_openai_tool_calls_become_tool_messages(test_tools, settings, fixtures_dir) -> None:
    response = load(fixtures_dir, "openai_tool_calls.json")
    # Deny-all approver under smart_auto: the moderate noteTool must be refused, not run.
    messages = ToolUseExecutor(ToolContext(settings=settings, approver=deny_all)).openai(response)
    calls = response["choices"][0]["message"]["tool_calls"]
    tool_msgs = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in calls]
    first = json.loads(tool_msgs[0]["content"])
    assert first["data"]["echoed"] == ["COMP-002"] * 3
    assert "base64" not in tool_msgs[1]["content"] and "image block" in tool_msgs[1]["content"]
    malformed = json.loads(tool_msgs[2]["content"])
    assert malformed["success"] is False and "not valid JSON" in malformed["error"]
    denied = json.loads(tool_msgs[3]["content"])
    assert denied["success"] is False and "approval denied" in denied["error"]
    assert not (settings.state_path / "notes" / "review.txt").exists()
    # Screenshots follow the tool messages as one user message of image_url parts.
    assert messages[-1]["role"] == "user"
    urls = [p["image_url"]["url"] for p in messages[-1]["content"] if p["type"] == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,iVBOR")


def test_openai_moderate_call_runs_when_approved(test_tools, settings, fixtures_dir) -> None:
    response = load(fixtures_dir, "openai_tool_calls.json")
    messages = ToolUseExecutor(ToolContext(settings=settings, approver=always_approve)).openai(response)
    note = json.loads(messages[3]["content"])
    assert note["success"] is True
    assert (settings.state_path / "notes" / "review.txt").read_text() == "COMP-002 needs a diagram"


def test_gemini_openai_compatible_payload_and_allow_list(test_tools, ctx, fixtures_dir) -> None:
    response = load(fixtures_dir, "gemini_openai_compat_tool_calls.json")
    ok = ToolUseExecutor(ctx).openai(response)
    assert json.loads(ok[0]["content"])["data"]["echoed"] == ["ROO-MODE-RESEARCH"]
    refused = ToolUseExecutor(ctx, allowed=["snapTool"]).openai(response)
    assert "not offered" in json.loads(refused[0]["content"])["error"]


def test_split_media_leaves_plain_text_and_outside_paths_alone(tmp_path: Path) -> None:
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 10)
    data = {"title": "data:text/plain,hi", "screenshotPath": str(outside), "note": "A" * 100}
    stripped, images = split_media(data, roots=[tmp_path / "state"])
    assert stripped == data and images == []


def test_split_media_treats_unopenable_screenshot_paths_as_text(tmp_path: Path) -> None:
    # A NUL byte makes Path.resolve raise ValueError; a 5,000-character name makes stat raise OSError.
    data = {"screenshot": f"{tmp_path}/a\x00b.png", "screenshotPath": f"{tmp_path}/{'x' * 5000}.png"}
    stripped, images = split_media(data, roots=[tmp_path])
    assert stripped == data and images == []
