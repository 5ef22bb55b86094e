//! An exact running sum for the judge-vs-people statistics: values are added in 128-bit fixed
//! point (2^-40, as `evalfleet_model::stats::Stats` does), so the total does not depend on the
//! order results arrive in, at the cost of one multiply and one add per value (no min, max or
//! square unless asked for).

/// Fixed-point scale: values are stored as round(x · 2^40).
const SCALE: f64 = (1u64 << 40) as f64;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FixedSum(i128);

impl FixedSum {
    pub(crate) fn add(&mut self, x: f64) {
        self.0 += (x * SCALE).round() as i128;
    }

    pub(crate) fn get(self) -> f64 {
        self.0 as f64 / SCALE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_does_not_change_the_sum() {
        let xs: Vec<f64> = (0..1000)
            .map(|i| (i * 7919 % 1000) as f64 / 997.0 - 0.4)
            .collect();
        let (mut a, mut b) = (FixedSum::default(), FixedSum::default());
        xs.iter().for_each(|&x| a.add(x));
        xs.iter().rev().for_each(|&x| b.add(x));
        assert_eq!(a, b);
        assert!((a.get() - xs.iter().sum::<f64>()).abs() < 1e-6);
    }
}
