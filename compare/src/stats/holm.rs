//! Holm–Bonferroni: the step-down correction that keeps the family-wise error rate at α across
//! every comparison the verdict looks at, uniformly more powerful than plain Bonferroni and valid
//! under any dependence between the tests (dimensions of one report are far from independent).

/// Holm-adjusted p-values in the input order; None (no test possible) stays None and does not
/// count towards the family size.
pub(crate) fn holm(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    order.sort_by(|&a, &b| p[a].unwrap_or(1.0).total_cmp(&p[b].unwrap_or(1.0)));
    let m = order.len();
    let mut out = vec![None; p.len()];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let adjusted = ((m - rank) as f64 * p[i].unwrap_or(1.0)).min(1.0);
        running = running.max(adjusted);
        out[i] = Some(running);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → 0.06 (the
    /// running maximum keeps the order).
    #[test]
    fn hand_worked() {
        let adj = holm(&[Some(0.01), Some(0.04), Some(0.03), Some(0.005), None]);
        let want = [Some(0.03), Some(0.06), Some(0.06), Some(0.02), None];
        for (a, w) in adj.iter().zip(want) {
            match (a, w) {
                (Some(a), Some(w)) => assert!((a - w).abs() < 1e-15, "{adj:?}"),
                (None, None) => {}
                _ => panic!("{adj:?}"),
            }
        }
    }

    #[test]
    fn capped_at_one() {
        assert_eq!(holm(&[Some(0.6), Some(0.7)]), vec![Some(1.0), Some(1.0)]);
    }
}
