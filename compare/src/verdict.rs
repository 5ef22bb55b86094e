//! The comparison as a whole: which quantities are compared, the overall family and the
//! per-group family (each Holm-corrected), and the gate — a quantity regresses when NEW is worse
//! with Holm-adjusted p < α **and** the drop exceeds its `max_drop`. The verdict gates on the
//! overall family; per-group regressions are flagged (with their own correction) but do not
//! fail the comparison, so a release is not blocked by a slice the suite did not ask to gate.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::pair::Pairing;
use crate::quantity::{measure, Quantity};
use crate::read::{Kind, Report};
use crate::stats::holm::holm;
use crate::{CompareError, Options};

/// Name of the pass/fail quantity.
pub const PASSED: &str = "passed";

/// The (kind, name) of every quantity both reports have, in a stable order: scores, metrics,
/// then `passed`.
pub(crate) fn quantities(base: &Report, new: &Report) -> (Vec<(Kind, String)>, Vec<String>) {
    let mut both = Vec::new();
    let mut one_side = Vec::new();
    for c in &new.columns {
        if base.column(c.kind, &c.name).is_some() {
            both.push((c.kind, c.name.clone()));
        } else {
            one_side.push(format!("{} {} (only in NEW)", c.kind.as_str(), c.name));
        }
    }
    for c in &base.columns {
        if new.column(c.kind, &c.name).is_none() {
            one_side.push(format!("{} {} (only in BASE)", c.kind.as_str(), c.name));
        }
    }
    both.sort_by_key(|(k, _)| *k);
    both.push((Kind::Pass, PASSED.to_owned()));
    (both, one_side)
}

/// Whether lower values of `name` are better: listed in the suite's `compare.lower_is_better`,
/// or a metric with a `>` gate (a gate that fails on high values).
fn lower_is_better(new: &Report, kind: Kind, name: &str) -> bool {
    new.suite.compare.lower_is_better.iter().any(|n| n == name)
        || (kind == Kind::Metric
            && new
                .suite
                .gates
                .iter()
                .any(|g| g.metric == name && g.op == evalfleet_model::gate::GateOp::Above))
}

/// Checks that every name the suite's `compare:` section gives is a compared quantity.
pub(crate) fn check_overrides(new: &Report, names: &[(Kind, String)]) -> Result<(), CompareError> {
    let known: BTreeSet<&str> = names.iter().map(|(_, n)| n.as_str()).collect();
    let c = &new.suite.compare;
    let named = c
        .max_drop
        .keys()
        .map(|k| ("max_drop", k))
        .chain(c.lower_is_better.iter().map(|k| ("lower_is_better", k)));
    for (section, name) in named {
        if !known.contains(name.as_str()) {
            return Err(CompareError::UnknownName {
                key: format!("compare.{section}.{name}"),
                known: known.iter().copied().collect::<Vec<_>>().join(", "),
            });
        }
    }
    Ok(())
}

/// Values of one quantity over the pairs, as (BASE, NEW) with NaN for null.
fn paired_values<'a>(
    base: &'a Report,
    new: &'a Report,
    kind: Kind,
    name: &str,
    pairs: impl Iterator<Item = (u32, u32)> + 'a,
) -> Box<dyn Iterator<Item = (f64, f64)> + 'a> {
    if kind == Kind::Pass {
        return Box::new(pairs.map(|(b, n)| {
            (
                f64::from(base.passed[b as usize]),
                f64::from(new.passed[n as usize]),
            )
        }));
    }
    let (Some(bc), Some(nc)) = (base.column(kind, name), new.column(kind, name)) else {
        return Box::new(std::iter::empty());
    };
    Box::new(pairs.map(move |(b, n)| (bc.values[b as usize], nc.values[n as usize])))
}

/// Applies direction, `max_drop`, Holm and the gate to a family of comparisons.
fn gate_family(family: &mut [Quantity], new: &Report, opts: &Options) {
    let adjusted = holm(&family.iter().map(|q| q.p_value).collect::<Vec<_>>());
    for (q, p_adj) in family.iter_mut().zip(adjusted) {
        q.p_adjusted = p_adj;
        q.higher_is_better = !lower_is_better(new, q.kind, &q.name);
        q.max_drop = new
            .suite
            .compare
            .max_drop
            .get(&q.name)
            .copied()
            .unwrap_or(opts.max_drop);
        q.drop = q.delta.map(|d| if q.higher_is_better { -d } else { d });
        q.regressed = matches!((q.p_adjusted, q.drop), (Some(p), Some(drop)) if p < opts.alpha && drop > q.max_drop);
    }
}

/// The overall family: one comparison per quantity over every pair.
pub(crate) fn overall(
    base: &Report,
    new: &Report,
    pairing: &Pairing,
    names: &[(Kind, String)],
    opts: &Options,
) -> Vec<Quantity> {
    let mut family: Vec<Quantity> = names
        .iter()
        .map(|(kind, name)| {
            let values = paired_values(base, new, *kind, name, pairing.pairs.iter().copied());
            measure(name, *kind, values, true)
        })
        .collect();
    gate_family(&mut family, new, opts);
    family
}

/// One key of a grouping: BASE's and NEW's value.
type KeyPart<'a> = (Option<&'a str>, Option<&'a str>);

/// The per-group family: every quantity in every group of every `group_by` entry of NEW's
/// suite. A pair's group is BASE's value of each key; where NEW's differs (comparing two
/// models, say) the key reads `base→new`.
pub(crate) fn per_group(
    base: &Report,
    new: &Report,
    pairing: &Pairing,
    names: &[(Kind, String)],
    opts: &Options,
) -> Vec<Quantity> {
    let mut family = Vec::new();
    for grouping in &new.suite.group_by {
        let mut groups: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
        let mut cache: HashMap<Vec<KeyPart>, String> = HashMap::new();
        for &(b, n) in &pairing.pairs {
            let parts: Vec<KeyPart> = grouping
                .keys
                .iter()
                .map(|k| {
                    (
                        base.group_value(k, b as usize),
                        new.group_value(k, n as usize),
                    )
                })
                .collect();
            if parts.iter().all(|(b, n)| b.is_none() && n.is_none()) {
                continue;
            }
            let key = cache
                .entry(parts)
                .or_insert_with_key(|parts| {
                    parts
                        .iter()
                        .map(|(b, n)| match (b, n) {
                            (Some(b), Some(n)) if b == n => (*b).to_owned(),
                            (b, n) => format!("{}→{}", b.unwrap_or("–"), n.unwrap_or("–")),
                        })
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .clone();
            groups.entry(key).or_default().push((b, n));
        }
        for (key, pairs) in groups {
            for (kind, name) in names {
                let values = paired_values(base, new, *kind, name, pairs.iter().copied());
                let mut q = measure(name, *kind, values, false);
                q.group_by = Some(grouping.name.clone());
                q.group = Some(key.clone());
                family.push(q);
            }
        }
    }
    gate_family(&mut family, new, opts);
    family
}
