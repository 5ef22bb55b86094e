//! How the judges' agreement with people changed between two runs: each report's
//! `aggregates.human_agreement` (each labelled dimension, and each judge of it) side by side,
//! with NEW − BASE. Shown, not gated: a change of judge or prompt that moves kappa is for a
//! person to weigh (the run gate `min_human_kappa` gates each run on its own).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One report's figures for a dimension or one judge of it, as `report.json` writes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HumanFigures {
    #[serde(default)]
    pub n: u64,
    #[serde(default)]
    pub kappa_quadratic: Option<f64>,
    #[serde(default)]
    pub spearman: Option<f64>,
    #[serde(default)]
    pub exact: Option<f64>,
    #[serde(default)]
    pub within_1: Option<f64>,
    #[serde(default)]
    pub bias: Option<f64>,
    #[serde(default, skip_serializing)]
    pub by_judge: BTreeMap<String, HumanFigures>,
}

/// `aggregates` as far as comparing agreement needs it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AggregatesView {
    #[serde(default)]
    pub human_agreement: BTreeMap<String, HumanFigures>,
}

/// NEW − BASE of each figure (null where either side has none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanDelta {
    pub kappa_quadratic: Option<f64>,
    pub spearman: Option<f64>,
    pub exact: Option<f64>,
    pub within_1: Option<f64>,
    pub bias: Option<f64>,
}

/// A dimension's (`judge` null) or one judge's agreement with people in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanChange {
    pub dimension: String,
    pub judge: Option<String>,
    pub base: Option<HumanFigures>,
    pub new: Option<HumanFigures>,
    pub change: HumanDelta,
}

fn delta(base: Option<&HumanFigures>, new: Option<&HumanFigures>) -> HumanDelta {
    let d = |f: fn(&HumanFigures) -> Option<f64>| Some(f(new?)? - f(base?)?);
    HumanDelta {
        kappa_quadratic: d(|x| x.kappa_quadratic),
        spearman: d(|x| x.spearman),
        exact: d(|x| x.exact),
        within_1: d(|x| x.within_1),
        bias: d(|x| x.bias),
    }
}

/// Every dimension either report measured against people, then each of its judges, sorted.
pub(crate) fn changes(
    base: &BTreeMap<String, HumanFigures>,
    new: &BTreeMap<String, HumanFigures>,
) -> Vec<HumanChange> {
    let mut dims: Vec<&String> = base.keys().chain(new.keys()).collect();
    dims.sort();
    dims.dedup();
    let mut out = Vec::new();
    for dim in dims {
        let (b, n) = (base.get(dim), new.get(dim));
        let row = |judge: Option<&String>, b: Option<&HumanFigures>, n: Option<&HumanFigures>| {
            HumanChange {
                dimension: dim.clone(),
                judge: judge.cloned(),
                base: b.cloned(),
                new: n.cloned(),
                change: delta(b, n),
            }
        };
        out.push(row(None, b, n));
        let mut judges: Vec<&String> = b
            .iter()
            .chain(n.iter())
            .flat_map(|f| f.by_judge.keys())
            .collect();
        judges.sort();
        judges.dedup();
        for j in judges {
            out.push(row(
                Some(j),
                b.and_then(|f| f.by_judge.get(j)),
                n.and_then(|f| f.by_judge.get(j)),
            ));
        }
    }
    out
}

/// One row's cells: judge, n, and each figure as `BASE → NEW (Δ)`.
fn cells(c: &HumanChange) -> [String; 7] {
    use crate::render::{num, signed};
    let fig = |f: fn(&HumanFigures) -> Option<f64>, d: Option<f64>| {
        format!(
            "{} → {} ({})",
            num(c.base.as_ref().and_then(f)),
            num(c.new.as_ref().and_then(f)),
            signed(d)
        )
    };
    let n = |f: Option<&HumanFigures>| f.map_or("–".to_owned(), |f| f.n.to_string());
    [
        c.judge.clone().unwrap_or_else(|| "all judges".to_owned()),
        format!("{} → {}", n(c.base.as_ref()), n(c.new.as_ref())),
        fig(|x| x.kappa_quadratic, c.change.kappa_quadratic),
        fig(|x| x.spearman, c.change.spearman),
        fig(|x| x.exact, c.change.exact),
        fig(|x| x.within_1, c.change.within_1),
        fig(|x| x.bias, c.change.bias),
    ]
}

const HEADERS: [&str; 8] = [
    "dimension",
    "judge",
    "n",
    "quadratic κ",
    "Spearman",
    "exact",
    "within 1",
    "bias (judge − human)",
];

/// compare.md's section (nothing when neither run has human labels).
pub(crate) fn markdown(o: &mut String, changes: &[HumanChange]) {
    if changes.is_empty() {
        return;
    }
    o.push_str("\n**Agreement with people** (BASE → NEW (Δ); shown, not gated):\n\n|");
    for h in HEADERS {
        o.push_str(&format!(" {h} |"));
    }
    o.push_str("\n|");
    o.push_str(&"---|".repeat(HEADERS.len()));
    o.push('\n');
    for c in changes {
        o.push_str(&format!("| `{}` |", c.dimension));
        for cell in cells(c) {
            o.push_str(&format!(" {cell} |"));
        }
        o.push('\n');
    }
}

/// compare.html's section.
pub(crate) fn html(h: &mut String, changes: &[HumanChange]) {
    use evalfleet_model::text::escape;
    if changes.is_empty() {
        return;
    }
    h.push_str("<h2>Agreement with people</h2>\n<p class=\"meta\">Each run's judges against the human labels: BASE → NEW (Δ). Shown, not gated.</p>\n<table id=\"human-agreement\"><tr>");
    for t in HEADERS {
        h.push_str(&format!("<th>{}</th>", escape(t)));
    }
    h.push_str("</tr>\n");
    for c in changes {
        h.push_str(&format!("<tr><td>{}</td>", escape(&c.dimension)));
        for cell in cells(c) {
            h.push_str(&format!("<td class=\"num\">{}</td>", escape(&cell)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(kappa: f64, judges: &[(&str, f64)]) -> HumanFigures {
        HumanFigures {
            n: 10,
            kappa_quadratic: Some(kappa),
            bias: Some(0.5),
            by_judge: judges
                .iter()
                .map(|(j, k)| ((*j).to_owned(), figures(*k, &[])))
                .collect(),
            ..HumanFigures::default()
        }
    }

    #[test]
    fn dimensions_and_judges_of_either_side_with_new_minus_base() {
        let base = BTreeMap::from([("tone".to_owned(), figures(0.5, &[("a/x", 0.4)]))]);
        let new = BTreeMap::from([
            ("tone".to_owned(), figures(0.75, &[("b/y", 0.7)])),
            ("relevance".to_owned(), figures(0.6, &[])),
        ]);
        let c = changes(&base, &new);
        let names: Vec<(&str, Option<&str>)> = c
            .iter()
            .map(|c| (c.dimension.as_str(), c.judge.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("relevance", None),
                ("tone", None),
                ("tone", Some("a/x")),
                ("tone", Some("b/y"))
            ]
        );
        assert_eq!(c[1].change.kappa_quadratic, Some(0.25));
        assert_eq!(c[1].change.bias, Some(0.0));
        assert_eq!(c[0].change.kappa_quadratic, None, "only in NEW");
        assert!(c[2].new.is_none() && c[2].base.is_some());
    }
}
