#!/usr/bin/env python3
"""Sleeps `ms` milliseconds; returns when it started and ended (seconds since the epoch)."""
import json
import sys
import time

ms = json.load(sys.stdin)["ms"]
start = time.time()
time.sleep(ms / 1000)
json.dump({"start": start, "end": time.time()}, sys.stdout)
