"""Summaries: what a summarizer is asked and answers, the summarizers we ship, and the texts
and readings they are made of (the prompts, the transcript a model reads, the facts of a
history, the extractive summary and its score)."""
