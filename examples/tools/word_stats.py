#!/usr/bin/env python3
"""A command-backed tool: reads {"text": ..., "top": n} as JSON on stdin and prints the
number of words and lines and the n most frequent words (of 4 letters or more) as JSON."""
import collections
import json
import re
import sys

args = json.load(sys.stdin)
text = args["text"]
words = re.findall(r"[A-Za-z][A-Za-z'-]+", text)
counts = collections.Counter(w.lower() for w in words if len(w) >= 4)
json.dump(
    {
        "words": len(words),
        "lines": text.count("\n") + (1 if text and not text.endswith("\n") else 0),
        "top": [{"word": w, "count": c} for w, c in counts.most_common(args.get("top", 5))],
    },
    sys.stdout,
)
