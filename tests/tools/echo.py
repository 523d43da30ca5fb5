#!/usr/bin/env python3
"""Echo: returns {"text": <the text argument>}."""
import json
import sys

args = json.load(sys.stdin)
json.dump({"text": args["text"]}, sys.stdout)
