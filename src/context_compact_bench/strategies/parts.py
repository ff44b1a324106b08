"""A history as the frameworks hold it: one *part* per LangChain/LlamaIndex message.

An Anthropic assistant message is one part; a user message is one part per ``tool_result``
block, then one for its other blocks (if any). ``render`` merges consecutive user-side parts
back into one user message (the Messages API alternates roles), the same merged object for
the same parts, so an unchanged prefix stays a prefix.
"""

from __future__ import annotations

from context_compact.messages import Block, Message, block_type, blocks, is_result


def split(message: Message) -> list[Message]:
    content = message.get("content")
    if message.get("role") == "assistant" or isinstance(content, str):
        return [message]
    results = [b for b in blocks(message) if is_result(b)]
    if not results:
        return [message]
    rest = [b for b in blocks(message) if block_type(b) != "tool_result"]
    out: list[Message] = [{"role": "user", "content": [b]} for b in results]
    return out + ([{"role": "user", "content": rest}] if rest else [])


class Renderer:
    def __init__(self) -> None:
        self._merged: dict[tuple[int, ...], tuple[list[Message], Message]] = {}

    def merge(self, parts: list[Message]) -> Message:
        if len(parts) == 1:
            return parts[0]
        key = tuple(id(p) for p in parts)
        hit = self._merged.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], parts, strict=True)):
            return hit[1]
        content: list[Block] = []
        for part in parts:
            body = part["content"]
            content.extend([{"type": "text", "text": body}] if isinstance(body, str) else body)
        merged: Message = {"role": "user", "content": content}
        self._merged[key] = (parts, merged)
        return merged

    def render(self, parts: list[Message]) -> list[Message]:
        out: list[Message] = []
        pending: list[Message] = []
        for part in parts:
            if part.get("role") == "user":
                pending.append(part)
                continue
            if pending:
                out.append(self.merge(pending))
                pending = []
            out.append(part)
        if pending:
            out.append(self.merge(pending))
        return out
