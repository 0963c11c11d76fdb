"""The metric registry: aliases, module:Class paths, 'as' renaming, uniqueness and plugins."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.data.dataset import MetricSpec, Sample
from assay.data.outputs import Output
from assay.errors import MetricConfigError
from assay.metrics import registry
from assay.metrics.catalogue import BUILTINS
from assay.metrics.lexical import Contains, ExactMatch, RougeL
from assay.metrics.ordinal import OrdinalDistance
from assay.metrics.registry import catalogue, resolve, resolve_all

DETERMINISTIC = [
    "exact-match",
    "contains",
    "regex",
    "rouge-l",
    "ordinal-distance",
    "citation-groundedness",
    "retrieval-hit-at-k",
    "retrieval-recall-at-k",
    "retrieval-mrr",
    "retrieval-ndcg-at-k",
    "answer-containment-at-k",
    "tool-called",
    "tool-not-called",
    "tool-called-with",
    "tool-call-order",
    "steps-below",
    "no-pending-approvals",
    "approval-gated",
]

PLUGIN_MODULE = '''
from dataclasses import dataclass

from assay.metrics.base import MetricScore


@dataclass(frozen=True)
class WordCount:
    """Scores 1.0 when the output has at most max_words words."""

    name: str = "word-count"
    max_words: int = 3

    def score(self, sample, output):
        return MetricScore(1.0 if len(output.text.split()) <= self.max_words else 0.0)


class Mutable:
    def __init__(self):
        self.name = "mutable"

    def score(self, sample, output):
        return MetricScore(0.5)


class ReadOnlyName:
    @property
    def name(self):
        return "read-only"

    def score(self, sample, output):
        return MetricScore(0.5)


NOT_A_METRIC = 42
INSTANCE = WordCount(name="word-count-instance", max_words=1)


def broken_factory(**options):
    raise RuntimeError("plugin exploded")
'''


def sample(expected: Any = "x") -> Sample:
    return Sample(id="s", input={}, expected_output=expected)


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An importable module plus an installed (fake) distribution.

    The distribution declares ``assay.metrics`` entry points.
    """
    module_name = f"assay_test_plugin_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module_name}.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    dist = tmp_path / "assay_test_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: assay-test-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(
        textwrap.dedent(
            f"""\
            [assay.metrics]
            word-count = {module_name}:WordCount
            word-count-instance = {module_name}:INSTANCE
            plugin-broken = {module_name}:broken_factory
            plugin-missing = no_such_module_for_assay_tests:Thing

            [some.other.group]
            ignored = {module_name}:WordCount
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield module_name
    sys.modules.pop(module_name, None)


# --------------------------------------------------------------------------- aliases


def test_catalogue_lists_every_deterministic_metric_with_a_description() -> None:
    rows = dict(catalogue())
    for name in DETERMINISTIC:
        assert name in rows
        assert rows[name].strip()


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_alias_resolves_to_a_metric_with_that_name(name: str) -> None:
    metric = resolve(name)
    assert metric.name == name
    assert callable(metric.score)


def test_resolve_passes_instances_through() -> None:
    metric = ExactMatch()
    assert resolve(metric) is metric


def test_resolve_spec_and_mapping_with_options() -> None:
    by_mapping = resolve({"name": "ordinal-distance", "scale": ["low", "high"]})
    by_spec = resolve(MetricSpec(name="ordinal-distance", scale=["low", "high"]))
    assert isinstance(by_mapping, OrdinalDistance)
    assert by_mapping == by_spec == OrdinalDistance(scale=("low", "high"))
    assert resolve({"name": "rouge-l", "beta": 2}) == RougeL(beta=2)


def test_unknown_metric_lists_known_ones() -> None:
    with pytest.raises(MetricConfigError) as info:
        resolve("exact-mtach")
    message = str(info.value)
    assert message.startswith(
        "unknown metric 'exact-mtach'. Did you mean 'exact-match'? Known metrics: "
    )
    for name in DETERMINISTIC:
        assert name in message


@pytest.mark.parametrize(
    "options",
    [
        {"name": "rouge-l", "bogus": 1},
        {"name": "rouge-l", "max_tokens": 0},
        {"name": "regex", "timeout_s": -1},
        {"name": "exact-match", "case_sensitive": False},
        {"name": "ordinal-distance", "scale": "low"},
    ],
)
def test_invalid_options_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(MetricConfigError, match=f"metric '{options['name']}'|must|scale"):
        resolve(options)


def test_non_metric_spec_type_is_rejected() -> None:
    with pytest.raises(MetricConfigError, match="must be an alias"):
        resolve(42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- module:Class paths


def test_module_class_path_builds_the_class() -> None:
    metric = resolve("assay.metrics.lexical:Contains")
    assert metric == Contains()
    metric = resolve({"name": "assay.metrics.lexical:Contains", "case_sensitive": False})
    assert metric.score(sample("PARIS"), Output("paris")).value == 1.0


def test_module_path_to_an_instance_and_nested_attribute(plugin: str) -> None:
    module = plugin
    assert resolve(f"{module}:INSTANCE").name == "word-count-instance"
    metric = resolve({"name": f"{module}:WordCount", "max_words": 1})
    assert metric.score(sample(), Output("two words")).value == 0.0


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "no_such_module_for_assay_tests:Thing",
            "cannot import module 'no_such_module_for_assay_tests'",
        ),
        ("assay.metrics.lexical:Nope", "has no attribute 'Nope'"),
        ("assay.metrics.lexical:ExactMatch.missing", "has no attribute 'ExactMatch.missing'"),
        ("assay.metrics.lexical:tokenize", "invalid options|has no 'name'"),
        ("assay.metrics.base:PASS_THRESHOLD", "resolves to float, which has no 'name' and 'score"),
    ],
)
def test_bad_module_paths(path: str, message: str) -> None:
    with pytest.raises(MetricConfigError, match=message):
        resolve(path)


@pytest.mark.parametrize(
    ("path", "option", "kind"),
    [
        ("os:system", "command", "builtin_function_or_method"),
        ("subprocess:run", "args", "function"),
        ("subprocess:Popen", "args", "the class Popen"),
    ],
)
def test_a_path_runs_only_a_metric_class(tmp_path: Path, path: str, option: str, kind: str) -> None:
    """A dataset names code as data: a callable that is not a metric class is never called,
    whatever options come with it."""
    ran = tmp_path / "ran"
    value: Any = f"touch {ran}" if option == "command" else ["touch", str(ran)]
    with pytest.raises(MetricConfigError, match=f"resolves to {kind}, which has no 'name'"):
        resolve({"name": path, option: value})
    assert not ran.exists()


def test_path_to_something_that_is_not_a_metric(plugin: str) -> None:
    with pytest.raises(MetricConfigError, match="resolves to int"):
        resolve(f"{plugin}:NOT_A_METRIC")


# --------------------------------------------------------------------------- 'as' renaming


def test_as_renames_a_builtin_with_options() -> None:
    metric = resolve({"name": "rouge-l", "as": "rouge-l-recall-heavy", "beta": 2})
    assert metric.name == "rouge-l-recall-heavy"
    assert metric == RougeL(name="rouge-l-recall-heavy", beta=2)
    assert resolve("rouge-l").name == "rouge-l"  # the registry itself is unchanged


def test_as_renames_plain_objects(plugin: str) -> None:
    metric = resolve({"name": f"{plugin}:Mutable", "as": "renamed"})
    assert metric.name == "renamed"


def test_as_on_a_read_only_name_is_a_config_error(plugin: str) -> None:
    with pytest.raises(MetricConfigError, match="cannot be renamed with 'as'"):
        resolve({"name": f"{plugin}:ReadOnlyName", "as": "other"})


@pytest.mark.parametrize("label", ["Has Spaces", "UPPER", "", 5, "trailing-", "-leading"])
def test_as_must_be_kebab_case(label: Any) -> None:
    with pytest.raises(MetricConfigError, match="'as' must be a kebab-case name"):
        resolve({"name": "contains", "as": label})


# --------------------------------------------------------------------------- uniqueness


def test_duplicate_names_in_a_run_are_rejected() -> None:
    with pytest.raises(MetricConfigError, match="metric name 'exact-match' is used twice"):
        resolve_all(["exact-match", "exact-match"])
    with pytest.raises(MetricConfigError, match="'contains' is used twice"):
        resolve_all(["contains", {"name": "contains", "case_sensitive": False}])


def test_as_makes_two_variants_of_one_metric_possible() -> None:
    metrics = resolve_all(
        ["contains", {"name": "contains", "as": "contains-ci", "case_sensitive": False}]
    )
    assert [m.name for m in metrics] == ["contains", "contains-ci"]


def test_instance_names_must_be_kebab_case() -> None:
    with pytest.raises(MetricConfigError, match="must be kebab-case"):
        resolve_all([ExactMatch(name="Exact Match")])


# --------------------------------------------------------------------------- entry-point plugins


def test_entry_point_plugin_from_an_installed_distribution(plugin: str) -> None:
    metric = resolve("word-count")
    assert metric.name == "word-count"
    assert metric.score(sample(), Output("one two")).value == 1.0
    with_options = resolve({"name": "word-count", "max_words": 1, "as": "short-answer"})
    assert with_options.name == "short-answer"
    assert with_options.score(sample(), Output("one two")).value == 0.0
    assert resolve("word-count-instance").name == "word-count-instance"


def test_plugins_appear_in_catalogue_and_unknown_message(plugin: str) -> None:
    rows = dict(catalogue())
    assert rows["word-count"] == f"third-party ({plugin}:WordCount)"
    assert "ignored" not in rows  # other entry-point groups are not metrics
    with pytest.raises(MetricConfigError) as info:
        resolve("nope")
    assert "word-count" in str(info.value)
    assert "exact-match" in str(info.value)


def test_plugin_that_fails_to_load_is_a_config_error(plugin: str) -> None:
    with pytest.raises(
        MetricConfigError, match="entry point failed to load \\(ModuleNotFoundError"
    ):
        resolve("plugin-missing")


def test_plugin_whose_factory_raises_is_a_config_error(plugin: str) -> None:
    """A broken plugin must not crash the CLI with a traceback (registry.py says so for load())."""
    with pytest.raises(MetricConfigError, match="plugin exploded"):
        resolve("plugin-broken")


def test_builtins_win_over_a_plugin_with_the_same_name(monkeypatch: pytest.MonkeyPatch) -> None:
    shadow = importlib.metadata.EntryPoint(
        name="exact-match", value="assay.metrics.lexical:Contains", group="assay.metrics"
    )
    extra = importlib.metadata.EntryPoint(
        name="my-contains", value="assay.metrics.lexical:Contains", group="assay.metrics"
    )

    def fake_entry_points(**params: Any) -> importlib.metadata.EntryPoints:
        assert params == {"group": "assay.metrics"}
        return importlib.metadata.EntryPoints([shadow, extra])

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    assert isinstance(resolve("exact-match"), ExactMatch)
    plugin = resolve({"name": "my-contains", "as": "my-contains"})
    assert isinstance(plugin, Contains)
    assert plugin.name == "my-contains"


def test_mapping_without_a_name_is_a_config_error() -> None:
    with pytest.raises(MetricConfigError):
        resolve({"scale": ["low", "high"]})


# --------------------------------------------------------------------------- the catalogue


@pytest.mark.parametrize("alias", sorted(BUILTINS))
def test_every_catalogue_row_names_a_class_whose_default_name_is_the_alias(alias: str) -> None:
    entry = BUILTINS[alias]
    module = importlib.import_module(entry.module)
    assert getattr(module, entry.attribute)().name == alias
    assert entry.description.strip()


OFFLINE_PROBE = """
import json, sys
from assay.metrics.registry import resolve
for name in {names!r}:
    resolve(name)
heavy = ("numpy", "scipy", "openai", "assay.metrics.semantic", "assay.metrics.judge",
         "assay.metrics.rubric", "assay.providers.chat")
print(json.dumps([m for m in heavy if m in sys.modules]))
"""


def test_resolving_offline_metrics_imports_no_model_backed_family() -> None:
    """An exact-match or retrieval run never loads numpy or the judge stack (module presence in a
    fresh interpreter, not a timing)."""
    names = ["exact-match", "rouge-l", "retrieval-mrr", "tool-called", "pii-leak", "faithfulness"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_PROBE.format(names=names)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
