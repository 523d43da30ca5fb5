#!/usr/bin/env python3
"""Never reads its input; writes 1 MiB to stderr before its answer."""
import sys

for _ in range(1024):
    sys.stderr.write("e" * 1023 + "\n")
sys.stderr.flush()
print('{"ok": true}')
