"""The FAQ bot's golden set as pytest tests: one test per sample, plus single checks."""

from __future__ import annotations

import pytest
from faq_bot import answer

from assay.testing import assert_metric


# One test per sample of golden.yml (ids: test_golden_set[capital-france], ...), scored with the
# metrics the dataset declares. A sample that fails or errors fails its test with the input,
# expected and actual answer in the message. Paths are relative to this file.
@pytest.mark.assay("golden.yml", sut=answer)
def test_golden_set(assay_row):
    # The body may add its own checks; the sample's metrics are checked after it returns.
    assert assay_row.output is not None


# Other metrics than the dataset's, on two samples only.
@pytest.mark.assay(
    "golden.yml",
    sut=answer,
    metrics=[{"name": "contains", "case_sensitive": False}],
    samples=["refund-window", "shipping-free"],
)
def test_policy_answers_quote_the_reference(assay_row):
    assert assay_row.scores() == {"contains": 1.0}


def test_unknown_question_gets_a_welcome():
    assert_metric(
        {"name": "contains", "case_sensitive": False}, answer({"question": "hi"}), "welcome"
    )


def test_order_ids_have_six_digits():
    order_id = answer({"question": "Give me a sample order id."})
    assert assert_metric("regex", order_id, r"/^ORD-\d{6}$/") == 1.0
