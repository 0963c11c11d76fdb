"""Comparing runs: pairing, paired statistics, baselines, and the gate and its rules."""
