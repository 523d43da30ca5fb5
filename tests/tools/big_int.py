#!/usr/bin/env python3
"""Returns its argument n, and n + 1: Python integers are exact at any size."""
import json
import sys

n = json.load(sys.stdin)["n"]
json.dump({"n": n, "next": n + 1}, sys.stdout)
