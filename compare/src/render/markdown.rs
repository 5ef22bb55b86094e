//! compare.md: a pull-request comment — the verdict first, then one table row per compared
//! quantity, the groups that regressed, and the worst flips.

use crate::flips::{Flip, Flips};
use crate::Comparison;

use super::{interval, num, pval, signed};

/// How many flips of each direction the summary shows.
const SHOWN_FLIPS: usize = 5;
/// How long a reasoning may be in the summary.
const REASONING_CHARS: usize = 160;

pub(crate) fn render(c: &Comparison) -> String {
    let mut o = String::new();
    let icon = if c.verdict.regressed { "❌" } else { "✅" };
    o.push_str(&format!(
        "## {icon} evalfleet compare: {}\n\n",
        c.verdict.summary
    ));
    o.push_str(&format!(
        "Suite **{}** · BASE `{}` · NEW `{}` · {} paired items",
        c.base.suite,
        c.base.run_id.as_deref().unwrap_or("?"),
        c.new.run_id.as_deref().unwrap_or("?"),
        c.pairing.paired
    ));
    let p = &c.pairing;
    if !p.only_in_base.is_empty() || !p.only_in_new.is_empty() {
        o.push_str(&format!(
            " · {} only in BASE, {} only in NEW",
            p.only_in_base.len(),
            p.only_in_new.len()
        ));
    }
    if !p.failed_in_base.is_empty() || !p.failed_in_new.is_empty() {
        o.push_str(&format!(
            " · failed: {} in BASE, {} in NEW",
            p.failed_in_base.len(),
            p.failed_in_new.len()
        ));
    }
    o.push_str(&format!(
        "\n\nα = {} (Holm-adjusted), max drop {} unless the suite says otherwise; Δ = NEW − BASE with its 95% interval.\n\n",
        c.settings.alpha, c.settings.max_drop
    ));
    o.push_str("| | quantity | n | BASE | NEW | Δ | 95% CI | test | p | p (Holm) |\n");
    o.push_str("|---|---|---:|---:|---:|---:|---|---|---:|---:|\n");
    for q in &c.comparisons {
        let mark = if q.regressed {
            "❌"
        } else if q.drop.is_some_and(|d| d < 0.0)
            && q.p_adjusted.is_some_and(|p| p < c.settings.alpha)
        {
            "⬆️"
        } else {
            ""
        };
        o.push_str(&format!(
            "| {mark} | {} `{}` | {} | {} | {} | {} | {} ({}) | {} | {} | {} |\n",
            q.kind.as_str(),
            q.name,
            q.n,
            num(q.mean_base),
            num(q.mean_new),
            signed(q.delta),
            interval(q),
            q.ci_method.unwrap_or("–"),
            q.test,
            pval(q.p_value),
            pval(q.p_adjusted),
        ));
    }
    let regressed_groups: Vec<_> = c.groups.iter().filter(|q| q.regressed).collect();
    if !regressed_groups.is_empty() {
        o.push_str(&format!(
            "\n**Groups significantly worse** (flagged, not gated; Holm across all {} group comparisons):\n\n",
            c.groups.len()
        ));
        for q in regressed_groups.iter().take(10) {
            o.push_str(&format!(
                "- {} = `{}`: `{}` Δ {:+.4} (p Holm {})\n",
                q.group_by.as_deref().unwrap_or(""),
                q.group.as_deref().unwrap_or(""),
                q.name,
                q.delta.unwrap_or(0.0),
                pval(q.p_adjusted)
            ));
        }
        if regressed_groups.len() > 10 {
            o.push_str(&format!(
                "- … {} more in compare.json\n",
                regressed_groups.len() - 10
            ));
        }
    }
    crate::human::markdown(&mut o, &c.human_agreement);
    o.push_str(&format!(
        "\n**Flips**: {} pass → fail, {} fail → pass.\n",
        c.flips.pass_to_fail.len(),
        c.flips.fail_to_pass.len()
    ));
    flips(&mut o, "Worst pass → fail", &c.flips, &c.flips.pass_to_fail);
    flips(&mut o, "Best fail → pass", &c.flips, &c.flips.fail_to_pass);
    o.push_str("\nEvery figure, unrounded, and every flip: `compare.json`.\n");
    o
}

fn flips(o: &mut String, title: &str, all: &Flips, list: &[Flip]) {
    if list.is_empty() {
        return;
    }
    o.push_str(&format!(
        "\n<details><summary>{title} ({} shown)</summary>\n\n",
        list.len().min(SHOWN_FLIPS)
    ));
    for f in list.iter().take(SHOWN_FLIPS) {
        let Ok(f) = all.view(f) else { continue };
        o.push_str(&format!(
            "- `{}`: overall {} → {}\n",
            f.id,
            num(f.base.overall_score),
            num(f.new.overall_score)
        ));
        for (dim, new) in &f.new.scores {
            let base = f.base.scores.get(dim);
            o.push_str(&format!(
                "  - {dim}: {} → {} — NEW: {}\n",
                num(base.and_then(|s| s.score)),
                num(new.score),
                short(new.reasoning.as_deref().unwrap_or("–"))
            ));
        }
    }
    o.push_str("\n</details>\n");
}

fn short(s: &str) -> String {
    let one_line = s.replace(['\n', '|'], " ");
    if one_line.chars().count() <= REASONING_CHARS {
        one_line
    } else {
        format!(
            "{}…",
            one_line.chars().take(REASONING_CHARS).collect::<String>()
        )
    }
}
