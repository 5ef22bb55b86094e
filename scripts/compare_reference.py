#!/usr/bin/env python3
"""Checks `evalfleet compare`'s figures against scipy (the reference implementation).

usage: compare_reference.py BASE_REPORT NEW_REPORT COMPARE_JSON

Re-pairs the two report.json files by item id itself, then for every object of compare.json
(overall and per group) recomputes with scipy: wilcoxon(zero_method="pratt") for scores and
metrics, binomtest for pass/fail (McNemar exact), ttest_rel and its confidence interval, and a
numpy paired bootstrap; p-values and t intervals must agree to 1e-6 relative, bootstrap
intervals within Monte-Carlo error (5% of the interval's width), Holm within 1e-9.
Exits 1 and prints every mismatch otherwise.
"""
import json
import math
import sys

import numpy as np
from scipy import stats

REL = 1e-6


def load_items(path):
    with open(path) as f:
        report = json.load(f)
    items = report.get("results", report.get("items"))
    out = {}
    for it in items:
        values = {("pass", "passed"): 1.0 if it["passed"] else 0.0}
        for name, v in (it.get("metrics") or {}).items():
            values[("metric", name)] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        for name, cell in (it.get("scores") or {}).items():
            values[("score", name)] = None if cell is None or cell.get("score") is None else float(cell["score"])
        group = dict(it.get("group") or {})
        for key in ("model", "prompt_version"):
            if key in it and it[key] is not None:
                group[key] = it[key]
        out[it["id"]] = (values, group)
    return report, out


def close(a, b, rel=REL, abs_tol=1e-12):
    if isinstance(b, float) and math.isnan(b):
        return a is None
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= max(rel * abs(b), abs_tol)


def holm(ps):
    idx = [i for i, p in enumerate(ps) if p is not None]
    idx.sort(key=lambda i: ps[i])
    m = len(idx)
    out = [None] * len(ps)
    running = 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def main():
    base_path, new_path, compare_path = sys.argv[1:4]
    base_report, base = load_items(base_path)
    _, new = load_items(new_path)
    with open(compare_path) as f:
        cmp = json.load(f)
    group_by = {g["name"]: g["keys"] for g in base_report["config"].get("group_by", [])}
    errors = []
    checked = 0

    def check(obj):
        nonlocal checked
        key = (obj["kind"], obj["name"])
        label = f'{obj["kind"]} {obj["name"]}' + (f' [{obj["group_by"]}={obj["group"]}]' if "group" in obj else "")
        pairs = []
        for id_, (bv, bg) in base.items():
            if id_ not in new:
                continue
            nv, ng = new[id_]
            if "group" in obj:
                keys = group_by[obj["group_by"]]
                if "|".join(str(bg.get(k)) for k in keys) != obj["group"]:
                    continue
            b, n = bv.get(key), nv.get(key)
            if b is None or n is None:
                continue
            pairs.append((b, n))
        x = np.array([p[1] for p in pairs])  # NEW
        y = np.array([p[0] for p in pairs])  # BASE
        d = x - y
        def expect(field, want, rel=REL):
            if not close(obj[field], want, rel):
                errors.append(f"{label}: {field} = {obj[field]!r}, scipy/numpy: {want!r}")
        if obj["n"] != len(pairs):
            errors.append(f"{label}: n = {obj['n']}, reference {len(pairs)}")
            return
        if len(pairs) == 0:
            return
        expect("mean_base", float(y.mean()), 1e-9)
        expect("mean_new", float(x.mean()), 1e-9)
        expect("delta", float(d.mean()), 1e-9)
        if obj["kind"] == "pass":
            b = int(((y == 1) & (x == 0)).sum())
            c = int(((y == 0) & (x == 1)).sum())
            want = 1.0 if b + c == 0 else stats.binomtest(b, b + c, 0.5).pvalue
            expect("p_value", float(want))
        else:
            # All-zero differences: scipy gives p = 1 up to n = 13 and NaN (compare: null) above.
            expect("p_value", float(stats.wilcoxon(d, zero_method="pratt").pvalue))
        if len(pairs) >= 2:
            t = stats.ttest_rel(x, y)
            if np.all(d == d[0]):
                expect("p_value_t", None)
                expect("t_ci_low", float(d[0]), 1e-9)
            else:
                expect("p_value_t", float(t.pvalue))
                ci = t.confidence_interval(0.95)
                expect("t_ci_low", float(ci.low))
                expect("t_ci_high", float(ci.high))
        if obj["bootstrap_ci_low"] is not None:
            rng = np.random.default_rng(12345)
            means = np.empty(10_000)
            for i in range(10_000):
                means[i] = d[rng.integers(0, len(d), len(d))].mean()
            lo, hi = np.percentile(means, [2.5, 97.5])
            # Within Monte-Carlo error: each endpoint is close to numpy's, or (for the discrete
            # bootstrap distributions of small samples, where a percentile jumps between atoms)
            # it is a 2.5% / 97.5% quantile of numpy's resampled means up to 5 standard errors
            # of a proportion estimated from 10,000 resamples.
            tol = 0.05 * max(hi - lo, 1e-12)
            eps = 5 * math.sqrt(0.025 * 0.975 / 10_000)
            def quantile_ok(x, q):
                below = (means < x - 1e-12).mean()
                at_or_below = (means <= x + 1e-12).mean()
                return below <= q + eps and at_or_below >= q - eps
            for got, ref, q in ((obj["bootstrap_ci_low"], lo, 0.025), (obj["bootstrap_ci_high"], hi, 0.975)):
                if abs(got - ref) > tol and not quantile_ok(got, q):
                    errors.append(f"{label}: bootstrap endpoint {got} vs numpy {ref} (q = {q}, tolerance {tol})")
            if obj["ci_method"] != "bootstrap" or obj["ci_low"] != obj["bootstrap_ci_low"]:
                errors.append(f"{label}: ci_low is not the bootstrap's although it ran")
        checked += 1

    for family in ("comparisons", "groups"):
        objs = cmp[family]
        for obj in objs:
            check(obj)
        for obj, want in zip(objs, holm([o["p_value"] for o in objs])):
            if not close(obj["p_adjusted"], want, 1e-9):
                errors.append(f'{family} {obj["name"]} {obj.get("group", "")}: p_adjusted {obj["p_adjusted"]} vs Holm {want}')
    for e in errors:
        print("MISMATCH", e)
    print(f"checked {checked} comparisons against scipy {stats.__name__} ({len(errors)} mismatches)")
    sys.exit(1 if errors or checked == 0 else 0)


if __name__ == "__main__":
    main()
