"""Why a row failed, in one line a person can act on, built from the metric's details.

A failing row's reason used to be "scored 0.0, below the threshold 0.5" for every metric; the
reason now names what the metric compared: the first relevant rank against k and the ranking
(retrieval), the unsupported claims (RAG), the forbidden or missing tool and the call order
(trajectories), the pattern and the closest span (regex), where expected and actual part ways
(exact-match, contains). Every reason ends with the score and the threshold. Built from the
details alone when the texts are not at hand (a row read back from the run store).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.data.outputs import Output
from assay.errors import MetricError

_SHOWN = 60  # characters of a quoted text in a reason
_LISTED = 5  # items of a list in a reason
_TEXT_METRICS = frozenset({"exact-match", "contains", "regex", "rouge-l"})

Reasoner = Callable[[Mapping[str, Any], Any, Output | None], str | None]


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def _names(items: Sequence[Any], limit: int = _LISTED) -> str:
    shown = ", ".join(str(item) for item in items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _calls(details: Mapping[str, Any]) -> str:
    called = details.get("called")
    if not isinstance(called, list):
        return ""
    return "; calls: " + (" → ".join(str(c) for c in called) if called else "none")


def _trajectory(details: Mapping[str, Any], _e: Any, _o: Output | None) -> str | None:
    """Forbidden or missing tools, the order, the steps, the approvals."""
    found: list[str] = []
    if details.get("violations"):
        found.append(f"called forbidden tool(s) {_names(details['violations'])}")
    if details.get("missing"):
        found.append(f"never called expected tool(s) {_names(details['missing'])}")
    if details.get("unmet"):
        tools = [u.get("tool", "?") if isinstance(u, dict) else u for u in details["unmet"]]
        found.append(f"no call matched the expected arguments of {_names(tools)}")
    if "mode" in details and isinstance(details.get("expected"), list):
        order = " → ".join(str(t) for t in details["expected"])
        found.append(f"expected the call order {order} ({details['mode']})")
    if details.get("over_by"):
        found.append(f"took {details.get('steps')} steps, limit {details.get('max_steps')}")
    if details.get("ungated"):
        found.append(f"acted without approval: {_names(details['ungated'])}")
    elif details.get("pending_approvals"):
        found.append(
            f"{details['pending_approvals']} approval(s) still pending "
            f"(finish: {details.get('finish_reason')})"
        )
    return "; ".join(found) + _calls(details) if found else None


def _relevant(expected: object) -> list[str]:
    """The relevant ids (gain above zero) as the retrieval metrics read ``expected``: a list
    of ids, an id -> gain map, or a JSON string of either; none when it is neither."""
    from assay.metrics.relevance import parse_gains  # here: renderers load without metrics

    try:
        return [doc for doc, gain in parse_gains(expected).items() if gain > 0]
    except MetricError:
        return []


def _retrieval(details: Mapping[str, Any], expected: object, output: Output | None) -> str | None:
    """The first relevant rank against k, the ranking and the relevant ids."""
    k = details.get("k")
    relevant = _relevant(expected)
    ranking = list(output.retrieved.ids) if output is not None and output.retrieved else None
    rank = details.get("first_relevant_rank")
    if rank is None and ranking is not None and relevant:
        rank = next((i for i, doc in enumerate(ranking, 1) if doc in relevant), None)
    if rank:
        where = f"first relevant document at rank {rank}" + (f", k={k}" if k else "")
    elif (
        ranking is not None
        or "first_relevant_rank" in details
        or details.get("hit") is False
        or details.get("found") == 0
        or details.get("dcg") == 0
    ):
        where = "no relevant document retrieved" + (f" in the top {k}" if k else "")
    else:
        return None
    if ranking is not None:
        shown = min(10, max(_LISTED, rank or 0))  # up to the first relevant one
        where += f"; retrieved: {_names(ranking, shown) or 'nothing'}"
    if relevant:
        where += f"; relevant: {_names(relevant)}"
    return where


def _units(details: Mapping[str, Any]) -> str | None:
    """RAG judged units: the unsupported claims or irrelevant statements, quoted when kept."""
    for key, bad in (("claims", "unsupported"), ("statements", "irrelevant")):
        units = details.get(key)
        if not isinstance(units, list):
            continue
        failing = [u for u in units if isinstance(u, dict) and u.get("verdict") == bad]
        if not failing:
            return f"no {key} judged {'supported' if bad == 'unsupported' else 'relevant'}"
        shown = [_quote(u["text"]) if "text" in u else f"#{u.get('index')}" for u in failing]
        return f"{len(failing)} of {len(units)} {key} {bad}: {'; '.join(shown[:_LISTED])}"
    if "relevant_ranks" in details:
        ranks = details["relevant_ranks"]
        return f"relevant contexts at ranks {_names(ranks) or 'none'} of {details.get('ranked')}"
    return None


def _diff(expected: object, output: Output | None) -> str | None:
    """Where expected and actual part ways (exact-match)."""
    if not isinstance(expected, str) or output is None:
        return None
    actual = output.text
    at = next(
        (i for i, (a, b) in enumerate(zip(expected, actual)) if a != b),
        min(len(expected), len(actual)),
    )
    return f"expected {_quote(expected)}, got {_quote(actual)} (they differ from character {at})"


def _contains(expected: object, output: Output | None) -> str | None:
    if output is None or expected is None:
        return None
    wanted = expected if isinstance(expected, list) else [expected]
    missing = [str(w) for w in wanted if str(w).lower() not in output.text.lower()]
    if not missing:
        return None
    return f"the answer lacks {', '.join(_quote(m) for m in missing[:_LISTED])}"


def _regex(expected: object, output: Output | None) -> str | None:
    """The pattern and the answer's span closest to its literal text."""
    if not isinstance(expected, str):
        return None
    line = f"pattern {expected} did not match"
    if output is None or not output.text:
        return line
    from rapidfuzz import fuzz  # a compiled extension: loaded when a regex row failed

    literal = re.sub(r"\\[a-zA-Z]|[\\^$.|?*+()\[\]{}]", "", expected.strip("/"))
    if not literal:
        return line
    found = fuzz.partial_ratio_alignment(literal, output.text)
    if found is None or found.dest_end <= found.dest_start:
        return line
    return f"{line}; closest span {_quote(output.text[found.dest_start : found.dest_end])}"


def _lexical(
    metric: str, details: Mapping[str, Any], expected: object, output: Output | None
) -> str | None:
    """exact-match, contains, regex, rouge-l, ordinal-distance, citations."""
    if metric == "exact-match":
        return _diff(expected, output)
    if metric == "contains":
        return _contains(expected, output)
    if metric == "regex":
        return _regex(expected, output)
    if "lcs_tokens" in details:
        return (
            f"longest common subsequence {details['lcs_tokens']} tokens "
            f"(precision {details.get('precision', 0):.2f}, recall {details.get('recall', 0):.2f})"
        )
    if "distance" in details and output is not None and isinstance(expected, str):
        return (
            f"expected {_quote(expected)}, got {_quote(output.text)}: {details['distance']} apart"
        )
    if "missing" in details and "required" in details:
        return f"{details['missing']} of {details['required']} required citations missing"
    if "matched_rank" in details and details["matched_rank"] is None:
        return f"the expected answer is in none of the top {details.get('k')} passages"
    return None


def failing_reason(
    metric: str,
    score: float,
    threshold: float,
    details: Mapping[str, Any],
    expected: object = None,
    output: Output | None = None,
) -> str:
    """One line: what the metric found, then ``(score 0.0000 < threshold 0.5)``."""
    measured = f"score {score:.4f} < threshold {threshold:g}"
    scored_ranking = metric.startswith("retrieval-") and output is not None and output.retrieved
    if output is not None and not output.text.strip() and not scored_ranking:
        why = "empty answer"
        if isinstance(expected, str) and metric in _TEXT_METRICS:
            why += f"; expected {_quote(expected)}"  # (a diff against nothing says no more)
        else:
            found = _why(metric, details, expected, output)
            why += f"; {found}" if found else ""
    else:
        why = _why(metric, details, expected, output)
    return (
        f"{why} ({measured})" if why else f"scored {score:.4f}, below the threshold {threshold:g}"
    )


def _why(metric: str, details: Mapping[str, Any], expected: object, output: Output | None) -> str:
    if "called" in details or "over_by" in details or "pending_approvals" in details:
        return _trajectory(details, expected, output) or ""
    if metric.startswith("retrieval-"):
        return _retrieval(details, expected, output) or ""
    found = _units(details) or _lexical(metric, details, expected, output)
    return found or ""
