#!/usr/bin/env python3
"""Returns its arguments as they arrived."""
import json
import sys

json.dump(json.load(sys.stdin), sys.stdout)
