#!/usr/bin/env python3
"""Prints a number where the output schema wants a string."""
import json
import sys

json.load(sys.stdin)
json.dump({"text": 5}, sys.stdout)
