"""Fixtures for the calibration tests."""

from __future__ import annotations

from typing import Any

import pytest

from .builders import binary, document, ordinal


@pytest.fixture
def simple_doc() -> dict[str, Any]:
    return document(
        [binary("correct"), ordinal("clarity", na=True)],
        [
            {
                "id": "a",
                "human": {"correct": "MET", "clarity": "4"},
                "judges": {
                    "j1": {"correct": "MET", "clarity": "4"},
                    "j2": {"correct": "MET", "clarity": 5},
                },
            },
            {
                "id": "b",
                "human": {"correct": "UNMET", "clarity": "2"},
                "judges": {
                    "j1": {"correct": "MET", "clarity": "1"},
                    "j2": {"correct": "UNMET", "clarity": "2"},
                },
            },
            {
                "id": "c",
                "human": {"correct": "MET", "clarity": "n/a"},
                "judges": {
                    "j1": {"correct": "CANNOT_ASSESS", "clarity": "3"},
                    "j2": {"correct": "MET", "clarity": "n/a"},
                },
            },
            {
                "id": "d",
                "human": {"correct": "UNMET", "clarity": "5"},
                "judges": {
                    "j1": {"correct": "UNMET", "clarity": "5"},
                    "j2": {"correct": "UNMET", "clarity": "4"},
                },
            },
        ],
    )
