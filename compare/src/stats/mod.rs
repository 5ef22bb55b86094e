//! The paired statistics `compare` reports, each in its own file so each can be checked against
//! its reference (scipy) on its own: the Wilcoxon signed-rank test (Pratt zeros), McNemar's exact
//! test, the paired t interval and test, the paired bootstrap interval and Holm's correction.

pub(crate) mod bootstrap;
pub(crate) mod holm;
pub(crate) mod mcnemar;
pub(crate) mod ttest;
pub(crate) mod wilcoxon;

/// Two-sided 95% intervals throughout.
pub(crate) const CONFIDENCE: f64 = 0.95;
