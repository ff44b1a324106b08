"""The real peers: each peer's installed code behind the bench's strategy protocol.

One module per peer (``langchain.py``, ``llamaindex.py``, ``openhands.py``) converts the bench's
Anthropic-style history to the peer's native types and back, and drives the peer through its
own public hook at its documented defaults scaled to the budget (each module's docstring says
which, and the version it was read in). ``run.py`` is ``bench --real-peers``; ``worker.py``
runs OpenHands in a Python 3.12 interpreter when the bench's own is older.

All of it needs the bench's ``peers`` extra (``pip install 'context-compact-bench[peers]'``); a
peer that does not import is skipped with one line saying why.
"""
