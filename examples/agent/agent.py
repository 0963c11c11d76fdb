"""A tiny rule-based order-support agent that records its tool calls (examples/agent).

assay passes a ``recorder`` because the function has a parameter of that name; each
``recorder.record(...)`` becomes one tool call of the answer's trajectory.
"""

from __future__ import annotations

import re
from typing import Any

from assay.data.trajectory import TrajectoryRecorder


def answer(question: dict[str, Any], recorder: TrajectoryRecorder) -> str:
    """Answer one support question, calling (pretend) tools through the recorder."""
    text = str(question.get("question", ""))
    found = re.search(r"\b(\d{4})\b", text)
    if found is None:
        recorder.finish("stop")
        return "You're welcome!"
    order_id = int(found.group(1))
    recorder.record("lookup_order", {"order_id": order_id})
    if "money back" in text or "Refund" in text:
        recorder.record("issue_refund", {"order_id": order_id, "reason": "damaged"})
        recorder.approve(f"refund-{order_id}")
        recorder.finish("stop")
        return f"A refund for order {order_id} has been issued after approval."
    street = re.search(r"to (.+?) instead", text)
    if street is not None:
        arguments = {"order_id": order_id, "street": street.group(1)}
        recorder.record("update_address", arguments)
        recorder.finish("stop")
        return f"The address of order {order_id} is now {street.group(1)}."
    recorder.finish("stop")
    return f"Order {order_id} shipped on May 3 and arrives May 6."
