"""Production monitoring: OpenTelemetry traces in (``assay ingest``, ``assay collect``),
sampled and redacted before storage, scored online with drift alerts (``assay monitor``), and
failures promoted into a dataset (``assay promote``). See docs/production.md."""
