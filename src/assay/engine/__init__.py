"""One run: the plan's executions, the runner, scoring, the recorder, systems under test and
executors."""
