//! Bounds on one template rendering. A custom suite's judge prompts and a target's requests
//! are written by whoever submits a run, and they render on shared workers, once per example:
//! a loop of 10^9 iterations or a gigabyte of output must fail that example, not hold a worker.
//! Every rendering therefore runs on minijinja's fuel (a budget of VM instructions, `fuel`) and
//! writes into a buffer that refuses to grow past `max_output_bytes`; past either, the
//! rendering stops at once with an error naming the bound, and the next one starts afresh.
//!
//! The bounds are the process's configuration (`templates:`), set once at start with
//! [`set_limits`]: templates compile wherever a run's spec is read (a custom suite compiles as
//! it deserialises), far from the configuration, so they are kept here rather than passed.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use minijinja::{Environment, ErrorKind, Template};
use serde::Serialize;

use evalfleet_config::TemplateLimits;

static FUEL: AtomicU64 = AtomicU64::new(DEFAULTS.fuel);
static MAX_OUTPUT: AtomicU64 = AtomicU64::new(DEFAULTS.max_output_bytes as u64);

const DEFAULTS: TemplateLimits = TemplateLimits {
    fuel: 100_000,
    max_output_bytes: 1024 * 1024,
};

/// Sets the bounds of every template compiled from now on in this process (the binary calls it
/// once, with the configuration's `templates:`).
pub fn set_limits(limits: TemplateLimits) {
    FUEL.store(limits.fuel, Ordering::Relaxed);
    MAX_OUTPUT.store(limits.max_output_bytes as u64, Ordering::Relaxed);
}

/// The bounds in force.
pub fn limits() -> TemplateLimits {
    TemplateLimits {
        fuel: FUEL.load(Ordering::Relaxed),
        max_output_bytes: usize::try_from(MAX_OUTPUT.load(Ordering::Relaxed)).unwrap_or(usize::MAX),
    }
}

/// A new environment whose renderings run on the configured fuel.
pub(crate) fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_fuel(Some(limits().fuel));
    env
}

/// Renders `template` (from an [`environment`]) with `ctx`, at most `max_output_bytes` of it.
/// A bound reached is an error saying which one.
pub(crate) fn render<S: Serialize>(
    template: &Template<'_, '_>,
    ctx: S,
) -> Result<String, minijinja::Error> {
    let limits = limits();
    let mut out = Capped {
        buf: Vec::new(),
        max: limits.max_output_bytes,
        over: false,
    };
    match template.render_captured_to(ctx, &mut out) {
        Ok(_) => String::from_utf8(out.buf).map_err(|_| {
            minijinja::Error::new(ErrorKind::InvalidOperation, "the output is not UTF-8")
        }),
        Err(_) if out.over => Err(minijinja::Error::new(
            ErrorKind::WriteFailure,
            format!(
                "the rendered text is longer than templates.max_output_bytes ({} bytes)",
                limits.max_output_bytes
            ),
        )),
        Err(e) if e.kind() == ErrorKind::OutOfFuel => Err(minijinja::Error::new(
            ErrorKind::OutOfFuel,
            format!(
                "the template took more than templates.fuel ({} instructions)",
                limits.fuel
            ),
        )),
        Err(e) => Err(e),
    }
}

/// An output buffer that refuses to hold more than `max` bytes.
struct Capped {
    buf: Vec<u8>,
    max: usize,
    over: bool,
}

impl io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len().saturating_add(data.len()) > self.max {
            self.over = true;
            return Err(io::Error::other("output bound reached"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn render_str(source: &str, ctx: serde_json::Value) -> Result<String, String> {
        let mut env = environment();
        env.add_template_owned("t", source.to_owned()).unwrap();
        let t = env.get_template("t").unwrap();
        render(&t, ctx).map_err(|e| e.to_string())
    }

    #[test]
    fn an_ordinary_template_renders() {
        let out = render_str(
            "{% for q in qs %}{{ loop.index }}. {{ q|upper }}\n{% endfor %}",
            serde_json::json!({"qs": ["a", "b"]}),
        );
        assert_eq!(out.unwrap(), "1. A\n2. B\n");
    }

    #[test]
    fn a_loop_of_ten_to_the_ten_fails_fast_on_fuel_and_the_next_rendering_runs() {
        let started = Instant::now();
        let err = render_str(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            serde_json::json!({}),
        )
        .unwrap_err();
        assert!(
            err.contains("the template took more than templates.fuel (100000 instructions)"),
            "{err}"
        );
        // A debug build; a release build is some ten times faster.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            render_str("{{ 1 + 1 }}", serde_json::json!({})).unwrap(),
            "2"
        );
    }

    #[test]
    fn output_past_the_bound_fails_without_growing_further() {
        let err = render_str(
            "{% for i in range(100000) %}{{ text }}{% endfor %}",
            serde_json::json!({"text": "x".repeat(1000)}),
        )
        .unwrap_err();
        assert!(
            err.contains(
                "the rendered text is longer than templates.max_output_bytes (1048576 bytes)"
            ),
            "{err}"
        );
        let exactly = "y".repeat(1 << 20);
        assert_eq!(
            render_str("{{ t }}", serde_json::json!({"t": exactly}))
                .unwrap()
                .len(),
            1 << 20,
            "up to the bound is fine"
        );
    }

    /// A loop no prompt needs: 10^10 iterations of nothing.
    const SPIN: &str =
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";

    #[test]
    fn a_custom_suites_judge_template_is_bounded_per_example() {
        let yaml = format!(
            "name: spin\nkind: custom\nrecord:\n  fields:\n    answer: {{type: string, required: true}}\n\
             judge:\n  dimensions:\n    - name: quality\n      scale: {{min: 1, max: 5}}\n      rubric: \"5: good\"\n      \
             template: \"{SPIN}{{{{ answer }}}}\"\n    - name: length\n      scale: {{min: 1, max: 5}}\n      rubric: \"5: good\"\n      \
             template: \"{{% for i in range(100000) %}}{{{{ answer }}}}{{% endfor %}}\"\n"
        );
        let suite = crate::suite::Suite::from_yaml(&yaml, "spin.yaml").unwrap();
        let custom = suite.custom.as_ref().unwrap();
        let example = custom
            .parse(
                &serde_json::json!({"id": "1", "answer": "forty-two ".repeat(200)}),
                &Default::default(),
                &[],
            )
            .unwrap();
        let err = custom.render(0, &example).unwrap_err();
        assert!(
            err.starts_with("judge dimension 'quality': template: ")
                && err.contains("templates.fuel"),
            "{err}"
        );
        let err = custom.render(1, &example).unwrap_err();
        assert!(err.contains("templates.max_output_bytes"), "{err}");
    }

    #[test]
    fn a_targets_request_template_is_bounded_per_record() {
        let yaml = format!(
            "name: spin\nkind: http\nurl: \"http://127.0.0.1:1/agent\"\n\
             body: {{question: \"{SPIN}{{{{ question }}}}\"}}\noutputs: {{trace: /data/trace}}\n"
        );
        let target = evalfleet_config::Target::parse(&yaml).unwrap();
        let plan =
            crate::target::TargetPlan::compile(target, crate::target::Secrets::Keep).unwrap();
        let record = serde_json::json!({"id": "1", "question": "why?"});
        let err = plan.http(record.as_object().unwrap()).unwrap_err();
        assert!(
            err.starts_with("target spin: body/question: ") && err.contains("templates.fuel"),
            "{err}"
        );
    }

    /// The default's headroom: a loop iteration that writes two values costs about ten
    /// instructions, so 100,000 allow a loop over some 10,000 items (and the bundled suites'
    /// templates, a few substitutions, use a few dozen).
    #[test]
    fn a_loop_iteration_costs_about_ten_instructions() {
        let fits = |fuel: u64, source: &str| {
            let mut env = environment();
            env.set_fuel(Some(fuel));
            env.add_template_owned("t", source.to_owned()).unwrap();
            let items: Vec<u32> = (0..1000).collect();
            render(
                &env.get_template("t").unwrap(),
                serde_json::json!({"items": items, "a": "x", "b": "y"}),
            )
            .is_ok()
        };
        let each = "{% for x in items %}{{ loop.index }}. {{ x }}\n{% endfor %}";
        assert!(fits(12_000, each) && !fits(8_000, each));
        assert!(fits(
            50,
            "Question: {{ a }}\n\nContext:\n{{ b }}\n\nAnswer:\n{{ a }}\n"
        ));
    }

    /// What spending the whole fuel costs, for docs/BENCHMARKS.md:
    /// `cargo test --release -p evalfleet-suites bounded::tests::fuel_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement"]
    fn fuel_cost() {
        let started = Instant::now();
        let n = 50;
        for _ in 0..n {
            assert!(render_str(SPIN, serde_json::json!({})).is_err());
        }
        let each = started.elapsed() / n;
        eprintln!(
            "templates.fuel = {}: {each:?} per rendering that spends it",
            limits().fuel
        );
    }
}
