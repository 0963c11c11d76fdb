"""Judges that prove themselves: a judge metric's calibration set measured once per run, its
agreement with people and corrected pass rate in the report, judge swaps and label queues.

``identity`` names a judge; ``measure`` scores a calibration set with it; ``run_blocks`` builds
a run's judge blocks (with the cache in ``cache``); ``swap`` compares two judges on a set;
``labels`` keeps the viewer's label queue.
"""
