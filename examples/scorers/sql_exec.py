#!/usr/bin/env python3
"""An evalfleet code scorer: runs the SQL an answer holds against a fixture SQLite database and
compares what it returns with the expected result. Standard library only.

Request fields (their names are the suite's; `args.answer` and `args.expected` name them when
they are not `answer` and `expected`):
  answer    the model's SQL (a ```sql block is taken from prose around it; the first statement
            runs)
  expected  the expected rows, as a list of lists (or a list of values for one column), or a
            gold query (a string) whose rows are the expected ones
Args:
  fixture   the .sql file the database is built from (default shop.sql beside this script;
            a relative path is looked up beside this script too)
  ordered   compare rows in order (default false: as a multiset)
  max_ms    longest a query may run (default 2000)

Reply: score 1.0 when the rows match, 0.0 when they differ or the SQL fails (the reason says
how); null when the item has no expected result.

As a command scorer it speaks JSON lines on stdin/stdout:
  {name: sql_runs, type: command, command: [python3, examples/scorers/sql_exec.py],
   fields: [sql, expected], args: {answer: sql, fixture: shop.sql}}
"""

import json
import os
import re
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FENCE = re.compile(r"```(?:sql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_databases = {}


def database(fixture):
    """The database built from `fixture`, once per process; read-only once built."""
    path = fixture if os.path.isabs(fixture) else os.path.join(HERE, fixture)
    if not os.path.exists(path) and os.path.exists(fixture):
        path = fixture
    db = _databases.get(path)
    if db is None:
        db = sqlite3.connect(":memory:", check_same_thread=False)
        with open(path, encoding="utf-8") as f:
            db.executescript(f.read())
        # Answers may not change what the next answer reads.
        db.execute("PRAGMA query_only = ON")
        _databases[path] = db
    return db


def sql_of(answer):
    """The SQL of an answer: a fenced block when there is one, else the text; first statement."""
    found = FENCE.search(answer)
    text = (found.group(1) if found else answer).strip()
    return text.split(";")[0].strip()


def normal(value):
    """A cell as compared: floats rounded, so 49.50000001 equals 49.5."""
    if isinstance(value, float):
        return round(value, 6)
    return value


def rows(db, sql, max_ms):
    deadline = time.monotonic() + max_ms / 1000.0
    # Called every 10,000 virtual machine steps: a non-zero return aborts the query.
    db.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    try:
        return [tuple(normal(c) for c in row) for row in db.execute(sql).fetchall()]
    finally:
        db.set_progress_handler(None, 0)


def expected_rows(db, expected, max_ms):
    if isinstance(expected, str):
        return rows(db, sql_of(expected), max_ms)
    return [
        tuple(normal(c) for c in (row if isinstance(row, list) else [row])) for row in expected
    ]


def score(request):
    fields, args = request.get("fields", {}), request.get("args", {})
    answer = fields.get(args.get("answer", "answer"))
    expected = fields.get(args.get("expected", "expected"))
    if expected is None:
        return {"score": None, "reason": "the item has no expected result"}
    if not isinstance(answer, str) or not sql_of(answer):
        return {"score": 0.0, "reason": "no SQL in the answer"}
    db = database(args.get("fixture", "shop.sql"))
    max_ms = float(args.get("max_ms", 2000))
    try:
        want = expected_rows(db, expected, max_ms)
    except sqlite3.Error as e:
        return {"score": None, "reason": f"the expected query fails: {e}"}
    try:
        got = rows(db, sql_of(answer), max_ms)
    except sqlite3.OperationalError as e:
        if "interrupted" in str(e):
            return {"score": 0.0, "reason": f"the query ran longer than {max_ms:g} ms"}
        return {"score": 0.0, "reason": f"SQL error: {e}"}
    except sqlite3.Error as e:
        return {"score": 0.0, "reason": f"SQL error: {e}"}
    same = got == want if args.get("ordered") else sorted(map(repr, got)) == sorted(map(repr, want))
    if same:
        return {"score": 1.0, "reason": f"{count(got)}, as expected"}
    missing = [r for r in want if r not in got]
    extra = [r for r in got if r not in want]
    detail = f"first missing {list(missing[0])}" if missing else (
        f"first unexpected {list(extra[0])}" if extra else "the same rows in another order")
    return {"score": 0.0, "reason": f"{count(got)}, expected {len(want)}; {detail}"}


def count(rows_):
    return f"{len(rows_)} row" + ("" if len(rows_) == 1 else "s")


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
