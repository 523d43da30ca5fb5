"""The project's tests: one line per test, `ok NAME` or `FAIL NAME`; exit 1 on a failure."""

import math
import sys

from geometry import circle_area, square_area
from report import total_area

TESTS = {
    "circle": lambda: abs(circle_area(2) - 4 * math.pi) < 1e-9,
    "square": lambda: square_area(3) == 9,
    "total": lambda: abs(total_area([1], [2]) - (math.pi + 4)) < 1e-9,
}

failed = 0
for name, test in TESTS.items():
    try:
        good = test()
    except Exception as e:  # a renamed function that is still called by its old name
        good = False
        print(f"error in {name}: {e}", file=sys.stderr)
    print(("ok " if good else "FAIL ") + name)
    failed += not good
sys.exit(1 if failed else 0)
