"""Write ``src/assay/report/t975.bin``: Student's t 0.975 quantile for df = 1 .. 2^15, as
``scipy.special.stdtrit`` gives it (little-endian doubles, entry ``df - 1`` at byte
``8 * (df - 1)``).

A report's 95 % mean interval needs one such quantile per metric; importing ``scipy.special``
to get it costs about 0.35 s of CPU in every run (it loads ``numpy.f2py`` and
``numpy.testing`` through its array-API layer), more than a 10,000-sample ranking run spends on
its scores. The table holds scipy's numbers bit for bit (``tests/report/test_t_table.py``
compares every entry); beyond it, and for any other level, ``report/statistics.py`` asks scipy.

    python scripts/t_table.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.special import stdtrit

SIZE = 2**15
TABLE = Path(__file__).resolve().parent.parent / "src" / "assay" / "report" / "t975.bin"


def main() -> None:
    values = stdtrit(np.arange(1, SIZE + 1, dtype=np.float64), 0.975)
    TABLE.write_bytes(values.astype("<f8").tobytes())
    print(f"{TABLE}: {SIZE} quantiles, {TABLE.stat().st_size} bytes")


if __name__ == "__main__":
    main()
