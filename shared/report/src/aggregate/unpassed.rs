//! The items that did not pass, remembered as they are folded: how many, and the indexes of the
//! first [`FIRST`] in dataset order. `junit.xml` lists those as test cases; knowing them here
//! lets it read just their records back, not every record of a 10^7-item run to find them.

use std::collections::BTreeSet;

use crate::junit::MAX_ITEM_CASES;

/// Indexes remembered at most: as many as `junit.xml` lists.
const FIRST: usize = MAX_ITEM_CASES as usize;

#[derive(Debug, Clone, Default)]
pub struct Unpassed {
    /// Items folded that did not pass (failed, skipped, or evaluated and failing a gate).
    pub count: u64,
    /// The lowest indexes among them, at most [`FIRST`]: order-independent, so every
    /// aggregator folding the same results in any order remembers the same ones.
    first: BTreeSet<u64>,
}

impl Unpassed {
    pub(crate) fn observe(&mut self, index: u64) {
        self.count += 1;
        if self.first.len() < FIRST {
            self.first.insert(index);
        } else if self.first.last().is_some_and(|&last| index < last) {
            self.first.insert(index);
            self.first.pop_last();
        }
    }

    /// Whether `index` is one of the first items that did not pass.
    pub fn is_first(&self, index: u64) -> bool {
        self.first.contains(&index)
    }

    /// How many of them are remembered.
    pub fn remembered(&self) -> u64 {
        self.first.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_indexes_are_remembered_whatever_the_order() {
        let mut forward = Unpassed::default();
        let mut backward = Unpassed::default();
        let n = FIRST as u64 + 500;
        for i in 0..n {
            forward.observe(i * 2);
            backward.observe((n - 1 - i) * 2);
        }
        for u in [&forward, &backward] {
            assert_eq!(u.count, n);
            assert_eq!(u.remembered(), FIRST as u64);
            assert!(u.is_first(0) && u.is_first((FIRST as u64 - 1) * 2));
            assert!(!u.is_first(FIRST as u64 * 2), "past the first ones");
            assert!(!u.is_first(1), "never folded");
        }
    }
}
