//! The run registry's promises (see [`crate::registry::RunRegistry`]).

use std::time::Duration;

use crate::registry::{RunMeta, RunRegistry, RunStatus, Verdict};
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::spec::{JudgeMode, RunSpec};
use evalfleet_suites::suite::Suite;

/// A registry entry for `id`, as `submit` registers it.
pub fn run_meta(id: &str) -> RunMeta {
    RunMeta {
        id: id.into(),
        suite: "support-judge".into(),
        status: RunStatus::Submitting,
        total: None,
        published: 0,
        created_at: "2026-11-25T10:00:00Z".into(),
        finished_at: None,
        dataset: "d.jsonl".into(),
        judge: "heuristic".into(),
        gates_passed: None,
    }
}

/// The spec of a support-judge run with the offline judge.
pub fn run_spec() -> RunSpec {
    RunSpec {
        suite: Suite::builtin(SuiteKind::SupportJudge),
        judge: JudgeMode::Heuristic,
        judges: Default::default(),
        model_prefixes: Default::default(),
        dataset: "d.jsonl".into(),
        target: None,
        target_model: None,
    }
}

/// A run's life through the registry: registered once (a second registration changes
/// nothing), progress recorded, finished with its verdict, reopened by a retry, and its failed
/// messages kept and taken once; the report lock is held by one owner at a time.
pub async fn registry_keeps_a_runs_life<R: RunRegistry>(registry: &R, id: &str) {
    let spec = run_spec();
    assert!(registry
        .register(&run_meta(id), &spec)
        .await
        .expect("register"));
    let mut again = run_meta(id);
    again.suite = "rag-layers".into();
    assert!(
        !registry
            .register(&again, &run_spec())
            .await
            .expect("register again"),
        "a second registration is a resume"
    );
    assert_eq!(
        registry.spec(id).await.expect("spec"),
        Some(spec),
        "the spec stays"
    );
    assert_eq!(registry.run("no-such-run").await.expect("run"), None);
    assert_eq!(registry.spec("no-such-run").await.expect("spec"), None);

    assert_eq!(registry.published_through(id).await.expect("through"), None);
    registry.add_published(id, 3).await.expect("published");
    registry
        .set_published_through(id, 2)
        .await
        .expect("through");
    registry.add_published(id, 2).await.expect("published");
    registry
        .set_published_through(id, 4)
        .await
        .expect("through");
    assert_eq!(
        registry.published_through(id).await.expect("through"),
        Some(4)
    );
    registry.set_total(id, 5).await.expect("total");
    registry
        .set_status(id, RunStatus::Running)
        .await
        .expect("status");
    let meta = registry.run(id).await.expect("run").expect("registered");
    assert_eq!(
        (meta.suite.as_str(), meta.published, meta.total),
        ("support-judge", 5, Some(5))
    );
    assert_eq!(meta.status, RunStatus::Running);
    assert!(registry
        .runs(10)
        .await
        .expect("runs")
        .iter()
        .any(|m| m.id == id));

    let ttl = Duration::from_secs(30);
    assert!(registry.try_lock_report(id, "a", ttl).await.expect("lock"));
    assert!(
        !registry.try_lock_report(id, "b", ttl).await.expect("lock"),
        "one owner at a time"
    );
    assert!(
        !registry
            .release_report_lock(id, "b")
            .await
            .expect("release"),
        "not b's lock"
    );
    assert!(registry
        .release_report_lock(id, "a")
        .await
        .expect("release"));
    assert!(
        registry.try_lock_report(id, "b", ttl).await.expect("lock"),
        "free again"
    );
    registry
        .release_report_lock(id, "b")
        .await
        .expect("release");

    registry
        .keep_failed_message(id, 4, "{\"m\":4}")
        .await
        .expect("keep");
    registry
        .keep_failed_message(id, 1, "{\"m\":1}")
        .await
        .expect("keep");
    let mut kept = registry.take_failed(id).await.expect("take");
    kept.sort();
    assert_eq!(kept, ["{\"m\":1}", "{\"m\":4}"]);
    assert!(
        registry.take_failed(id).await.expect("take").is_empty(),
        "taken once"
    );

    let verdict = Verdict {
        gates_passed: false,
        summary_md: "# summary",
        report_dir: "reports/x",
    };
    registry.finish(id, &verdict).await.expect("finish");
    let meta = registry.run(id).await.expect("run").expect("registered");
    assert_eq!(meta.status, RunStatus::Complete);
    assert_eq!(meta.gates_passed, Some(false));
    assert!(meta.finished_at.is_some(), "finished_at is set");
    assert_eq!(
        registry.summary(id).await.expect("summary").as_deref(),
        Some("# summary")
    );
    assert_eq!(
        registry.report_dir(id).await.expect("dir").as_deref(),
        Some("reports/x")
    );

    registry
        .set_status(id, RunStatus::Running)
        .await
        .expect("reopen");
    let meta = registry.run(id).await.expect("run").expect("registered");
    assert_eq!(
        (meta.gates_passed, meta.finished_at),
        (None, None),
        "the old verdict is cleared"
    );
}
