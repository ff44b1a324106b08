"""Stage 3, micro_compact (S-3): shrink older tool results to placeholders.

Every ``tool_result`` block in the history, oldest first; the newest ``keep_recent_results``
stay whole. Each older one longer than ``micro_threshold`` becomes
``[Earlier tool result saved at <path>]`` when its text has a ``Full output: `` line (the
only link to stage 1, S-3.3), else ``[Earlier tool result omitted.]``.

The seed drops the omitted text for good. We keep the placeholder text exact but first save
the original with ``store.save_blob`` and name the copy in the stage's event, so nothing is
unrecoverable even under the seed preset.
"""

from __future__ import annotations

from ..markers import FULL_OUTPUT, OMITTED, saved_placeholder
from ..messages import Message, replace_blocks, result_text, tool_results, with_content
from .base import StageContext


def micro_compact(messages: list[Message], ctx: StageContext) -> list[Message]:
    policy = ctx.policy
    results = list(tool_results(messages))
    older = results[: max(0, len(results) - policy.keep_recent_results)]
    changes = {}
    copies = []
    for mi, bi, block in older:
        text = result_text(block)
        if len(text) <= policy.micro_threshold:
            continue
        saved = next(
            (
                line.removeprefix(FULL_OUTPUT)
                for line in text.splitlines()
                if line.startswith(FULL_OUTPUT)
            ),
            None,
        )
        if saved:
            placeholder = saved_placeholder(saved)
        else:
            placeholder = OMITTED
            copies.append(ctx.store.save_blob(text))
        changes[(mi, bi)] = with_content(block, placeholder)
    if not changes:
        return list(messages)
    before = ctx.size(messages)
    out = replace_blocks(messages, changes)
    ctx.event(
        "micro_compact", before, ctx.size(out), tuple(copies), f"{len(changes)} results shortened"
    )
    return out
