"""The assay pytest plugin: one test per dataset sample, failing with expected vs actual.

Registered as the ``assay`` entry point of ``pytest11``. A test that takes the ``assay_row``
fixture and carries ``@pytest.mark.assay(dataset, ...)`` is parametrised over the dataset's
sample ids, so ``pytest -k capital`` selects samples. The selected samples are evaluated once
per session; each test then fails when its sample failed or errored on any metric. Only pytest
is imported here, so the plugin costs nothing in projects that do not use it.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from assay.testing.rows import AssayRow
    from assay.testing.suite import DatasetSuite

MARKER = (
    "assay(dataset, *, metrics=None, outputs=None, sut=None, samples=None): run each sample of "
    "a golden dataset as its own test (take the 'assay_row' fixture)"
)
_SUITES = pytest.StashKey[dict[str, "DatasetSuite"]]()
_SELECTED = pytest.StashKey[dict[str, list[str]]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    config.stash[_SUITES] = {}
    config.stash[_SELECTED] = {}


def _resolve(value: object, base: Path) -> Any:
    if isinstance(value, (str, Path)) and not Path(value).is_absolute():
        return base / value
    return value


def _suite(config: pytest.Config, marker: pytest.Mark, base: Path) -> tuple[str, DatasetSuite]:
    """The (cached) suite a marker describes; relative paths are relative to the test file."""
    from assay.errors import AssayError
    from assay.testing.suite import DatasetSuite

    if len(marker.args) != 1:
        pytest.fail("@pytest.mark.assay takes one positional argument: the dataset", False)
    options = dict(marker.kwargs)
    options.pop("samples", None)
    dataset = _resolve(marker.args[0], base)
    if "outputs" in options:
        options["outputs"] = _resolve(options["outputs"], base)
    key = repr((str(dataset), sorted(options.items(), key=lambda kv: kv[0])))
    suites = config.stash[_SUITES]
    if key not in suites:
        try:
            suites[key] = DatasetSuite(dataset, **options)
        except (AssayError, TypeError) as exc:
            pytest.fail(f"@pytest.mark.assay: {exc}", pytrace=False)
    return key, suites[key]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "assay_row" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("assay")
    if marker is None:
        pytest.fail(f"{metafunc.function.__name__}: 'assay_row' needs @pytest.mark.assay", False)
    key, suite = _suite(metafunc.config, marker, metafunc.definition.path.parent)
    ids = list(marker.kwargs.get("samples") or suite.sample_ids)
    unknown = [i for i in ids if i not in set(suite.sample_ids)]
    if unknown:
        pytest.fail(f"@pytest.mark.assay: no sample {unknown[0]!r} in the dataset", False)
    metafunc.parametrize("assay_row", [(key, i) for i in ids], ids=ids, indirect=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Remember which samples survived -k/-m, so one evaluation runs exactly those."""
    selected = session.config.stash[_SELECTED]
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "assay_row" in callspec.params:
            key, sample_id = callspec.params["assay_row"]
            selected.setdefault(key, []).append(sample_id)


@pytest.fixture
def assay_row(request: pytest.FixtureRequest) -> AssayRow:
    """The evaluated sample this test stands for (see :class:`assay.testing.AssayRow`)."""
    from assay.errors import AssayError

    key, sample_id = request.param
    suite = request.config.stash[_SUITES][key]
    try:
        suite.run(request.config.stash[_SELECTED].get(key) or [sample_id])
        return suite.row(sample_id)
    except AssayError as exc:
        pytest.fail(f"assay could not run sample {sample_id!r}: {exc}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """After the test body passes, fail it when its sample did not pass (unless it checked)."""
    __tracebackhide__ = True
    result = yield
    row = pyfuncitem.funcargs.get("assay_row")
    if row is not None:
        from assay.testing.rows import AssayRow

        if isinstance(row, AssayRow) and not row.checked:
            row.check()
    return result
