"""The inspector: what compaction did to a session, as a page in a browser.

``data.py`` reads a session from its store (views per request, tokens, events, links, search,
a side-by-side of two policies); ``server.py`` serves the page and a small JSON API over it on
127.0.0.1; ``report.py`` writes the same page as one self-contained file. The page itself
(``static/``: one HTML file, one script, one style sheet, hand-written) fetches nothing from
outside.
"""

from .data import Inspection, InspectorError
from .report import report, write_report
from .server import Inspector, InspectorServer

__all__ = ["Inspection", "Inspector", "InspectorError", "InspectorServer", "report", "write_report"]
