"""``python -m assay``."""

from assay.cli import script_main

script_main()
