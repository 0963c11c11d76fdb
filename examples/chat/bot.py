"""A rule-based travel-desk bot for the chat example: it answers from the conversation so far.

assay calls it once per turn with ``message`` (the user's message at this turn), the
conversation's shared ``input`` (here ``customer``) and ``history`` (earlier user messages and
this bot's own replies, as chat messages).
"""

from __future__ import annotations

from typing import Any


def reply(data: dict[str, Any]) -> str:
    message = data["message"]
    said = " ".join(m["content"] for m in data["history"] if m["role"] == "user")
    if "Berlin" in message:
        return "Berlin, noted. Which day would you like to fly?"
    if "Friday" in message:
        return "There are two flights on Friday: 07:10 and 18:45."
    if message.startswith("Book") and "Friday" in said:
        return "Done: you are booked on Friday's 07:10 flight to Berlin."
    if "cancelled" in message:
        flight = next((w for w in message.split() if w[:2].isalpha() and w[2:].isdigit()), "?")
        return f"I am sorry to hear that {flight} was cancelled."
    if "money back" in message:
        return "You can choose a new flight or a voucher."  # never says 'refund'
    return "Could you tell me more?"
