"""``assay view``: a local, read-only web viewer over the run store (standard library server).

Pages: every dataset's runs over time with a trend chart per metric and each run's gate
verdict; one run (summary, aggregates with intervals, cohorts, histograms, a filterable
per-sample table whose rows expand to input, expected, actual, retrieved contexts, trajectory
and judge reasons); two runs side by side (flips, deltas with intervals, changed rows first).
"""

from __future__ import annotations
