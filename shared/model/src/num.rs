//! Number presentation rules shared by every report.

use serde::Serializer;

/// Rounds to two decimals exactly as Python's `round(x, 2)` does: on the exact binary value,
/// ties to even (107/40 → 2.67). Rust's `{:.2}` formats the exact value with the same rule.
pub fn round2(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.2}").parse().unwrap_or(x)
}

/// Whole numbers print as integers (`5`, as the seed's scores and min/max do), others as floats.
pub fn int_if_whole<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        s.serialize_i64(*x as i64)
    } else {
        s.serialize_f64(*x)
    }
}

pub fn opt_int_if_whole<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => int_if_whole(x, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round2_matches_python() {
        assert_eq!(round2(107.0 / 40.0), 2.67);
        assert_eq!(round2(0.125), 0.12);
        assert_eq!(round2(0.375), 0.38);
        assert_eq!(round2(1.005), 1.0);
        assert_eq!(round2(4.5), 4.5);
        assert_eq!(round2(13.0 / 3.0), 4.33);
    }
}
