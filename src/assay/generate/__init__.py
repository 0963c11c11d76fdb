"""Test sets that write themselves: ``assay generate`` writes a dataset of checked questions
from a folder of documents; ``assay simulate`` has simulated users with goals talk to a system
under test and scores the conversations (docs/generate.md)."""
