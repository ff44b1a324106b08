"""Summaries: the summarizer's contract, the summarizers we ship, and what they are made of.

``contract.py`` is what an engine asks and gets (``SummaryRequest``, ``SummaryResult``, the
``Summarizes`` protocol) and where a plain callable becomes a summarizer (``adapt``, once, at
the ``Compactor``); ``llm.py`` the model summarizer; ``extract.py`` the extractive summary and
the score of any summary, read off a history's ``facts`` (``facts.py``); ``transcript.py`` the
history as a model summarizer reads it; ``prompts.py`` every text a summary call sends.
"""

from .contract import (
    CallableSummarizer,
    ExtractiveSummarizer,
    Summarizer,
    Summarizes,
    SummaryRequest,
    SummaryResult,
    adapt,
)
from .extract import SummaryScore, extractive_summary, summary_score
from .llm import LLMSummarizer, summary_input

__all__ = [
    "CallableSummarizer",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "Summarizer",
    "Summarizes",
    "SummaryRequest",
    "SummaryResult",
    "SummaryScore",
    "adapt",
    "extractive_summary",
    "summary_input",
    "summary_score",
]
