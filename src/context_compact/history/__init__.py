"""A session's history seen from outside the engine: replayed turn by turn, imported, exported.

``inspect`` replays a journal through ``SessionState`` to say what compaction did at each turn
(the figures the CLI's ``inspect`` and the inspector show); ``transfer`` writes an agent's log
as a new session and a session's history out as a file. Both only read a store's journals or
append whole new sessions to it through the engine; the engine (``session``) never imports
them. The modules are loaded when named, so importing this package loads nothing else.
"""
