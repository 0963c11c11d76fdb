"""Loads the assay plugin when assay runs from a source checkout that was not pip-installed.

An installed assay registers the plugin itself (the ``pytest11`` entry point); then this file
does nothing.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("assay.pytest_plugin"):
        config.pluginmanager.import_plugin("assay.pytest_plugin")
