"""The redactor, deterministic sampling, drift windows and the trace store's retention."""

from __future__ import annotations

import base64
import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.metrics.safety import canary_leaks, find_pii
from assay.production.drift import DriftRule, Observation, drift
from assay.production.mapping import SpanPart, ToolCall
from assay.production.redact import Redactor
from assay.production.sampling import check_rate, keep
from assay.production.store import StoredSpan, TraceStore

CANARY = "LSPR-CANARY-39945ED7F681"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to jane.roe@example.org today", "email"),
        ("card 4111 1111 1111 1111 please", "card"),
        ("IBAN GB82 WEST 1234 5698 7654 32 ok", "iban"),
        ("my ssn is 123-45-6789", "ssn"),
        ("key sk-proj-Zx81QwErTy12UiOp34AsDf56GhJk78Lm here", "openai-key"),
        ("aws AKIAIOSFODNN7EXAMPLE id", "aws-access-key"),
        ("token ghp_" + "a1B2c3D4e5" * 4 + " end", "github-token"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "bearer-token"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
        ),
        ("password = hunter2hunter2", "assigned-secret"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "private-key"),
    ],
)
def test_each_builtin_detector_redacts(text: str, kind: str) -> None:
    clean, counts = Redactor().text(text)
    assert counts.get(kind, 0) >= 1, (clean, counts)
    assert "[REDACTED:" in clean
    assert sum(find_pii(clean).values()) == 0  # pii-leak finds nothing left


def test_a_card_failing_luhn_is_left_alone() -> None:
    clean, counts = Redactor().text("order 4111 1111 1111 1112 shipped")
    assert "card" not in counts and "4111 1111 1111 1112" in clean


def test_canaries_verbatim_spaced_and_encoded_all_go() -> None:
    redactor = Redactor(canaries=[CANARY])
    for text in (
        f"the code is {CANARY}",
        "the code is lspr canary 39945ed7f681",
        "b64: " + base64.b64encode(CANARY.encode()).decode(),
        "hex " + CANARY.encode().hex(),
    ):
        clean, counts = redactor.text(text)
        assert counts.get("canary", 0) >= 1, text
        assert not canary_leaks(CANARY, clean), clean


def test_user_patterns_run_on_re2_and_bad_ones_are_usage_errors() -> None:
    clean, counts = Redactor(patterns=[r"ACME-\d{6}"]).text("ticket ACME-123456 open")
    assert clean == "ticket [REDACTED:pattern] open" and counts == {"pattern": 1}
    with pytest.raises(UsageError, match="not valid RE2"):
        Redactor(patterns=["(unclosed"])
    with pytest.raises(UsageError, match="too short"):
        Redactor(canaries=["abc"])


def test_a_part_is_redacted_everywhere_keys_of_tool_arguments_too() -> None:
    part = SpanPart(
        kind="tool",
        input="mail jane.roe@example.org",
        output="call +44 20 7946 0958",
        contexts=["ctx jane.roe@example.org"],
        tool=ToolCall(name="send", arguments={"jane.roe@example.org": ["AKIAIOSFODNN7EXAMPLE"]}),
        metadata={"who": "jane.roe@example.org"},
    )
    clean = Redactor().part(part)
    assert "example.org" not in clean.model_dump_json()
    assert "AKIAIOSFODNN7EXAMPLE" not in clean.model_dump_json()
    assert clean.redacted["email"] == 4 and clean.output_redacted == {"phone": 1}


def test_sampling_is_the_documented_hash_rule() -> None:
    rng = random.Random(7)
    ids = [f"{rng.getrandbits(128):032x}" for _ in range(20000)]
    for rate in (0.0, 0.1, 0.5, 1.0):
        expected = [
            int.from_bytes(hashlib.sha256(bytes.fromhex(i)).digest()[:8], "big") < rate * 2**64
            for i in ids
        ]
        assert [keep(i, rate) for i in ids] == expected
    share = sum(keep(i, 0.1) for i in ids) / len(ids)
    assert abs(share - 0.1) < 0.01  # binomial sd 0.002: five of them
    with pytest.raises(UsageError):
        check_rate(float("nan"))


def test_sampling_decides_alike_in_another_process() -> None:
    ids = [f"{n:032x}" for n in range(1, 400)]
    code = (
        "import sys; from assay.production.sampling import keep;"
        "print(''.join('1' if keep(i, 0.3) else '0' for i in sys.argv[1:]))"
    )
    env = {
        **os.environ,
        "PYTHONHASHSEED": "12345",
        "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
    }
    other = subprocess.run(
        [sys.executable, "-c", code, *ids], env=env, capture_output=True, text=True, check=True
    )
    assert other.stdout.strip() == "".join("1" if keep(i, 0.3) else "0" for i in ids)


def observations(values: list[float | None]) -> list[Observation]:
    return [Observation(f"t{i}", v, v is not None and v >= 0.5) for i, v in enumerate(values)]


def test_drift_windows_by_hand() -> None:
    rule = DriftRule(window=10, min_samples=5, threshold=0.8, max_drop=0.1)
    # windows newest first: [20..29] 7/10 pass, [10..19] 10/10, [0..9] 5/10
    values = [1.0] * 5 + [0.0] * 5 + [1.0] * 10 + [1.0] * 7 + [0.2, 0.1, 0.3]
    verdict = drift("m", observations(values), rule)
    assert verdict.status == "alert"
    assert verdict.current_pass_rate == 0.7 and verdict.stable_pass_rate == 1.0
    assert verdict.drop == pytest.approx(0.3)
    assert [r.trace_id for r in verdict.rows] == ["t28", "t27", "t29"]  # lowest score first
    assert verdict.trend == [0.5, 1.0, 0.7]


def test_drift_too_few_and_ok_and_errors() -> None:
    rule = DriftRule(window=10, min_samples=5)
    assert drift("m", observations([1.0] * 4), rule).status == "too-few"
    assert drift("m", observations([1.0] * 9 + [0.0]), rule).status == "ok"  # 0.9 >= 0.8
    errored = drift("m", observations([1.0] * 6 + [None] * 4), rule)
    assert errored.status == "alert" and errored.errored == 4
    assert errored.current_pass_rate == 1.0  # an errored row is not a failure
    with pytest.raises(UsageError):
        DriftRule(window=5, min_samples=6)


def test_retention_drops_old_traces_on_the_next_write(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.sqlite", retention_s=60)
    day = 86_400 * 10**9
    store.write([StoredSpan("a" * 32, "1" * 16, 5, SpanPart(output="old"))], now_ns=day)
    store.write(
        [StoredSpan("b" * 32, "2" * 16, 6, SpanPart(output="new"))], now_ns=day + 30 * 10**9
    )
    assert store.counts() == (2, 2)
    store.write([StoredSpan("c" * 32, "3" * 16, 7, SpanPart(output="x"))], now_ns=day + 61 * 10**9)
    assert [t for t, _ in store.trace_ids()] == ["b" * 32, "c" * 32]
    assert store.record("a" * 32) is None
    store.close()
