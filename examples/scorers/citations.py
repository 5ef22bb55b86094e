#!/usr/bin/env python3
"""An evalfleet code scorer: are an answer's citations real? Finds the citation markers in the
answer (`[1]`, `[2, 3]` by default) and checks each against the sources the item gave the
model. Standard library only.

Request fields (their names are the suite's; `args.answer` and `args.sources` name them when
they are not `answer` and `sources`):
  answer    the model's text
  sources   the sources the model was given: a list (of ids, or of objects with an `id`), or
            a number of sources (then the ids are 1..n)
Args:
  pattern   a regular expression whose first group holds the cited ids (default
            `\\[(\\d+(?:\\s*,\\s*\\d+)*)\\]`); ids inside it are split on commas
  require   an answer without any citation scores 0 (default true)

Reply: the fraction of citations that name a given source (1.0 when all do); the reason names
the ones that do not. Null when the item has no sources.

  {name: cites_sources, type: command, command: [python3, examples/scorers/citations.py],
   fields: [summary, sources], args: {answer: summary}}
"""

import json
import re
import sys

DEFAULT = r"\[(\d+(?:\s*,\s*\d+)*)\]"
_patterns = {}


def ids_of(sources):
    if isinstance(sources, bool):
        return None
    if isinstance(sources, int):
        return {str(i) for i in range(1, sources + 1)}
    if isinstance(sources, list):
        return {str(s.get("id") if isinstance(s, dict) else s) for s in sources}
    return None


def score(request):
    fields, args = request.get("fields", {}), request.get("args", {})
    answer = fields.get(args.get("answer", "answer")) or ""
    sources = ids_of(fields.get(args.get("sources", "sources")))
    if sources is None:
        return {"score": None, "reason": "the item has no sources"}
    text = args.get("pattern", DEFAULT)
    pattern = _patterns.get(text) or _patterns.setdefault(text, re.compile(text))
    cited = [
        part.strip()
        for match in pattern.finditer(answer)
        for part in (match.group(1) if match.groups() else match.group(0)).split(",")
        if part.strip()
    ]
    if not cited:
        required = args.get("require", True)
        return {"score": 0.0 if required else None, "reason": "no citation"}
    unknown = [c for c in cited if c not in sources]
    valid = len(cited) - len(unknown)
    reason = f"{valid} of {len(cited)} citations name a source"
    if unknown:
        reason += f"; unknown: {', '.join(sorted(set(unknown)))}"
    return {"score": valid / len(cited), "reason": reason}


def serve(score_one):
    """The command scorer loop: one request per line in, one reply per line out, in order."""
    for line in sys.stdin:
        try:
            reply = score_one(json.loads(line))
        except Exception as e:  # a bug in the scorer is one null, not a crash of the pool
            reply = {"score": None, "reason": f"scorer error: {type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve(score)
