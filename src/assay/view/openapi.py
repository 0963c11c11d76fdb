"""The OpenAPI 3.1 document of the viewer's JSON API (``GET /api/openapi.json``)."""

from __future__ import annotations

from typing import Any, Final


def _query(name: str, description: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": kind}}


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "200": {"description": description, "content": {"application/json": {"schema": schema}}}
    }


_RUN_ID: Final = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
_ERRORS: Final = {
    "401": {"description": "no or wrong token (Authorization: Bearer ..., or the login cookie)"},
    "404": {"description": "no such run or route", "content": {"application/json": {}}},
    "422": {"description": "a bad query parameter", "content": {"application/json": {}}},
}
_RUN: Final = {
    "type": "object",
    "properties": {
        name: {"type": kind}
        for name, kind in (
            ("run_id", "string"),
            ("dataset", "string"),
            ("status", "string"),
            ("created_at", "string"),
            ("updated_at", "string"),
            ("branch", ["string", "null"]),
            ("tags", "array"),
            ("metrics", "array"),
            ("executions", "integer"),
            ("errored", "integer"),
        )
    },
}

OPENAPI: Final[dict[str, Any]] = {
    "openapi": "3.1.0",
    "info": {
        "title": "assay view API",
        "version": "1",
        "description": "Runs of an assay run store: list, report, rows as CSV, compare, trend.",
    },
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
    "paths": {
        "/api/runs": {
            "get": {
                "summary": "Runs, newest first, a page at a time",
                "parameters": [
                    _query("dataset", "only runs of this dataset"),
                    _query("branch", "only runs made on this branch"),
                    _query("tag", "only runs with samples carrying this tag"),
                    _query("limit", "runs per page (default 50, at most 500)", "integer"),
                    _query("offset", "runs to skip (next_offset of the previous page)", "integer"),
                ],
                "responses": {
                    **_json(
                        "a page of runs",
                        {
                            "type": "object",
                            "properties": {
                                "schema_version": {"const": "assay.api.v1"},
                                "total": {"type": "integer"},
                                "offset": {"type": "integer"},
                                "limit": {"type": "integer"},
                                "next_offset": {"type": ["integer", "null"]},
                                "runs": {"type": "array", "items": _RUN},
                            },
                        },
                    ),
                    **_ERRORS,
                },
            }
        },
        "/api/runs/{run_id}": {
            "get": {
                "summary": "One run's report (assay.report.v1), as assay report RUN -f json",
                "parameters": [_RUN_ID],
                "responses": {**_json("the report", {"type": "object"}), **_ERRORS},
            }
        },
        "/api/runs/{run_id}/rows.csv": {
            "get": {
                "summary": "One run's rows, a line per execution and metric, streamed",
                "parameters": [_RUN_ID],
                "responses": {
                    "200": {
                        "description": "columns: sample_id, repetition, tags (';'-joined), "
                        "metric, status (passed, failed, errored), score, threshold, reason",
                        "content": {"text/csv": {"schema": {"type": "string"}}},
                    },
                    **_ERRORS,
                },
            }
        },
        "/api/compare": {
            "get": {
                "summary": "Run b compared with run a (paired tests, regressions, flips)",
                "parameters": [
                    {**_query("a", "the reference run's id"), "required": True},
                    {**_query("b", "the current run's id"), "required": True},
                ],
                "responses": {**_json("the comparison", {"type": "object"}), **_ERRORS},
            }
        },
        "/api/trend": {
            "get": {
                "summary": "A metric's mean and pass rate over runs, oldest first",
                "parameters": [
                    {**_query("metric", "the metric's name"), "required": True},
                    _query("dataset", "only runs of this dataset"),
                    _query("branch", "only runs made on this branch"),
                    _query("limit", "the newest N runs (default 30, at most 500)", "integer"),
                ],
                "responses": {**_json("the trend", {"type": "object"}), **_ERRORS},
            }
        },
    },
}
