//! The statistics of `evalfleet compare` against the reference implementation: generated report
//! pairs (small samples with ties and zeros, mid-sized untied samples, large shifted samples,
//! groups, unscored items) are compared by the binary, and scripts/compare_reference.py
//! recomputes every p-value and interval with scipy (`wilcoxon(zero_method="pratt")`,
//! `ttest_rel`, `binomtest`) and a numpy bootstrap: 1e-6 relative for p-values and t intervals,
//! Monte-Carlo error for the bootstrap. The Python comes from EVALFLEET_SCIPY_PYTHON (`.ci/run`
//! makes a venv with scipy and sets it) or target/scipy-venv (`common::python_with`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

fn python() -> Option<PathBuf> {
    common::python_with("scipy, numpy")
}

/// One report in the items shape: a score dimension (1–5, some unscored), a continuous metric,
/// a small-integer metric, pass/fail, and a model group.
fn report(run: &str, items: &[Value]) -> Value {
    json!({"run": {"id": run}, "items": items, "skipped": [], "failed": [],
           "config": {"name": "generated", "kind": "custom",
                      "group_by": [{"name": "by_model", "keys": ["model"]}], "gates": []}})
}

struct Scenario {
    n: usize,
    shift: f64,
    continuous_ties: bool,
    /// NEW's scores and metrics equal BASE's (all differences zero).
    same: bool,
}

fn generate(dir: &Path, name: &str, sc: &Scenario, seed: u64) -> (PathBuf, PathBuf) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (mut base, mut new) = (Vec::new(), Vec::new());
    for i in 0..sc.n {
        let model = ["m1", "m2", "m3"][i % 3];
        let b_score: i64 = rng.random_range(1..=5);
        let n_score: i64 = (b_score + rng.random_range(-2..=2)
            - i64::from(rng.random_bool(sc.shift.min(1.0))))
        .clamp(1, 5);
        let mut b_cont: f64 = rng.random::<f64>();
        let mut n_cont: f64 = b_cont + rng.random::<f64>() * 0.4 - 0.2 - sc.shift * 0.1;
        if sc.continuous_ties {
            b_cont = (b_cont * 4.0).round() / 4.0;
            n_cont = (n_cont * 4.0).round() / 4.0;
        }
        let b_int: i64 = rng.random_range(0..4);
        let mut n_int: i64 = rng.random_range(0..4);
        let mut n_score = n_score;
        if sc.same {
            (n_score, n_cont, n_int) = (b_score, b_cont, b_int);
        }
        let b_pass = rng.random_bool(0.7);
        let n_pass = if rng.random_bool(0.2) {
            !b_pass
        } else {
            b_pass
        };
        let unscored = i % 17 == 5 && !sc.same;
        let item = |score: Option<i64>, cont: f64, int: i64, pass: bool| {
            json!({"id": format!("{name}-{i}"), "outcome": "ok", "group": {"model": model},
                   "metrics": {"cont": cont, "int": int},
                   "scores": {"quality": {"score": score, "reasoning": "r", "judge": {"provider": "h", "model": "h"}}},
                   "overall_score": cont, "passed": pass, "fail_tags": []})
        };
        base.push(item(Some(b_score), b_cont, b_int, b_pass));
        new.push(item((!unscored).then_some(n_score), n_cont, n_int, n_pass));
    }
    // One item only in each side.
    base.push(json!({"id": format!("{name}-only-base"), "group": {"model": "m1"}, "metrics": {}, "scores": {}, "passed": true}));
    let b = dir.join(format!("{name}-base.json"));
    let n = dir.join(format!("{name}-new.json"));
    std::fs::write(&b, report("b", &base).to_string()).unwrap();
    std::fs::write(&n, report("n", &new).to_string()).unwrap();
    (b, n)
}

#[test]
fn p_values_and_intervals_agree_with_scipy() {
    let Some(py) = python() else {
        common::available(
            "compare_scipy",
            "a Python with scipy and numpy",
            false,
            "python3 -m venv target/scipy-venv && target/scipy-venv/bin/pip install scipy numpy, or set EVALFLEET_SCIPY_PYTHON",
        );
        return;
    };
    let dir = common::tempdir();
    let scenarios = [
        (
            "tiny",
            Scenario {
                n: 12,
                shift: 0.0,
                continuous_ties: true,
                same: false,
            },
        ),
        (
            "small",
            Scenario {
                n: 40,
                shift: 0.3,
                continuous_ties: false,
                same: false,
            },
        ),
        (
            "mid",
            Scenario {
                n: 150,
                shift: 0.0,
                continuous_ties: true,
                same: false,
            },
        ),
        (
            "large",
            Scenario {
                n: 3000,
                shift: 0.2,
                continuous_ties: false,
                same: false,
            },
        ),
        // All differences zero: 12 per group (scipy: p = 1), 36 overall (scipy: NaN).
        (
            "same",
            Scenario {
                n: 36,
                shift: 0.0,
                continuous_ties: false,
                same: true,
            },
        ),
    ];
    for (seed, (name, sc)) in scenarios.iter().enumerate() {
        let (b, n) = generate(dir.path(), name, sc, seed as u64 + 1);
        let out = dir.path().join(format!("{name}-out"));
        let run = common::evalfleet(&[
            "compare",
            b.to_str().unwrap(),
            n.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        run.assert_no_panic();
        assert!(matches!(run.code, Some(0 | 1)), "{name}: {}", run.stderr);
        let c: Value = common::read_json(&out.join("compare.json"));
        assert_eq!(
            c["pairing"]["only_in_base"],
            json!([format!("{name}-only-base")])
        );
        let check = Command::new(&py)
            .arg(common::root().join("scripts/compare_reference.py"))
            .args([&b, &n, &out.join("compare.json")])
            .output()
            .expect("running scripts/compare_reference.py");
        let stdout = String::from_utf8_lossy(&check.stdout);
        assert!(
            check.status.success(),
            "{name}: evalfleet compare disagrees with scipy\n{stdout}\n{}",
            String::from_utf8_lossy(&check.stderr)
        );
        eprintln!("{name}: {}", stdout.trim());
    }
}
