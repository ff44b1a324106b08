"""Which format the caller's lists are in, and the edge that converts each.

``FormatChoice(name)`` is fixed (``"anthropic"``, ``"openai-chat"``, ``"openai-responses"``)
or ``"auto"``: then the first list that decides (``detect``) fixes it for good. Until one
does, a list with a leading system message goes through the Chat edge (plain messages read
the same in both OpenAI formats) and any other list through the edge used last, Anthropic
(none: canonical, straight to the engine) at first. One ``Edge`` per format, kept for the
choice's life: an edge remembers the lists it converted (``edge.py``).
"""

from __future__ import annotations

from . import CONVERTERS, FORMATS, detect, has_system
from . import openai_chat as chat_format
from .edge import Edge


class FormatChoice:
    def __init__(self, name: str = "auto") -> None:
        if name != "auto" and name not in FORMATS:
            raise ValueError(f"format={name!r}: expected 'auto' or one of {', '.join(FORMATS)}")
        self.name = name
        self.last: Edge | None = None  # the edge of the list given last
        self._edges: dict[str, Edge] = {}

    def edge_for(self, messages: object) -> Edge | None:
        """The edge converting ``messages`` (None: canonical, straight to the engine)."""
        name = self.name
        if name == "auto":
            found = detect(messages)
            if found is not None:
                self.name = name = found
            elif isinstance(messages, list) and has_system(messages):
                name = chat_format.NAME
            else:
                name = self.last.converter.name if self.last is not None else "anthropic"
        if name not in CONVERTERS:
            self.last = None
            return None
        if name not in self._edges:
            self._edges[name] = Edge(CONVERTERS[name])
        self.last = self._edges[name]
        return self.last

    def fixed(self) -> Edge | None:
        """The edge of a fixed format when no list came in yet (a resumed session's view is
        in its own format); None for the canonical one, or while ``"auto"`` has not decided."""
        if self.last is None and self.name in CONVERTERS:
            self.edge_for([])
        return self.last


__all__ = ["FormatChoice"]
