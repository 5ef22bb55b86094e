//! junit.xml: one test case per compared quantity (the overall family), a `<failure>` for each
//! regression, so CI shows a regression the way it shows a failing test.

use evalfleet_model::text::escape;

use crate::Comparison;

use super::{interval, num, pval};

pub(crate) fn render(c: &Comparison) -> String {
    let failures = c.comparisons.iter().filter(|q| q.regressed).count();
    let mut o = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"evalfleet compare\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n  <testsuite name=\"compare.{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n",
        c.comparisons.len(),
        escape(&c.base.suite),
        c.comparisons.len()
    );
    for q in &c.comparisons {
        o.push_str(&format!(
            "    <testcase classname=\"compare.{}.{}\" name=\"{}\"",
            escape(&c.base.suite),
            q.kind.as_str(),
            escape(&q.name)
        ));
        if q.regressed {
            let message = format!(
                "{} regressed: Δ {} {} , drop {} > max_drop {}, p (Holm) {} < α {}",
                q.name,
                num(q.delta),
                interval(q),
                num(q.drop),
                q.max_drop,
                pval(q.p_adjusted),
                c.settings.alpha
            );
            o.push_str(&format!(
                ">\n      <failure type=\"regression\" message=\"{}\">BASE {} → NEW {} over {} pairs; {} p = {} (raw)</failure>\n    </testcase>\n",
                escape(&message),
                num(q.mean_base),
                num(q.mean_new),
                q.n,
                q.test,
                pval(q.p_value)
            ));
        } else {
            o.push_str("/>\n");
        }
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}
