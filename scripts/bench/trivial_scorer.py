#!/usr/bin/env python3
"""The code scorer of the scorer benchmark (scripts/bench-scorers.sh): reads each request and
answers 1.0. What it measures is evalfleet's side and the JSON-lines protocol, not scoring."""
import json
import sys

out = sys.stdout
for line in sys.stdin:
    request = json.loads(line)
    out.write(json.dumps({"score": 1.0, "reason": request["check"]}) + "\n")
    out.flush()
