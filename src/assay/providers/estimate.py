"""Token estimates for a dry run, before anything is sent.

A prompt's tokens are estimated as one per ``CHARS_PER_TOKEN`` characters of its messages'
text (rounded up) plus ``MESSAGE_OVERHEAD`` per message (the role and separators of the chat
format); a reply's as ``REPLY_TOKENS`` (a judge's JSON verdict with a one-sentence reason), or
the request's ``max_tokens`` when that is smaller. OpenAI's tokenizers average about four
characters of English per token; other languages and code take more tokens. No tokenizer
library is used: tiktoken fetches its vocabulary files over the network on first use, and a dry
run sends nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

CHARS_PER_TOKEN: Final = 4
MESSAGE_OVERHEAD: Final = 4
REPLY_TOKENS: Final = 100


def prompt_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """The estimated prompt tokens of a chat request."""
    chars = sum(len(str(message.get("content") or "")) for message in messages)
    return math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages)


def reply_tokens(params: Mapping[str, Any]) -> int:
    """The estimated completion tokens of a chat request with these parameters."""
    cap = params.get("max_tokens") or params.get("max_completion_tokens")
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        return min(cap, REPLY_TOKENS)
    return REPLY_TOKENS


def text_tokens(texts: Sequence[str]) -> int:
    """The estimated input tokens of an embeddings request."""
    return sum(math.ceil(len(text) / CHARS_PER_TOKEN) for text in texts)
