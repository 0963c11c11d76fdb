"""The ranked list the retrieval metrics read: the output's ``retrieved`` field, or its text.

The text form is JSON: a list of ids / ``{id, text}`` objects, or an object with a
``retrieved`` list. A repeated id keeps its first (best) rank.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from assay.data.bounded import loads_json
from assay.data.outputs import RankedDocs, parse_retrieved
from assay.errors import MetricError
from assay.metrics.memo import LastParsed

if TYPE_CHECKING:
    from assay.data.outputs import Output

_LAST_RANKING: LastParsed[RankedDocs] = LastParsed()


def ranked_ids(output: Output) -> tuple[str, ...]:
    """Ids of the ranked list, best first."""
    return ranked(output).ids


def ranked(output: Output) -> RankedDocs:
    """The output's ranked retrieval list (duplicates keep their best rank)."""
    if output.retrieved is not None:
        return output.retrieved
    memo = _LAST_RANKING
    if memo.source is output and memo.value is not None:
        return memo.value
    return memo.remember(output, _parse_ranking(output))


def _parse_ranking(output: Output) -> RankedDocs:
    text = output.text.strip()
    data = loads_json(
        text,
        lambda _: MetricError(
            "output has no 'retrieved' list and its text is not JSON; return {output, retrieved} "
            "from the system under test or a JSON list of ids"
        ),
    )
    if isinstance(data, Mapping) and "retrieved" in data:
        data = data["retrieved"]
    if not isinstance(data, list):
        raise MetricError(
            "retrieval output must be a JSON list or an object with a 'retrieved' list"
        )
    try:
        return parse_retrieved(data)
    except ValueError as exc:
        raise MetricError(str(exc)) from None
