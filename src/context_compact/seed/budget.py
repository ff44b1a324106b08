"""Stage 1, tool_result_budget (S-1): persist the largest results of the newest batch.

Looks only at the ``tool_result`` blocks of the last message (a user message with list
content). While their total size is over ``tool_result_batch_limit``, the largest result
longer than ``large_result_limit`` is written to the store and replaced by the
``<persisted-output>`` block (path plus a preview); the total is recomputed after each one.
Runs before micro_compact so that large results are saved, not dropped (S-6.1).
"""

from __future__ import annotations

from ..markers import persisted_form
from ..messages import Message, is_result, replace_blocks, result_text, with_content
from .base import StageContext


def tool_result_budget(messages: list[Message], ctx: StageContext) -> list[Message]:
    policy = ctx.policy
    if not messages:
        return []
    last = messages[-1]
    content = last.get("content")
    if last.get("role") != "user" or not isinstance(content, list):
        return list(messages)
    results = {bi: b for bi, b in enumerate(content) if is_result(b)}
    sizes = {bi: len(result_text(b)) for bi, b in results.items()}
    total = sum(sizes.values())
    if total <= policy.tool_result_batch_limit:
        return list(messages)
    changes = {}
    paths = []
    before = total
    for bi in sorted(sizes, key=lambda i: sizes[i], reverse=True):
        if total <= policy.tool_result_batch_limit:
            break
        block = results[bi]
        text = result_text(block)
        if len(text) <= policy.large_result_limit:
            continue
        path = ctx.store.save_tool_result(block.get("tool_use_id", "unknown"), text)
        new_text = persisted_form(path, text, policy.preview_chars)
        changes[(len(messages) - 1, bi)] = with_content(block, new_text)
        paths.append(path)
        sizes[bi] = len(new_text)
        total = sum(sizes.values())
    if not changes:
        return list(messages)
    ctx.event("tool_result_budget", before, total, tuple(paths), f"{len(paths)} persisted")
    return replace_blocks(messages, changes)
