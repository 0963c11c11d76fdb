"""Several systems scored on the same samples and metrics, in one report (``assay.systems.v1``).

``assay run DATASET --sut a=pkg.mod:fn --sut b=pkg.mod:gn`` (or ``--outputs a=x.json
--outputs b=y.json``) runs each system as its own stored run, then puts the reports side by
side with a paired comparison for every pair of systems (the statistics of ``assay compare``).
"""

from __future__ import annotations
