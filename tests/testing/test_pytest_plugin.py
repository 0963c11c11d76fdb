"""The pytest plugin, driven through pytester: one test per sample, messages, selection."""

from __future__ import annotations

import json
import textwrap

import pytest

pytest_plugins = ["pytester"]

DATASET = """
schema_version: assay.dataset.v1
name: plugin-test
metrics: [exact-match]
samples:
  - {id: "001", input: {q: one}, expected_output: "uno"}
  - {id: "002", input: {q: two}, expected_output: "dos"}
  - {id: "003", input: {q: three}, expected_output: "tres"}
"""

BOT = """
import json, pathlib
CALLS = pathlib.Path(__file__).with_name("calls.jsonl")
WORDS = {"one": "uno", "two": "zwei", "three": "tres"}
def answer(inp):
    with CALLS.open("a") as f:
        f.write(json.dumps(inp["q"]) + "\\n")
    return WORDS[inp["q"]]
"""

TESTS = """
import pytest
from bot import answer

@pytest.mark.assay("golden.yml", sut=answer)
def test_golden(assay_row):
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yml", golden=DATASET)
    pytester.makepyfile(bot=BOT, test_golden=TESTS)
    pytester.syspathinsert()
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "assay.pytest_plugin", "-p", "no:cacheprovider", *args
    )


def _calls(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_one_test_per_sample_and_the_failing_one_shows_expected_and_actual(project):
    result = _run(project, "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_golden[[]001[]] PASSED*",
            "*test_golden[[]002[]] FAILED*",
            "*test_golden[[]003[]] PASSED*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*sample '002' did not pass:",
            "*- exact-match failed: scored 0.0000 (threshold 0.5000)",
            '*input:    {"q": "two"}',
            '*expected: "dos"',
            '*actual:   "zwei"',
        ]
    )
    assert sorted(_calls(project)) == ["one", "three", "two"]  # each sample answered once


def test_k_selects_samples_and_only_those_are_evaluated(project):
    result = _run(project, "-k", "001 or 003")
    result.assert_outcomes(passed=2, deselected=1)
    assert sorted(_calls(project)) == ["one", "three"]


def test_an_errored_row_fails_its_test_naming_the_error(pytester):
    pytester.makefile(".yml", golden=DATASET)
    pytester.makefile(".json", outputs=json.dumps({"outputs": {"001": "uno", "003": "tres"}}))
    pytester.makepyfile(
        test_saved="""
        import pytest
        @pytest.mark.assay("golden.yml", outputs="outputs.json")
        def test_saved(assay_row):
            pass
        """
    )
    result = _run(pytester)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*system-under-test errored: no saved output for sample '002'*", "*actual:   (no answer)"]
    )


def test_metrics_and_samples_options_and_an_explicit_check(project):
    project.makepyfile(
        test_options="""
        import pytest
        from bot import answer

        @pytest.mark.assay("golden.yml", sut=answer, metrics=["rouge-l"], samples=["002"])
        def test_rouge(assay_row):
            assert assay_row.scores() == {"rouge-l": 0.0}
            assert not assay_row.passed
            with pytest.raises(AssertionError, match="rouge-l failed"):
                assay_row.check()
        """
    )
    result = _run(project, "test_options.py", "-v")
    result.assert_outcomes(passed=1)  # checked explicitly: the plugin does not fail it again
    result.stdout.fnmatch_lines(["*test_rouge[[]002[]] PASSED*"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('"missing.yml", sut=answer', "*@pytest.mark.assay: *missing.yml*"),
        ('"golden.yml", sut=answer, samples=["404"]', "*no sample '404' in the dataset*"),
        ('"golden.yml"', "*give exactly one of outputs=FILE or sut=*"),
        ('"golden.yml", sut=answer, metrics=["no-such-metric"]', "*no-such-metric*"),
    ],
)
def test_bad_marker_is_a_one_line_collection_error(project, marker, message):
    project.makepyfile(
        test_golden=textwrap.dedent(
            f"""
            import pytest
            from bot import answer

            @pytest.mark.assay({marker})
            def test_golden(assay_row):
                pass
            """
        )
    )
    result = _run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str()


def test_assay_row_without_the_marker_is_a_collection_error(project):
    project.makepyfile(test_golden="def test_golden(assay_row):\n    pass\n")
    result = _run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*'assay_row' needs @pytest.mark.assay*"])


def test_repetitions_are_each_checked(project):
    project.makefile(".yml", golden=DATASET.replace("metrics:", "repetitions: 2\nmetrics:"))
    result = _run(project, "-k", "002")
    result.assert_outcomes(failed=1, deselected=2)
    result.stdout.fnmatch_lines(
        ["*repetition 0: exact-match failed*", "*repetition 1: exact-match failed*"]
    )


def test_a_metric_threshold_option_is_the_pass_rule(project):
    project.makepyfile(
        test_golden="""
        import pytest
        from bot import answer

        @pytest.mark.assay(
            "golden.yml", sut=answer, metrics=[{"name": "rouge-l", "threshold": 0.9}]
        )
        def test_golden(assay_row):
            pass
        """
    )
    project.makefile(".yml", golden=DATASET.replace('"uno"', '"uno uno"'))
    result = _run(project, "-k", "001")
    # rouge-l of "uno" against "uno uno": p=1, r=0.5, F1=2/3 -> below 0.9
    result.assert_outcomes(failed=1, deselected=2)
    result.stdout.fnmatch_lines(["*- rouge-l failed: scored 0.6667 (threshold 0.9000)"])
