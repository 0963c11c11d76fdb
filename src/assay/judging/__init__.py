"""The one judge stack: prompts, strict reply parsing with one re-ask, and the judge client.

Every LLM-judged score in assay goes through here: the judge metrics (``llm-as-judge``,
``refusal-quality``, ``rubric``), the judge methods of the RAG and agent metrics, and Tez's
``llm_as_judge`` method. :mod:`.prompts` holds the templates, :mod:`.replies` the parsers (one
error type, :class:`~assay.errors.JudgeParseError`), :mod:`.client` the call with its re-ask.
"""
