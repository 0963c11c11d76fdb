"""Long-running fuzzing of assay's input surfaces (``python -m fuzz --help``).

The bounded property tests in ``tests/reliability`` run a few hundred cases per surface in the
suite; this entry point runs the long version and counts what no input may cause: a crash
(the process died), a hang (one case over its time limit) or an untyped exception (anything
outside assay's own error types).
"""
