//! What a run's scorers may do under each policy, and http scorers against a small server on
//! 127.0.0.1.

use std::sync::atomic::{AtomicU32, Ordering};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use evalfleet_suites::evaluate::{scorer_tasks, Example};
use serde_json::{json, Value};

use super::*;

fn suite(checks: &str) -> Suite {
    let yaml = format!(
        "name: s\nkind: custom\nrecord:\n  fields:\n    answer: {{type: string, required: true}}\nchecks:\n{checks}"
    );
    Suite::from_yaml(&yaml, "s.yaml").unwrap()
}

fn example(suite: &Suite, answer: &str) -> Example {
    let custom = suite.custom.as_deref().unwrap();
    let e = custom
        .parse(
            &json!({"id": "q1", "answer": answer}),
            &Default::default(),
            &[],
        )
        .unwrap();
    Example::Custom(Box::new(e))
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn a_worker_runs_only_what_fleet_targets_allows() {
    let suite = suite(
        "  - {name: sql, type: command, command: [python3, sql_exec.py]}\n\
         \x20 - {name: cite, type: http, url: 'http://scorer.example/${TENANT}', headers: {Authorization: 'Bearer ${OPENAI_API_KEY}'}}\n\
         \x20 - {name: meta, type: http, url: 'http://169.254.169.254/latest/'}\n",
    );
    let policy = TargetPolicy {
        allowed_env: vec!["TENANT".into()],
        ..TargetPolicy::default()
    };
    let fleet = ScorerPolicy::Fleet {
        policy: &policy,
        hosts: Arc::new(policy.hosts().unwrap()),
    };
    let env = |v: &str| Some(format!("value-of-{v}"));
    let scorers = Scorers::build(&suite, &fleet, &env);
    assert_eq!(
        scorers.refusals().collect::<Vec<_>>(),
        [
            "check 'sql': the command `python3 sql_exec.py` is not allowed on this worker (fleet.targets.allowed_commands)",
            "check 'cite': ${OPENAI_API_KEY} is not allowed on this worker (fleet.targets.allowed_env)",
            "check 'meta': 169.254.169.254 is not a host a target may call on this worker (fleet.targets.allowed_hosts)",
        ]
    );
    let allowed = TargetPolicy {
        allowed_env: vec!["TENANT".into(), "OPENAI_API_KEY".into()],
        allowed_commands: vec!["python3 sql_exec.py".into()],
        ..TargetPolicy::default()
    };
    let fleet = ScorerPolicy::Fleet {
        policy: &allowed,
        hosts: Arc::new(allowed.hosts().unwrap()),
    };
    let scorers = Scorers::build(&suite, &fleet, &env);
    assert_eq!(
        scorers.refusals().count(),
        1,
        "the metadata address stays refused"
    );
    // `run` allows any command and host, and reads any variable, which must then be set.
    let scorers = Scorers::build(&suite, &ScorerPolicy::Local, &no_env);
    assert_eq!(
        scorers.refusals().collect::<Vec<_>>(),
        ["check 'cite': url: the environment variable TENANT is not set"]
    );
}

#[tokio::test]
async fn a_refused_check_gives_its_items_nulls_with_the_reason() {
    let suite = suite("  - {name: sql, type: command, command: [python3, sql_exec.py]}\n");
    let policy = TargetPolicy::default();
    let fleet = ScorerPolicy::Fleet {
        policy: &policy,
        hosts: Arc::new(policy.hosts().unwrap()),
    };
    let scorers = Scorers::build(&suite, &fleet, &no_env);
    let e = example(&suite, "SELECT 1");
    let scores = scorers.score(&scorer_tasks(&suite, &e)).await;
    assert_eq!(
        scores.0,
        [ExternalScore::null(
            "check 'sql': the command `python3 sql_exec.py` is not allowed on this worker (fleet.targets.allowed_commands)"
        )]
    );
    // A process that built no scorers (a bug) still gives a null, never a panic.
    let none = Scorers::none().score(&scorer_tasks(&suite, &e)).await;
    assert_eq!(none.0[0].score, None);
}

/// A scorer endpoint: `{"score": len(answer) / 10}`; the first `fail_first` calls get a 503,
/// a request without the bearer token a 401, and an answer "html" a page that is not JSON.
async fn serve(fail_first: u32) -> (String, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let app = Router::new()
        .route(
            "/score",
            post(
                move |State(calls): State<Arc<AtomicU32>>,
                      headers: HeaderMap,
                      Json(req): Json<Value>| async move {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    if headers.get("authorization").and_then(|v| v.to_str().ok())
                        != Some("Bearer k3y")
                    {
                        return (StatusCode::UNAUTHORIZED, "no".to_owned());
                    }
                    if n < fail_first {
                        return (StatusCode::SERVICE_UNAVAILABLE, "busy".to_owned());
                    }
                    let answer = req["fields"]["answer"].as_str().unwrap_or_default();
                    if answer == "html" {
                        return (StatusCode::OK, "<html>".to_owned());
                    }
                    let reply = json!({
                        "score": answer.len() as f64 / 10.0,
                        "reason": format!("{} {} {}", req["id"], req["check"], req["args"]["unit"]),
                    });
                    (StatusCode::OK, reply.to_string())
                },
            ),
        )
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), calls)
}

fn http_suite(base: &str) -> Suite {
    suite(&format!(
        "  - {{name: len, type: http, url: '{base}/score', headers: {{Authorization: 'Bearer ${{SCORER_KEY}}'}}, fields: [answer], args: {{unit: chars}}, timeout_s: 2, retry: {{max_attempts: 3, base_delay_ms: 10, max_delay_ms: 20}}}}\n"
    ))
}

fn key(v: &str) -> Option<String> {
    (v == "SCORER_KEY").then(|| "k3y".to_owned())
}

#[tokio::test]
async fn an_http_scorer_posts_the_request_and_reads_the_reply_with_retries() {
    let (base, calls) = serve(2).await;
    let suite = http_suite(&base);
    let scorers = Scorers::build(&suite, &ScorerPolicy::Local, &key);
    assert_eq!(scorers.refusals().count(), 0);
    let e = example(&suite, "abcd");
    let scores = scorers.score(&scorer_tasks(&suite, &e)).await;
    assert_eq!(
        scores.0,
        [ExternalScore {
            score: Some(0.4),
            reason: Some(r#""q1" "len" "chars""#.into())
        }]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3, "two 503s retried");
    let html = scorers
        .score(&scorer_tasks(&suite, &example(&suite, "html")))
        .await;
    assert!(
        html.0[0]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("the reply is not JSON"),
        "{html:?}"
    );
    let long = scorers
        .score(&scorer_tasks(
            &suite,
            &example(&suite, "a much longer answer"),
        ))
        .await;
    assert_eq!(
        long.0[0],
        ExternalScore::null("score 2.0 is outside [0, 1]")
    );
}

#[tokio::test]
async fn an_http_scorer_that_keeps_failing_gives_a_null_after_its_attempts() {
    let (base, calls) = serve(100).await;
    let suite = http_suite(&base);
    let scorers = Scorers::build(&suite, &ScorerPolicy::Local, &key);
    let e = example(&suite, "abcd");
    let scores = scorers.score(&scorer_tasks(&suite, &e)).await;
    assert_eq!(scores.0, [ExternalScore::null("HTTP 503 after 3 attempts")]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let wrong_key = Scorers::build(&suite, &ScorerPolicy::Local, &|_| Some("nope".into()));
    let scores = wrong_key.score(&scorer_tasks(&suite, &e)).await;
    assert_eq!(scores.0, [ExternalScore::null("HTTP 401 after 1 attempts")]);
    let closed = http_suite("http://127.0.0.1:9");
    let scorers = Scorers::build(&closed, &ScorerPolicy::Local, &key);
    let scores = scorers
        .score(&scorer_tasks(&closed, &example(&closed, "x")))
        .await;
    let reason = scores.0[0].reason.as_deref().unwrap();
    assert!(
        reason.starts_with("cannot connect") && reason.ends_with("after 3 attempts"),
        "{reason}"
    );
}
