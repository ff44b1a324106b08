"""The first step of a summary: the pure plan of what it replaces (``summary.py``).

``plan`` decides, from the state alone, the first message a summary takes (``start``), the
first it keeps (``cut``), which user messages stay pinned (``user_words``) and, when it closes
the turn in progress, which recent steps ride along verbatim (``carry``). ``projected`` and
``fixed`` weigh a plan, or check one fixed earlier (``ahead.py``), without any I/O.

Two kinds of cut:

- **Inside the history**: the kept part starts at a turn start (an assistant message) that
  keeps the API's thinking rule (``SessionState.legal_cut``), or at a user request. The
  oldest such cut whose kept part fits the budget is taken.
- **Closing the turn** (``cut == n``): when no such cut fits (one request followed by a long
  tool loop whose turn opened with a thinking block has no legal cut inside it, and a turn
  start may leave too much behind it), everything up to the end of the log is summarized.
  The most recent steps (the model's last tool calls and their results, up to
  ``keep_turns`` of them, as far as the budget allows, the unseen ones always) ride along
  as text in one closing message after the pinned user messages. That message holds no
  ``tool_result``, so it ends the turn: the next assistant message opens a new turn and, with
  extended thinking on, thinks first, which is what the Messages API asks of the final
  assistant turn. No thinking block is ever modified or moved: the turn that held them is
  gone from the view whole (its messages are in the archive), as the API itself drops the
  thinking of earlier turns. The same holds for OpenAI Responses reasoning items: none is
  left without the call it belongs to.

Invariants: a plan never takes a message the model has not seen out of the view without it
riding along verbatim; ``carry`` is ``None`` unless ``cut`` is the end of the log. A
function of its arguments: the same state and ask give the same plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..invariants import thinking_kept
from ..messages import block_type, blocks, is_request
from .pinned import answer_message
from .state import SessionState
from .summary_types import SummaryAsk, SummaryPlan, UserWords


def answered_text(state: SessionState, seq: int, longest: int) -> str | None:
    """The text of the assistant message just before ``seq``, if it is one, has no tool call
    and is at most ``longest`` characters: what the user was answering."""
    before = state.msgs.get(seq - 1)
    if before is None or before.get("role") != "assistant":
        return None
    if any(block_type(b) == "tool_use" for b in blocks(before)):
        return None
    text = "\n\n".join(
        str(b.get("text", "")) for b in blocks(before) if block_type(b) == "text"
    ).strip()
    if isinstance(before.get("content"), str):
        text = str(before["content"]).strip()
    return text if 0 < len(text) <= longest else None


def user_words(state: SessionState, start: int, cut: int, budget: float, longest: int) -> UserWords:
    """Every user-authored message before ``cut`` (besides the first request, always kept)
    stays pinned, newest first, while the pinned ones fit ``budget`` tokens; the newest of
    all stays whatever its size; the rest (the oldest) are folded into the summary."""
    first = state.first_request
    old = [seq for seq in state.pinned.pins if seq != first and seq < start]
    new = [seq for seq in range(start, cut) if seq != first and is_request(state.msgs[seq])]
    answered: dict[int, str] = {}
    cost: dict[int, int] = {}
    for seq in [*old, *new]:
        text = state.pinned.answered.get(seq) if seq < start else answered_text(state, seq, longest)
        if text:
            answered[seq] = text
        cost[seq] = state.counter.count(state.msgs[seq]) + (
            state.counter.count(answer_message(text)) if text else 0
        )
    pins: list[int] = []
    used = 0
    for seq in reversed([*old, *new]):
        if seq != state.latest_request and used + cost[seq] > budget:
            break
        pins.append(seq)
        used += cost[seq]
    kept = set(pins)
    return UserWords(
        pins=pins[::-1],
        answered={seq: text for seq, text in answered.items() if seq in kept},
        folded=[seq for seq in [*old, *new] if seq not in kept],
        tokens=used,
    )


def _tokens(state: SessionState, lo: int, hi: int) -> int:
    """Tokens of log messages ``lo..hi-1`` as in view (all at or after ``first_kept``)."""
    offset = len(state.prefix) - state.first_kept
    return sum(state.shown.tokens[offset + lo : offset + hi])


def _cuts(state: SessionState, start: int) -> tuple[list[int], list[int]]:
    """Where a kept part may start, oldest first: turn starts the thinking rule allows, and
    user requests (a cut before one never splits a tool pair)."""
    turns, requests = [], []
    for seq in range(max(start + 1, state.first_kept + 1), state.n):
        message = state.msgs[seq]
        if message.get("role") == "assistant" and state.legal_cut(seq):
            turns.append(seq)
        elif is_request(message):
            requests.append(seq)
    return turns, requests


def _keeps_thinking(state: SessionState, cut: int) -> bool:
    """Whether the view a summary at ``cut`` makes still opens its turn in progress with the
    thinking block the current view opens it with. The API merges consecutive user messages,
    so the summary and the pinned requests in front of the kept part join the run before it:
    the log's own turns are not enough to decide. On a model that checks thinking blocks'
    prefixes, a summary changes what comes before the block that opens the turn in
    progress, which would then leave the view (``thinking.py``): only a summary that closes
    the turn keeps the API's rule there."""
    if state.wall() is not None:
        return False
    first, latest = state.first_request, state.latest_request
    offset = len(state.prefix) - state.first_kept
    head = [state.msgs[first]] if first is not None else []
    head.append({"role": "user", "content": ""})
    if latest is not None and latest != first and latest < cut:
        head.append(state.msgs[latest])
    return thinking_kept(state.view, head + state.view[offset + cut :])


def plan(state: SessionState, ask: SummaryAsk) -> SummaryPlan | None:
    """What a summary should replace, or ``None`` when nothing worth it can go.

    In this order: the oldest of the last ``keep_turns`` turn starts whose kept part fits
    the budget, else the newest that fits the limit; when even the newest turn alone is over
    the limit, the same at user requests; else the summary closes the turn, if that leaves
    less than any cut could. ``keep_turns == 0`` always closes (a "summarize all").
    """
    start = summary_start(state)
    if start >= state.n:
        return None
    first_tokens = _first_tokens(state)
    shown_first = _media_in_the_way(state, ask, first_tokens)
    fixed = state.overhead + ask.allowance + (shown_first or first_tokens)
    budget = ask.target / state.ratio - fixed
    roof = ask.limit / state.ratio - fixed

    def words(cut: int) -> UserWords:
        return user_words(state, start, cut, ask.pin_budget, ask.answered_chars)

    # Closing needs the log to end with user messages: an assistant message at its end (a
    # tool call whose results are still to come) must stay a message of its own. A final
    # answer at the end (no tool call) has no such reason: a summary of all takes it too.
    last = state.msgs[state.n - 1]
    closable = last.get("role") == "user" or (
        not ask.keep_turns and not any(block_type(b) == "tool_use" for b in blocks(last))
    )
    turns, requests = _cuts(state, start)
    keep = ask.keep_turns or (0 if closable else 1)
    found = _choose(state, turns[-keep:] if keep else [], words, budget, roof)

    newest = max([start, *turns])
    # The newest turn alone is over the limit, not counting the summary's allowance (only our
    # guess at its size): no turn start can keep it.
    over = _tokens(state, newest, state.n) + words(newest).tokens > roof + ask.allowance
    if found[0] is None and found[1] is None and keep and over:
        # The newest turn alone is over the limit (a long answer before the newest request,
        # say): a cut at a user request may leave less.
        at_request = _choose(state, requests[-keep:], words, budget, roof)
        found = (at_request[0], at_request[1], found[2] or at_request[2])
    result, fallback, last_resort = found
    # The rest is one turn with no cut inside it and too big to stay (a long turn that opened
    # with a thinking block). A "compact now" (target 0) asks for no size: it never closes a
    # turn that fits.
    stuck = (
        not turns and not requests and ask.target > 0 and _tokens(state, start, state.n) > budget
    )
    if result is None and fallback is None and closable and (not ask.keep_turns or over or stuck):
        closing = _closing(state, ask, start, budget, words(state.n))
        smallest = max([start, *turns, *requests])
        carried = _tokens(state, closing.carry or state.n, state.n)
        # Closing must leave less than the smallest kept part a cut could: carrying the same
        # steps as text would only churn the cache (unless a summary of all is asked for).
        if not ask.keep_turns or carried < _tokens(state, smallest, state.n):
            result = closing
    result = result or fallback or last_resort
    if result is None:
        return None
    saving = _saving(state, result, ask, first_tokens)
    if shown_first is not None:
        saving += first_tokens - shown_first
        result = replace(result, first_media=True)
    if saving < ask.least or (result.closes and saving <= 0):
        # Summarizing so little would not shrink the view: it would only churn the cache.
        return None
    return result


def summary_start(state: SessionState) -> int:
    """The first message a summary may take: the one after the first request (always kept),
    or, after a provider's compaction, the block's own message (its head, the block alone,
    stays first in view: ``SessionState._native``)."""
    if state.native is not None:
        return state.first_kept
    return max(state.first_kept, state.base + (1 if state.first_request is not None else 0))


# What a saved image's marker is counted as, before the store names its file.
_MEDIA_MARKER = {"type": "text", "text": "[message 0, image: " + "x" * 160 + "]"}


def _first_tokens(state: SessionState) -> int:
    """Tokens of the first request as it is (or will be) shown in front of a summary."""
    first = state.first_request
    if first is None:
        return 0
    return state.counter.count(state.pinned.first or state.msgs[first])


def _media_in_the_way(state: SessionState, ask: SummaryAsk, first_tokens: int) -> int | None:
    """The tokens of the first request with its images and documents saved as files, when
    those alone keep what must stay in view (the system prompt and tools, the first request,
    the summary, the newest step) over the limit; None when they do not."""
    first = state.first_request
    if first is None or state.pinned.first is not None:
        return None
    message = state.msgs[first]
    if not any(block_type(b) in ("image", "document") for b in blocks(message)):
        return None
    newest = max(state.last_assistant(), state.first_kept)
    must = state.overhead + ask.allowance + _tokens(state, newest, state.n)
    roof = ask.limit / state.ratio
    if must + first_tokens <= roof:
        return None
    media = ("image", "document")
    without = [_MEDIA_MARKER if block_type(b) in media else b for b in blocks(message)]
    shown = state.counter.count({**message, "content": without})
    return shown if must + shown <= roof else None


Found = tuple["SummaryPlan | None", "SummaryPlan | None", "SummaryPlan | None"]


def _choose(
    state: SessionState,
    candidates: list[int],
    words: Callable[[int], UserWords],
    budget: float,
    roof: float,
) -> Found:
    """Among ``candidates`` (oldest first): the oldest whose kept part fits ``budget``, the
    newest that fits ``roof``, and the newest of all, each keeping the thinking rule."""
    start = summary_start(state)
    fallback = last_resort = None
    for cut in candidates:  # drop more only while what stays is still too big
        if not _keeps_thinking(state, cut):
            continue
        kept = words(cut)
        size = _tokens(state, cut, state.n) + kept.tokens
        last_resort = SummaryPlan(start, cut, kept, None)
        if size > roof:
            continue
        fallback = last_resort
        if size <= budget:
            return fallback, fallback, fallback
    return None, fallback, last_resort


def _closing(
    state: SessionState, ask: SummaryAsk, start: int, budget: float, kept: UserWords
) -> SummaryPlan:
    """A plan that summarizes to the end of the log; the newest steps ride along verbatim."""
    last = state.last_assistant()
    if last < start or last + 1 >= state.n or is_request(state.msgs[state.n - 1]):
        # Nothing of the model's own after the newest user message, or no result to carry
        # (a request at the end is pinned, not carried).
        carry = state.n
    else:
        # Unseen results always ride along, with the calls they answer.
        carry = last
        # Older steps ride along in half the room left: the rest is for the turn to come.
        room = (budget - kept.tokens) / 2
        steps = [seq for seq in state.turn_starts() if start <= seq < last]
        for seq in reversed(steps[-max(0, ask.keep_turns - 1) :] if ask.keep_turns > 1 else []):
            if _tokens(state, seq, state.n) > room:
                break
            carry = seq
    return SummaryPlan(start, state.n, kept, carry)


def projected(state: SessionState, ask: SummaryAsk) -> int | None:
    """The request's size (measured, as ``SessionState.measure``) after the summary ``plan``
    would make now, or ``None`` when it would make none: what the engine weighs a summary by
    before asking for one. Pure, like ``plan``."""
    chosen = plan(state, ask)
    if chosen is None:
        return None
    first = state.first_request
    if state.native is not None:
        first_tokens = _first_tokens(state)
    else:
        first_tokens = state.counter.count(state.msgs[first]) if first is not None else 0
    return state.measure() - round(_saving(state, chosen, ask, first_tokens) * state.ratio)


def _saving(state: SessionState, plan: SummaryPlan, ask: SummaryAsk, first_tokens: int) -> int:
    first = state.first_request
    # The head comes back in front of the summary: a provider's block joins the prefix then.
    head = bool(state.prefix) or state.native is not None
    prefix_rest = sum(state.shown.tokens[: len(state.prefix)]) - (
        first_tokens if head and first is not None else 0
    )
    carried = _tokens(state, plan.carry, state.n) if plan.carry is not None else 0
    return (
        _tokens(state, plan.start, plan.cut)
        + prefix_rest
        - ask.allowance
        - plan.words.tokens
        - carried
    )


def fixed(state: SessionState, ask: SummaryAsk, start: int, cut: int) -> SummaryPlan | None:
    """The plan of a summary of messages ``start .. cut-1`` fixed earlier (``ahead.py``), if
    that range still holds: it starts where a summary would start now, its cut is still a
    place a kept part may start (``_cuts``) that keeps the thinking rule, and it frees at
    least ``ask.least``. ``None`` otherwise. Pure, like ``plan``."""
    first = state.first_request
    if start != max(state.first_kept, state.base + (1 if first is not None else 0)):
        return None
    if not start < cut < state.n or cut <= state.first_kept:
        return None
    message = state.msgs[cut]
    if message.get("role") == "assistant":
        if not state.legal_cut(cut):
            return None
    elif not is_request(message):
        return None
    if not _keeps_thinking(state, cut):
        return None
    words = user_words(state, start, cut, ask.pin_budget, ask.answered_chars)
    chosen = SummaryPlan(start, cut, words, None)
    if _saving(state, chosen, ask, _first_tokens(state)) < ask.least:
        return None
    return chosen


__all__ = ["answered_text", "fixed", "plan", "projected", "summary_start", "user_words"]
