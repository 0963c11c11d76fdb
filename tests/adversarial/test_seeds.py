"""Categories and the seed attacks shipped in the package."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from assay.adversarial.categories import CATEGORIES, FRAMEWORKS, select, worst
from assay.adversarial.seeds import lane_dataset, seed_dataset
from assay.errors import DatasetError, UsageError

# padosoft/eval-harness §5.3: value -> (label, frameworks, severity)
PADOSOFT = {
    "prompt-injection": ("Prompt injection", {"OWASP LLM Top 10", "NIST AI RMF"}, "high"),
    "jailbreak": ("Jailbreak", {"OWASP LLM Top 10", "NIST AI RMF"}, "critical"),
    "tool-abuse": ("Tool abuse", {"OWASP LLM Top 10"}, "critical"),
    "pii-leak": ("PII leak", {"OWASP LLM Top 10", "NIST AI RMF", "EU AI Act"}, "critical"),
    "ssrf": ("SSRF", {"OWASP LLM Top 10"}, "critical"),
    "sql-shell-injection": ("SQL/shell injection", {"OWASP LLM Top 10"}, "critical"),
    "ascii-smuggling": ("ASCII smuggling", {"OWASP LLM Top 10", "NIST AI RMF"}, "high"),
    "competitor-endorsement": ("Competitor endorsement", {"NIST AI RMF"}, "medium"),
    "excessive-agency": ("Excessive agency", {"OWASP LLM Top 10"}, "high"),
    "hallucination-overreliance": ("Hallucination overreliance", {"NIST AI RMF"}, "high"),
}


def test_categories_match_padosoft() -> None:
    table = {c.value: (c.label, set(c.frameworks), c.severity) for c in CATEGORIES}
    assert table == PADOSOFT


def test_every_category_has_five_varied_seeds() -> None:
    dataset = seed_dataset()
    per_category = Counter(s.metadata["adversarial"]["category"] for s in dataset.samples)
    assert set(per_category) == set(PADOSOFT)
    assert min(per_category.values()) >= 5
    questions = [s.input["question"] for s in dataset.samples]
    assert len(set(questions)) == len(questions)
    canaries = [s.metadata["canary"] for s in dataset.samples]
    assert len(set(canaries)) == len(canaries)
    for s in dataset.samples:
        block = s.metadata["adversarial"]
        label, frameworks, _ = PADOSOFT[block["category"]]
        assert block["label"] == label and set(block["compliance_frameworks"]) == frameworks
        assert s.metadata["canary"] in s.input["system"]
        assert s.metadata["refusal_expected"] is True
        assert s.metadata["tags"] == ["adversarial", block["category"]]


def test_tool_categories_declare_forbidden_tools() -> None:
    for s in seed_dataset().samples:
        if s.metadata["adversarial"]["category"] in ("tool-abuse", "ssrf", "sql-shell-injection"):
            forbidden = s.metadata["trajectory"]["forbidden_tools"]
            assert forbidden and set(forbidden) <= set(s.input["tools"])


def test_select_rejects_unknown_and_duplicate_categories() -> None:
    with pytest.raises(UsageError, match="Unsupported adversarial category 'sqli'"):
        select(["sqli"])
    with pytest.raises(UsageError, match="selected twice"):
        select(["ssrf", "ssrf"])
    assert len(select([])) == 10


def test_lane_dataset_narrows_to_categories() -> None:
    dataset = lane_dataset(None, select(["ssrf", "jailbreak"]))
    assert {s.metadata["adversarial"]["category"] for s in dataset.samples} == {"ssrf", "jailbreak"}


def test_worst_severity() -> None:
    assert worst(["low", "critical", "high"]) == "critical"
    assert worst([]) is None


def _write(tmp_path: Path, adversarial: object) -> Path:
    path = tmp_path / "mine.yml"
    sample = {
        "id": "x1",
        "input": {"q": "hi"},
        "expected_output": "no",
        "metadata": {"adversarial": adversarial},
    }
    path.write_text(yaml.safe_dump({"name": "mine", "samples": [sample]}))
    return path


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"category": "sqli"}, "metadata.adversarial.category"),
        ({"category": "ssrf", "severity": "huge"}, "metadata.adversarial.severity"),
        ({"category": "ssrf", "compliance_frameworks": ["ISO 42001"]}, "compliance_frameworks"),
        ("ssrf", "metadata.adversarial"),
    ],
)
def test_own_dataset_errors_name_file_sample_field(
    tmp_path: Path, block: object, field: str
) -> None:
    with pytest.raises(DatasetError, match=rf"mine.yml: sample 'x1': field '[^']*{field}"):
        lane_dataset(_write(tmp_path, block), select([]))


def test_own_dataset_defaults_from_category(tmp_path: Path) -> None:
    dataset = lane_dataset(_write(tmp_path, {"category": "ssrf"}), select(["ssrf"]))
    assert len(dataset.samples) == 1
    assert FRAMEWORKS[0] == "OWASP LLM Top 10"
