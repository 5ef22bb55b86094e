"""Reads a run's items.parquet with pyarrow and checks it against the run's report.json: one row
per result, and every figure of every item, failed and skipped entry as the report has it.

    python scripts/check_items.py REPORT_DIR

Prints the rows read and exits 0, or prints each difference and exits 1. Used by
tests/items_parquet.rs (with the Python of EVALFLEET_SCIPY_PYTHON, which has pyarrow).
"""

import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def main(report_dir):
    report = json.loads((report_dir / "report.json").read_text())
    table = pq.read_table(report_dir / "items.parquet")
    rows = {row["index"]: row for row in table.to_pylist()}
    problems = []

    def expect(index, column, want):
        got = rows[index].get(column, "<no column>")
        if not same(got, want):
            problems.append(f"row {index} {column}: parquet {got!r}, report {want!r}")

    totals = report["totals"]
    want_rows = totals["ok"] + totals["failed"] + totals["skipped"]
    if table.num_rows != want_rows or len(rows) != want_rows:
        problems.append(f"{table.num_rows} rows ({len(rows)} indexes), report has {want_rows} results")
    dims = [d["name"] for d in report["config"]["dimensions"]]
    seed = "results" in report
    for item in report.get("results") or report.get("items") or []:
        i = item["index"]
        if i not in rows:
            problems.append(f"item {i} has no row")
            continue
        expect(i, "id", item["id"])
        expect(i, "status", "ok")
        expect(i, "passed", item["passed"])
        expect(i, "fail_tags", item["fail_tags"])
        expect(i, "overall_score", item["overall_score"])
        expect(i, "cost_usd", item["usage"]["cost_usd"])
        expect(i, "tokens_in", item["usage"]["input_tokens"])
        for d in dims:
            score = item[d] if seed else item["scores"].get(d)
            if score is None:
                expect(i, f"{d}.score", None)
                continue
            expect(i, f"{d}.score", None if score["score"] is None else float(score["score"]))
            expect(i, f"{d}.reasoning", score["reasoning"])
            judge = score["judge"]
            expect(i, f"{d}.judge", f"{judge['provider']}/{judge['model']}")
            expect(i, f"{d}.unscored", "unscored" in score)
            if d in (report["config"].get("human_labels") or {}):
                human = score.get("human")
                expect(i, f"{d}.human", None if human is None else float(human))
        if seed:
            expect(i, "group.model", item["model"])
            expect(i, "group.prompt_version", item["prompt_version"])
        else:
            for name, value in item["metrics"].items():
                expect(i, f"metric.{name}", None if value is None else float(value))
            for key, value in item["group"].items():
                expect(i, f"group.{key}", value)
        if "outputs" in item:
            got = rows[i]["outputs"]
            if got is None or json.loads(got) != item["outputs"]:
                problems.append(f"row {i} outputs: parquet {got!r}, report {item['outputs']!r}")
    for entry in report["failed"]:
        expect(entry["index"], "status", "failed")
        expect(entry["index"], "reason", entry["reason"])
    for entry in report["skipped"]:
        matches = [r for r in rows.values() if r["status"] == "skipped" and r["line"] == entry.get("line")]
        if entry.get("line") is None:
            matches = [rows.get(entry["index"])]
        if not matches or matches[0] is None or matches[0]["reason"] != entry["reason"]:
            problems.append(f"skipped entry {entry} has no row with its reason")
    for p in problems[:50]:
        print(p)
    if problems:
        print(f"{len(problems)} differences")
        return 1
    print(f"{table.num_rows} rows match the report")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
