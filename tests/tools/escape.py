#!/usr/bin/env python3
"""Answers, then leaves a child in a new session that keeps stdout open and sleeps.

The child escapes the call's process group (a supervisor without cgroups cannot follow
it): the call must still end as soon as this process exits. Its pid goes to `pidfile`.
"""
import json
import os
import sys
import time

pidfile = json.load(sys.stdin)["pidfile"]
print(json.dumps({"answered": True}), flush=True)
if os.fork() == 0:
    os.setsid()
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(30)
    os._exit(0)
