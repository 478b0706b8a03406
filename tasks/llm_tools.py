"""LLM tool use: run a model's tool-use blocks (Anthropic, OpenAI) through call_tool, return tool results.

A Claude loop sends the assistant message's `tool_use` blocks and gets back the `user` message of
`tool_result` blocks to append; an OpenAI-style loop (OpenAI, Gemini's OpenAI-compatible endpoint,
vLLM ...) sends the assistant message's `tool_calls` and gets back one `{"role": "tool"}` message
per call. Screenshots in a tool's output become image blocks instead of megabytes of base64 text.
Every call goes through `call_tool`, so validation, approval, logging and the envelope are the same
as on the CLI and over MCP; failures come back as error results the model can read and correct.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.base import Envelope, ToolContext, call_tool
from tasks.registry import get_tool
from udm.datalimits import DataLimitError, check_json

__all__ = [
    "ExtractedImage",
    "ToolUseExecutor",
    "envelope_text",
    "split_media",
]

# Magic numbers of the image formats both APIs accept.
_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]
_IMAGE_SUFFIXES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}
# Largest image passed to a model; bigger ones stay out (both APIs reject ~5 MB+ images anyway).
MAX_IMAGE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class ExtractedImage:
    """An image found in a tool's output, with where it was found."""

    media_type: str
    data_b64: str
    where: str

    @property
    def data_uri(self) -> str:
        """The image as a `data:` URI (what OpenAI's image_url takes)."""
        return f"data:{self.media_type};base64,{self.data_b64}"


def _sniff(raw: bytes) -> str | None:
    for magic, media in _MAGIC:
        if raw.startswith(magic):
            return media
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def _image_from_string(key: str, value: str, roots: list[Path]) -> tuple[str, str, bool] | None:
    """(media_type, base64, is_path) when this string is an image: data URI, bare base64 or a file path."""
    if value.startswith("data:image/") and ";base64," in value[:64]:
        head, _, payload = value.partition(",")
        return head[len("data:") : head.index(";")], payload, False
    lowered = key.lower()
    if len(value) > 64 and any(word in lowered for word in ("screenshot", "image", "base64")):
        try:
            raw = base64.b64decode(value[:64], validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        media = _sniff(raw)
        if media:
            return media, value, False
    if "screenshot" in lowered or lowered.endswith("imagepath"):
        try:
            return _image_file(Path(value), roots)
        except (OSError, ValueError):
            # A NUL byte, an over-long name or an unreadable file: the string is not an image.
            return None
    return None


def _image_file(path: Path, roots: list[Path]) -> tuple[str, str, bool] | None:
    suffix = _IMAGE_SUFFIXES.get(path.suffix.lower())
    if suffix is None or not (path.is_absolute() and _inside(path, roots) and path.is_file()):
        return None
    if 0 < path.stat().st_size <= MAX_IMAGE_BYTES:
        raw = path.read_bytes()
        return _sniff(raw) or suffix, base64.b64encode(raw).decode("ascii"), True
    return None


def _inside(path: Path, roots: list[Path]) -> bool:
    # Only files under the configured roots: a model must not read /etc by naming a "screenshot".
    resolved = path.resolve()
    return any(resolved.is_relative_to(root.resolve()) for root in roots)


def split_media(data: Any, roots: Iterable[Path] = ()) -> tuple[Any, list[ExtractedImage]]:
    """Copy of `data` with images replaced by short placeholders, plus the images found."""
    images: list[ExtractedImage] = []
    root_list = list(roots)

    def walk(value: Any, key: str, where: str) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, str(k), f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, str):
            found = _image_from_string(key, value, root_list)
            if found is not None:
                media, b64, is_path = found
                if len(b64) * 3 // 4 > MAX_IMAGE_BYTES:
                    return f"[{media} image of {len(b64) * 3 // 4} bytes omitted: too large]"
                images.append(ExtractedImage(media, b64, where))
                # A path stays (the model may pass it on); inline data becomes a placeholder.
                if not is_path:
                    return f"[{media} image {len(images)} of this result, sent as an image block]"
        return value

    return walk(data, "", ""), images


def envelope_text(envelope: Envelope, roots: Iterable[Path] = ()) -> tuple[str, list[ExtractedImage]]:
    """The envelope as compact JSON text (images taken out) and the images."""
    body = envelope.model_dump(mode="json")
    stripped, images = split_media(body, roots)
    return json.dumps(stripped, ensure_ascii=False, separators=(",", ":")), images


class ToolUseExecutor:
    """Executes an LLM's tool calls through `call_tool` and formats the results for that LLM's API."""

    def __init__(self, ctx: ToolContext | None = None, allowed: Iterable[str] | None = None) -> None:
        self.ctx = ctx or ToolContext()
        self.allowed = {name.lower() for name in allowed} if allowed is not None else None

    def _roots(self) -> list[Path]:
        return self.ctx.settings.image_roots()

    def run_one(self, name: str, arguments: Any) -> Envelope:
        """Call one tool; any problem (unknown or disallowed tool, bad arguments) is an error envelope."""
        if self.allowed is not None and name.lower() not in self.allowed:
            return Envelope(success=False, error=f"tool '{name}' is not offered in this conversation")
        if get_tool(name) is None:
            return Envelope(success=False, error=f"unknown tool '{name}'")
        if not isinstance(arguments, dict):
            return Envelope(success=False, error="invalid input: the arguments must be a JSON object")
        return call_tool(name, arguments, self.ctx).envelope

    # Anthropic Messages API -------------------------------------------------------------------

    def anthropic(self, response: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
        """Given a Messages API response (or its content list), the `user` message of tool results."""
        blocks = response if isinstance(response, list) else response.get("content", [])
        results: list[dict[str, Any]] = []
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            envelope = self.run_one(str(block.get("name", "")), block.get("input", {}))
            text, images = envelope_text(envelope, self._roots())
            content: list[dict[str, Any]] = [{"type": "text", "text": text}]
            content += [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": img.media_type, "data": img.data_b64},
                }
                for img in images
            ]
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": block.get("id", ""),
                "content": content,
            }
            if not envelope.success:
                result["is_error"] = True
            results.append(result)
        return {"role": "user", "content": results}

    # OpenAI Chat Completions (and compatible: Gemini, vLLM, Ollama) ---------------------------

    def openai(self, response: dict[str, Any]) -> list[dict[str, Any]]:
        """Given a chat completion (or its assistant message), the messages to append after it.

        One `{"role": "tool", "tool_call_id", "content"}` message per call; Chat Completions takes
        only text in tool messages, so screenshots follow in one `user` message of `image_url` parts.
        """
        message = response
        if "choices" in response:
            choices = response.get("choices") or [{}]
            message = choices[0].get("message", {})
        messages: list[dict[str, Any]] = []
        image_parts: list[dict[str, Any]] = []
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            name = str(function.get("name", ""))
            raw_args = function.get("arguments", "{}")
            try:
                if isinstance(raw_args, str):
                    check_json(raw_args, what="the arguments JSON")
                arguments = json.loads(raw_args) if isinstance(raw_args, str) else raw_args
            except DataLimitError as exc:
                envelope = Envelope(success=False, error=f"invalid input: {exc.reason}")
            except json.JSONDecodeError as exc:
                envelope = Envelope(
                    success=False, error=f"invalid input: the arguments are not valid JSON ({exc.msg})"
                )
            else:
                envelope = self.run_one(name, arguments if arguments is not None else {})
            text, images = envelope_text(envelope, self._roots())
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": text})
            for number, img in enumerate(images, 1):
                image_parts.append(
                    {"type": "text", "text": f"Image {number} of tool call {call.get('id', '')} ({name}):"}
                )
                image_parts.append({"type": "image_url", "image_url": {"url": img.data_uri}})
        if image_parts:
            messages.append({"role": "user", "content": image_parts})
        return messages
