"""Helpers over Anthropic-shaped message dicts.

The canonical history is a list of Anthropic Messages API dicts (S-0.1):
``{"role": "user" | "assistant", "content": str | [block, ...]}``. A *tool pair* is an
assistant message holding ``tool_use`` blocks followed by the user message holding the
matching ``tool_result`` blocks.

A ``Block`` is a union of typed dicts discriminated by ``type`` (``TextBlock``,
``ToolUseBlock``, ``ToolResultBlock``, ``ThinkingBlock``, ``RedactedThinkingBlock``,
``ImageBlock``, ``DocumentBlock``, and ``PassthroughBlock`` for every kind carried whole). The
types are what a valid history holds; a caller's list is checked by shape (``invariants``)
where it enters, and the guards (``is_text``, ``is_tool_use``, ``is_result``, ``is_image``)
narrow a block read with ``get``, since the API takes a block without a ``type``.

Every helper here is read-only. Stages that change a block build a new block, a new
message and a new list (``replace_block``); untouched messages are shared, never copied.
"""

from __future__ import annotations

import copy
import marshal
import re
from collections.abc import Iterator, Mapping
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Literal,
    NotRequired,
    Required,
    TypedDict,
    TypeVar,
    cast,
)

if TYPE_CHECKING:  # typing.TypeIs is 3.13's; annotations are not evaluated at run time
    from typing_extensions import TypeIs

Role = Literal["user", "assistant"]


class _Carried(TypedDict, total=False):
    """The keys any block may carry besides its own: the API's ``cache_control``, and the
    fields of a caller's item that a format converter keeps under ``FORMAT_META``."""

    cache_control: dict[str, Any]
    openai: dict[str, Any]


class TextBlock(_Carried, total=False):
    """Text the model reads."""

    type: Required[Literal["text"]]
    text: Required[str]
    citations: list[Any]


class ToolUseBlock(_Carried, total=False):
    """A tool call; ``input`` is the model's JSON, carried as written."""

    type: Required[Literal["tool_use"]]
    id: Required[str]
    name: Required[str]
    input: Any


class ToolResultBlock(_Carried, total=False):
    """A tool's answer: a string, or blocks (text, images, documents, search results)."""

    type: Required[Literal["tool_result"]]
    tool_use_id: Required[str]
    content: str | list[Block]
    is_error: bool


class ThinkingBlock(_Carried, total=False):
    """A model's reasoning, with the signature that binds it to what it read."""

    type: Required[Literal["thinking"]]
    thinking: Required[str]
    signature: str


class RedactedThinkingBlock(_Carried, total=False):
    """A model's reasoning, encrypted by the provider."""

    type: Required[Literal["redacted_thinking"]]
    data: Required[str]


class ImageBlock(_Carried, total=False):
    """An image: ``source`` is base64 data or a URL."""

    type: Required[Literal["image"]]
    source: Required[dict[str, Any]]


class DocumentBlock(_Carried, total=False):
    """A document (PDF, plain text...) given to the model."""

    type: Required[Literal["document"]]
    source: Required[dict[str, Any]]
    title: str
    context: str
    citations: Any


PassthroughType = Literal[
    "passthrough",
    "compaction",
    "search_result",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "container_upload",
    "tool_reference",
]


class PassthroughBlock(_Carried, total=False):
    """A block no pass reads, splits or rewrites, carried whole: a provider's own block
    (``compaction``: ``content``, null when the provider's compaction failed; server tool
    use and its results; ``search_result``: title, source, content), or a format's
    ``passthrough`` (``format``, and ``item`` or ``part``: what the caller's format holds
    that the canonical form cannot).

    Its ``type`` is a ``Literal`` of the kinds we name, so a check of ``type`` against any
    of the seven kinds the engines read narrows a ``Block`` to that kind. A kind the API
    adds later is carried the same way (a history is checked by shape, not by kind: see
    ``invariants``); it enters typed as a ``PassthroughBlock``, which is what it is to us.
    The keys are the ones these kinds use; their values are the provider's JSON."""

    type: Required[PassthroughType]
    format: str
    item: Any
    part: Any
    content: Any
    id: str
    name: str
    input: Any
    tool_use_id: str
    title: str
    source: Any


Block = (
    TextBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ImageBlock
    | DocumentBlock
    | PassthroughBlock
)
"""One content block, discriminated by ``type``: ``block["type"] == "tool_result"`` narrows
to a ``ToolResultBlock``. The values a provider or model wrote and we only carry
(``input``, ``source``, ``item``, the format metadata) stay JSON: ``Any``."""


class Message(TypedDict):
    """One message of the canonical history: a role and its content (and, from a format
    converter, its metadata under ``FORMAT_META``)."""

    role: Role
    content: str | list[Block]
    openai: NotRequired[dict[str, Any]]


# Where a format converter keeps the fields of a caller's item that the canonical block does
# not carry (ids, status, verbatim arguments): metadata, not text the model reads.
FORMAT_META: Final = "openai"
PASSTHROUGH: Final = "passthrough"
"""The block type a format uses for what we cannot read and pass through whole."""


_ATOMS = (str, int, float, bool, type(None))
_T = TypeVar("_T")


def clone(value: _T) -> _T:
    """A private deep copy of JSON-shaped data (several times faster than ``copy.deepcopy``
    on messages); anything else is deep-copied the slow way."""
    copied: _T = _clone(value)
    return copied


def _clone(value: Any) -> Any:
    kind = type(value)
    # Strings first by exact type (most values are), then the containers; subclasses and
    # anything else by the general rule below.
    if kind is str:
        return value
    if kind is dict:
        return {k: v if type(v) is str else _clone(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) is str else _clone(v) for v in value]
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    if isinstance(value, _ATOMS):
        return value
    return copy.deepcopy(value)


def copy_json(messages: list[_T]) -> list[_T]:
    """Private deep copies of JSON-shaped messages, fast (``marshal`` copies plain dicts,
    lists and scalars in C, several times faster than ``clone``); anything else goes through
    ``clone``."""
    try:
        out = marshal.loads(marshal.dumps(messages))
    except ValueError:  # an SDK object or another type marshal does not know
        return [clone(m) for m in messages]
    copied: list[_T] = out if isinstance(out, list) else [clone(m) for m in messages]
    return copied


def model_visible(content: Any) -> Any:
    """``content`` without the format converters' metadata (``FORMAT_META``), for sizing: the
    same object when there is none (every Anthropic history)."""
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and (FORMAT_META in b or isinstance(b.get("content"), list))
        for b in content
    ):
        return content
    out = []
    for block in content:
        if isinstance(block, dict):
            block = {k: model_visible(v) if k == "content" else v for k, v in block.items()}
            block.pop(FORMAT_META, None)
        out.append(block)
    return out


def plain_role(message: object) -> str | None:
    """The role of a message that is ``{"role": <str>, "content": ...}``, those two keys in
    that order and nothing else; None for any other: a JSON text of it can then be built
    around its content's JSON, key order kept."""
    if not isinstance(message, dict) or len(message) != 2:
        return None
    role = message.get("role")
    if list(message) != ["role", "content"] or not isinstance(role, str):
        return None
    return role


def plain(value: Any) -> Any:
    """An SDK object (a pydantic model: ``TextBlock``, ``ToolUseBlock``...) as the dict the API
    sent (fields it did not set left out), anything else as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json", exclude_unset=True)
    return value


def as_dicts(messages: Any) -> Any:
    """``messages`` with SDK objects in place of messages or blocks turned into dicts (the
    Anthropic SDK docs append ``response.content`` as it is). The same list when there is
    nothing to turn, so callers that pass plain dicts pay one pass of type checks."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] | None = None
    for i, message in enumerate(messages):
        fixed = plain(message)
        if isinstance(fixed, dict):
            content = fixed.get("content")
            if isinstance(content, list) and any(not isinstance(b, dict) for b in content):
                fixed = {**fixed, "content": [plain(b) for b in content]}
        if fixed is not message:
            if out is None:
                out = list(messages)
            out[i] = fixed
    return messages if out is None else out


def blocks(message: Message) -> list[Block]:
    """The content blocks of a message; a string content has none."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def block_at(message: Message, index: int) -> Block:
    """The block at ``index`` of a message whose content is a list: the positions the
    engines record come from block lists only (no check here: this sits on hot paths)."""
    return cast("list[Block]", message["content"])[index]


def result_at(message: Message, index: int) -> ToolResultBlock:
    """The ``tool_result`` at a position the engines recorded as one (``block_at``)."""
    return cast("ToolResultBlock", block_at(message, index))


def use_at(message: Message, index: int) -> ToolUseBlock:
    """The ``tool_use`` at a position the engines recorded as one (``block_at``)."""
    return cast("ToolUseBlock", block_at(message, index))


def block_type(block: object) -> str | None:
    """The ``type`` of a block, None for anything that is not a dict (a caller's list before
    it is checked may hold anything)."""
    return block.get("type") if isinstance(block, dict) else None


# The guards below narrow as ``block["type"] == ...`` does, and read the type with ``get``:
# the API takes a block without one (a history is checked by shape), so reading it must not
# raise.


def is_text(block: object) -> TypeIs[TextBlock]:
    return block_type(block) == "text"


def is_tool_use(block: object) -> TypeIs[ToolUseBlock]:
    return block_type(block) == "tool_use"


def is_result(block: object) -> TypeIs[ToolResultBlock]:
    """A ``tool_result`` block (``is_tool_result`` asks it of a message)."""
    return block_type(block) == "tool_result"


def is_image(block: object) -> TypeIs[ImageBlock]:
    return block_type(block) == "image"


def has_tool_use(message: Message) -> bool:
    """An assistant message with at least one ``tool_use`` block (the seed's test)."""
    return message.get("role") == "assistant" and any(
        block_type(b) == "tool_use" for b in blocks(message)
    )


def is_tool_result(message: Message) -> bool:
    """A user message with at least one ``tool_result`` block (the seed's test)."""
    return message.get("role") == "user" and any(
        block_type(b) == "tool_result" for b in blocks(message)
    )


REQUEST_BLOCKS = ("text", "image", "document")


def is_request(message: Message) -> bool:
    """A user message typed by a person (or a harness): text, and the images or documents
    given with it; no tool results."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return True
    kinds = [block_type(b) for b in blocks(message)]
    return "text" in kinds and all(kind in REQUEST_BLOCKS for kind in kinds)


def result_text(block: Block) -> str:
    """The seed's size measure of a tool result: ``str(content)`` (S-0.2)."""
    return str(block.get("content", ""))


THINKING = ("thinking", "redacted_thinking")


def block_path(text: str) -> tuple[int, int] | None:
    """The (message, block) of the first ``messages.N.content.M`` path in ``text`` (how the
    Messages API names a block of a request, in its errors and ``input_transformations``)."""
    found = _BLOCK_PATH.search(text)
    return None if found is None else (int(found.group(1)), int(found.group(2)))


_BLOCK_PATH = re.compile(r"messages\.(\d+)\.content\.(\d+)")


def opens_with_thinking(message: Message) -> bool:
    """An assistant message whose first block is a (redacted) thinking block."""
    first = blocks(message)[:1]
    return bool(first) and block_type(first[0]) in THINKING


def turn_start(messages: list[Message]) -> int:
    """Where the turn in progress starts: just after the last run of consecutive user messages
    that holds no ``tool_result`` (0 when there is none).

    The API merges consecutive messages of one role, so a text message sent right after tool
    results continues the tool loop: only a whole run of user messages without results ends
    a turn. With extended thinking, the first assistant message of the turn in progress must
    open with its thinking block (Anthropic answers 400 otherwise).
    """
    j = len(messages) - 1
    while j >= 0:
        if messages[j].get("role") != "user":
            j -= 1
            continue
        k = j
        while k >= 0 and messages[k].get("role") == "user":
            k -= 1
        if not any(is_tool_result(m) for m in messages[k + 1 : j + 1]):
            return j + 1
        j = k
    return 0


def turn_opener(messages: list[Message]) -> Message | None:
    """The first assistant message of the turn in progress, if it has one."""
    for message in messages[turn_start(messages) :]:
        if message.get("role") == "assistant":
            return message
    return None


def _search_text(block: Block) -> str | None:
    inner = block.get("content")
    if not isinstance(inner, list) or not all(block_type(b) == "text" for b in inner):
        return None
    head = f"[search result: {block.get('title', '')} <{block.get('source', '')}>]"
    return "\n".join([head, *(str(b.get("text", "")) for b in inner)])


def readable_text(block: Block) -> str | None:
    """The text a model reads in a tool_result: its string content, or its text blocks (and
    ``search_result`` blocks, headed by their title and source) joined by newlines; None when
    it holds anything else (an image, a document), which must not be turned into text."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for part in content:
        kind = block_type(part)
        text = (
            str(part.get("text", ""))
            if kind == "text"
            else _search_text(part)
            if kind == "search_result"
            else None
        )
        if text is None:
            return None
        parts.append(text)
    return "\n".join(parts)


def tool_results(messages: list[Message]) -> Iterator[tuple[int, int, ToolResultBlock]]:
    """Every ``tool_result`` block of every user message, oldest first, with its position."""
    for mi, message in enumerate(messages):
        if message.get("role") != "user":
            continue
        for bi, block in enumerate(blocks(message)):
            if is_result(block):
                yield mi, bi, block


def replace_blocks(
    messages: list[Message], changes: Mapping[tuple[int, int], Block]
) -> list[Message]:
    """A new list in which the blocks at the given ``(message, block)`` positions are replaced.

    Only the touched messages are rebuilt (shallow copies with a new content list); every
    other message object is shared with the input. The input is never modified.
    """
    if not changes:
        return list(messages)
    by_message: dict[int, dict[int, Block]] = {}
    for (mi, bi), block in changes.items():
        by_message.setdefault(mi, {})[bi] = block
    out = list(messages)
    for mi, replaced in by_message.items():
        content = list(blocks(out[mi]))
        for bi, block in replaced.items():
            content[bi] = block
        out[mi] = {**out[mi], "content": content}
    return out


def with_content(block: ToolResultBlock, content: str) -> ToolResultBlock:
    """A copy of a tool_result block with new content (the original is untouched)."""
    return {**block, "content": content}


def native_compaction(block: object) -> bool:
    """Whether ``block`` is a provider's own compaction that stands for everything before it:
    an Anthropic ``compaction`` block with a summary (one whose ``content`` is null is a
    failed compaction, which the API treats as a no-op), or an OpenAI Responses
    ``compaction`` item (carried whole as a passthrough block)."""
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    if kind == "compaction":
        content = block.get("content")
        return isinstance(content, str) and content.strip() != ""
    if kind == PASSTHROUGH:
        item = block.get("item")
        return isinstance(item, dict) and item.get("type") == "compaction"
    return False


def compaction_at(message: Message) -> int | None:
    """The index of the newest native compaction block of an assistant message, or None."""
    if message.get("role") != "assistant":
        return None
    found = None
    for index, block in enumerate(blocks(message)):
        if native_compaction(block):
            found = index
    return found
