//! The judge-vs-human statistics against their reference implementations: random label pairs
//! (several scales, sizes, skews, ties, absent categories, perfect and reversed agreement,
//! constant sides) are folded by evalfleet's [`Confusion`], and
//! scripts/human_agreement_reference.py recomputes quadratic kappa with scikit-learn's
//! `cohen_kappa_score(weights="quadratic", labels=<the scale>)` and Spearman with scipy's
//! `spearmanr`, to 1e-9. The Python comes from EVALFLEET_SCIPY_PYTHON (`.ci/run` makes a venv
//! with scipy, numpy, pyarrow and scikit-learn and sets it), else target/scipy-venv's; without
//! one the test says so and passes, except under CI=true, where it must run.

use std::path::PathBuf;
use std::process::Command;

use evalfleet_report::aggregate::Confusion;
use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> Option<PathBuf> {
    let candidate = std::env::var_os("EVALFLEET_SCIPY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/scipy-venv/bin/python"));
    let ok = Command::new(&candidate)
        .args(["-c", "import scipy, numpy, sklearn"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(candidate)
}

/// SplitMix64: deterministic pseudo-random numbers without a dependency.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// How a case's judge scores relate to the human ones.
#[derive(Clone, Copy)]
enum Relation {
    Independent,
    /// The human score plus noise of up to ± this many points.
    Noisy(i64),
    Reversed,
    /// Every human score is the scale's third point (a constant side).
    ConstantHuman,
}

fn case(name: &str, seed: u64, n: usize, min: i64, max: i64, relation: Relation) -> Value {
    let mut rng = Mix(seed);
    let width = (max - min + 1) as u64;
    let (mut human, mut judge) = (Vec::new(), Vec::new());
    for _ in 0..n {
        // Skewed towards the top of the scale, as people's ratings usually are.
        let h = min + (rng.below(width).max(rng.below(width))) as i64;
        let h = match relation {
            Relation::ConstantHuman => (min + 2).min(max),
            _ => h,
        };
        let j = match relation {
            Relation::Independent | Relation::ConstantHuman => min + rng.below(width) as i64,
            Relation::Noisy(k) => (h + rng.below(2 * k as u64 + 1) as i64 - k).clamp(min, max),
            Relation::Reversed => max - (h - min),
        };
        human.push(h);
        judge.push(j);
    }
    let mut c = Confusion::new(min, max);
    for (h, j) in human.iter().zip(&judge) {
        c.push(*h as f64, *j as f64);
    }
    let s = c.summary();
    json!({"name": name, "min": min, "max": max, "human": human, "judge": judge,
           "ours": {"n": s.n, "kappa_quadratic": s.kappa_quadratic, "spearman": s.spearman,
                    "exact": s.exact, "within_1": s.within_1, "bias": s.bias}})
}

#[test]
fn kappa_and_spearman_agree_with_scikit_learn_and_scipy() {
    let Some(py) = python() else {
        let why = "human_reference: SKIPPED — a Python with scipy, numpy and scikit-learn is not available (python3 -m venv target/scipy-venv && target/scipy-venv/bin/pip install scipy numpy scikit-learn, or set EVALFLEET_SCIPY_PYTHON)";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{why}; CI must run this test (.ci/run provides it)"
        );
        eprintln!("{why}");
        return;
    };
    let mut cases = vec![
        case("tiny 1-5", 1, 3, 1, 5, Relation::Independent),
        case("two items", 2, 2, 1, 5, Relation::Noisy(1)),
        case("binary", 3, 200, 0, 1, Relation::Noisy(1)),
        case("1-5 noisy", 4, 500, 1, 5, Relation::Noisy(1)),
        case("1-5 independent", 5, 500, 1, 5, Relation::Independent),
        case("1-5 reversed", 6, 300, 1, 5, Relation::Reversed),
        case("1-5 perfect", 7, 300, 1, 5, Relation::Noisy(0)),
        case("0-10 noisy", 8, 2000, 0, 10, Relation::Noisy(3)),
        case("-2..2 noisy", 9, 700, -2, 2, Relation::Noisy(2)),
        case("1-5 constant human", 10, 50, 1, 5, Relation::ConstantHuman),
        case("1-7 large", 11, 20_000, 1, 7, Relation::Noisy(2)),
    ];
    // Random scales, sizes and noise: categories absent from both sides happen at small n.
    let mut rng = Mix(99);
    for i in 0..40 {
        let min = rng.below(3) as i64 - 1;
        let max = min + 1 + rng.below(9) as i64;
        let n = 2 + rng.below(60) as usize;
        let relation = match rng.below(3) {
            0 => Relation::Independent,
            1 => Relation::Noisy(rng.below(3) as i64),
            _ => Relation::Reversed,
        };
        cases.push(case(
            &format!("random {i}"),
            1000 + i,
            n,
            min,
            max,
            relation,
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cases.json");
    std::fs::write(&path, json!({ "cases": cases }).to_string()).unwrap();
    let out = Command::new(py)
        .arg(root().join("scripts/human_agreement_reference.py"))
        .arg("pairs")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("checked {} ", cases.len())),
        "{stdout}"
    );
}
