#!/usr/bin/env python3
"""Sleeps `ms` milliseconds; returns when it started and ended (seconds since the epoch).

With `meet` (a folder) and `of` (a count), it first leaves its mark in `meet` and waits,
at most 30 s, until `of` marks are there: calls that run at the same time all return,
and overlap however slowly each process starts.
"""
import json
import os
import sys
import time

args = json.load(sys.stdin)
start = time.time()
if "meet" in args:
    open(os.path.join(args["meet"], str(os.getpid())), "w").close()
    while len(os.listdir(args["meet"])) < args["of"] and time.time() < start + 30:
        time.sleep(0.005)
time.sleep(args["ms"] / 1000)
json.dump({"start": start, "end": time.time()}, sys.stdout)
