#!/usr/bin/env python3
"""Checks evalfleet's judge-vs-human statistics against scikit-learn and scipy (the reference
implementations).

usage: human_agreement_reference.py pairs CASES_JSON
       human_agreement_reference.py report REPORT_JSON

`pairs`: CASES_JSON is {"cases": [{"name", "min", "max", "human": [...], "judge": [...],
"ours": {kappa_quadratic, spearman, exact, within_1, bias}}]}, written by
shared/report/tests/human_reference.rs from evalfleet's own fold.

`report`: rebuilds every (human, judge) pair of a report.json from its items (each dimension's
`score`, rounded half-to-even to the rubric scale as the report does, its `human`, and each panel
judge's raw verdict) and checks `aggregates.human_agreement` (each dimension, each judge, each
group of the suite's groupings) against them, confusion matrix included.

Kappa is sklearn.metrics.cohen_kappa_score(weights="quadratic", labels=<the whole scale>),
Spearman is scipy.stats.spearmanr; both must agree to 1e-9, NaN (undefined) with null. Exits 1
and prints every mismatch otherwise.
"""
import json
import math
import sys
import warnings

import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score

TOL = 1e-9
warnings.filterwarnings("ignore")  # constant inputs: scipy and sklearn warn and return NaN


def reference(lo, hi, human, judge):
    n = len(human)
    labels = list(range(lo, hi + 1))
    if n == 0:
        return {"n": 0, "kappa_quadratic": None, "spearman": None, "exact": None,
                "within_1": None, "bias": None}
    kappa = float(cohen_kappa_score(human, judge, labels=labels, weights="quadratic"))
    rho = float(stats.spearmanr(human, judge).statistic) if n >= 2 else math.nan
    h = np.asarray(human, dtype=float)
    j = np.asarray(judge, dtype=float)
    return {
        "n": n,
        "kappa_quadratic": None if math.isnan(kappa) else kappa,
        "spearman": None if math.isnan(rho) else rho,
        "exact": float(np.mean(h == j)),
        "within_1": float(np.mean(np.abs(h - j) <= 1)),
    }


def same(ours, ref):
    if ref is None or ours is None:
        return ours is None and ref is None
    return abs(ours - ref) <= TOL


def check(where, ours, ref, bias=None, confusion=None, errors=None):
    for key in ("n", "kappa_quadratic", "spearman", "exact", "within_1"):
        if key == "n":
            ok = ours.get("n") == ref["n"]
        else:
            ok = same(ours.get(key), ref[key])
        if not ok:
            errors.append(f"{where}: {key} ours {ours.get(key)!r}, reference {ref[key]!r}")
    if bias is not None and not same(ours.get("bias"), bias):
        errors.append(f"{where}: bias ours {ours.get('bias')!r}, reference {bias!r}")
    if confusion is not None and ours.get("confusion") != confusion:
        errors.append(f"{where}: confusion ours {ours.get('confusion')}, reference {confusion}")


def pairs_mode(path):
    with open(path) as f:
        cases = json.load(f)["cases"]
    errors = []
    for c in cases:
        ref = reference(c["min"], c["max"], c["human"], c["judge"])
        bias = (float(np.mean(np.asarray(c["judge"], float) - np.asarray(c["human"], float)))
                if c["human"] else None)
        check(c["name"], c["ours"], ref, bias=bias, errors=errors)
    return errors, len(cases)


class Pairs:
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi
        self.human, self.judge, self.diff = [], [], []

    def add(self, human, judge_rounded, judge_exact):
        self.human.append(int(human))
        self.judge.append(int(judge_rounded))
        self.diff.append(judge_exact - human)

    def confusion(self):
        k = self.hi - self.lo + 1
        m = [[0] * k for _ in range(k)]
        for h, j in zip(self.human, self.judge):
            m[h - self.lo][j - self.lo] += 1
        return m

    def check(self, where, ours, errors):
        ref = reference(self.lo, self.hi, self.human, self.judge)
        bias = float(np.mean(self.diff)) if self.diff else None
        check(where, ours, ref, bias=bias, confusion=self.confusion(), errors=errors)


def report_mode(path):
    with open(path) as f:
        report = json.load(f)
    config = report["config"]
    dims = {d["name"]: d for d in config["dimensions"]}
    agreement = report["aggregates"]["human_agreement"]
    items = report.get("results", report.get("items"))
    groupings = config.get("group_by", [])
    overall, judges, groups = {}, {}, {}
    for it in items:
        group = dict(it.get("group") or {})
        for key in ("model", "prompt_version"):
            if it.get(key) is not None:
                group[key] = it[key]
        scores = it.get("scores") or {d: it.get(d) for d in dims}
        for dim in agreement:
            d = dims[dim]
            lo, hi = d["min"], d["max"]
            cell = scores.get(dim)
            if not cell or cell.get("human") is None:
                continue
            human = cell["human"]
            keys = [("overall", None)] + [
                (g["name"], "|".join(group.get(k, "unknown") for k in g["keys"])) for g in groupings
            ]
            if cell.get("score") is not None:
                raw = cell["score"]
                if d.get("unit"):
                    raw = lo + raw * (hi - lo)
                for key in keys:
                    target = overall if key[0] == "overall" else groups
                    target.setdefault((dim,) + key, Pairs(lo, hi)).add(human, round(raw), raw)
            panel = cell.get("panel") or []
            verdicts = ([(p["judge"], p["score"]) for p in panel if p.get("score") is not None]
                        if panel else
                        ([(cell["judge"], raw)] if cell.get("score") is not None else []))
            for judge, s in verdicts:
                name = f'{judge["provider"]}/{judge["model"]}'
                judges.setdefault((dim, name), Pairs(lo, hi)).add(human, round(s), s)
    errors = []
    checked = 0
    for dim, ours in agreement.items():
        pairs = overall.get((dim, "overall", None), Pairs(dims[dim]["min"], dims[dim]["max"]))
        pairs.check(f"{dim}", ours, errors)
        checked += 1
        for name, js in ours.get("by_judge", {}).items():
            judges.get((dim, name), Pairs(0, 0)).check(f"{dim} by judge {name}", js, errors)
            checked += 1
        if set(ours.get("by_judge", {})) != {n for (d, n) in judges if d == dim}:
            errors.append(f"{dim}: judges ours {sorted(ours.get('by_judge', {}))}")
    aggregates = report["aggregates"]
    for (dim, grouping, key), pairs in groups.items():
        block = aggregates.get(grouping, {}).get(key, {}).get("human_agreement", {}).get(dim)
        if block is None:
            errors.append(f"{dim} {grouping} {key}: no human_agreement in the report")
            continue
        pairs.check(f"{dim} {grouping} {key}", block, errors)
        checked += 1
    return errors, checked


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("pairs", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    errors, checked = (pairs_mode if sys.argv[1] == "pairs" else report_mode)(sys.argv[2])
    for e in errors:
        print("MISMATCH", e)
    print(f"checked {checked} against scikit-learn and scipy: {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
