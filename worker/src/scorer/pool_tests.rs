//! The pool against small Python scorers written to temporary files: order under pipelining,
//! bad replies, timeouts, crashes, giving up, idle retirement.

use std::time::Duration;

use super::*;

/// A scorer that answers each request with `reply(req)`, a Python expression over `req` (the
/// request) returning the reply object; `before` runs first for each request.
fn scorer(dir: &tempfile::TempDir, name: &str, before: &str, reply: &str) -> Vec<String> {
    let path = dir.path().join(format!("{name}.py"));
    let script = format!(
        "import json, os, sys, time\n\
         for line in sys.stdin:\n\
         \x20   req = json.loads(line)\n\
         \x20   x = req['fields'].get('x')\n\
         {before}\n\
         \x20   sys.stdout.write(json.dumps({reply}) + '\\n')\n\
         \x20   sys.stdout.flush()\n"
    );
    std::fs::write(&path, script).unwrap();
    vec!["python3".into(), path.display().to_string()]
}

fn pool(command: Vec<String>, processes: usize, timeout_ms: u64) -> Pool {
    Pool::new(PoolSpec::new(
        "t",
        &command,
        processes,
        Duration::from_millis(timeout_ms),
    ))
}

fn request(x: i64) -> Arc<str> {
    format!(r#"{{"id":"{x}","check":"t","fields":{{"x":{x}}},"args":{{}}}}"#).into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_replies_come_back_to_their_own_requests() {
    let dir = tempfile::tempdir().unwrap();
    // Some requests take longer: replies stay in order within a process regardless.
    let command = scorer(
        &dir,
        "echo",
        "    time.sleep(0.002 if x % 7 == 0 else 0)",
        "{'score': x / 1000, 'reason': req['id']}",
    );
    let pool = pool(command, 2, 10_000);
    let asks = (0..600).map(|x| {
        let pool = &pool;
        async move { (x, pool.ask(request(x)).await) }
    });
    for (x, got) in futures_util::future::join_all(asks).await {
        assert_eq!(got.score, Some(x as f64 / 1000.0), "{x}: {got:?}");
        assert_eq!(got.reason.as_deref(), Some(x.to_string().as_str()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_replies_give_nulls_and_the_process_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let command = scorer(
        &dir,
        "bad",
        "    if x == 1:\n        sys.stdout.write('Traceback: oops\\n'); sys.stdout.flush(); continue",
        "{'score': 2 if x == 2 else 0.5, 'reason': str(os.getpid())}",
    );
    let pool = pool(command, 1, 10_000);
    let not_json = pool.ask(request(1)).await;
    assert_eq!(not_json.score, None);
    assert!(
        not_json
            .reason
            .as_deref()
            .unwrap()
            .starts_with("the reply is not JSON"),
        "{not_json:?}"
    );
    assert_eq!(
        pool.ask(request(2)).await,
        ExternalScore::null("score 2 is outside [0, 1]")
    );
    let ok = pool.ask(request(3)).await;
    let again = pool.ask(request(4)).await;
    assert_eq!(ok.score, Some(0.5));
    assert_eq!(ok.reason, again.reason, "the same process answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_nulls_its_request_only_and_restarts_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let command = scorer(
        &dir,
        "slow",
        "    time.sleep(30 if x == 1 else 0.05)",
        "{'score': 1, 'reason': str(os.getpid())}",
    );
    let pool = pool(command, 1, 1_000);
    let first = pool.ask(request(0)).await;
    let (slow, behind, after) = tokio::join!(
        pool.ask(request(1)),
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            pool.ask(request(2)).await
        },
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            pool.ask(request(3)).await
        },
    );
    assert_eq!(
        slow,
        ExternalScore::null("no reply within 1 s (timeout_s)"),
        "the request the scorer hung on"
    );
    for got in [&behind, &after] {
        assert_eq!(got.score, Some(1.0), "sent again to a new process: {got:?}");
        assert_ne!(got.reason, first.reason, "a new process");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_nulls_its_request_with_the_stderr_and_the_rest_are_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let command = scorer(
        &dir,
        "crash",
        "    if x == 1:\n        time.sleep(0.2); print('boom: bad input', file=sys.stderr); sys.exit(3)",
        "{'score': 0.25}",
    );
    let pool = pool(command, 1, 10_000);
    let (crashed, behind) = tokio::join!(pool.ask(request(1)), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        futures_util::future::join_all((2..6).map(|x| pool.ask(request(x)))).await
    });
    assert_eq!(crashed.score, None);
    let reason = crashed.reason.unwrap();
    assert!(
        reason.starts_with("the scorer process exited (exit status: 3) before it answered")
            && reason.ends_with("stderr: boom: bad input"),
        "{reason}"
    );
    for got in behind {
        assert_eq!(got.score, Some(0.25), "{got:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scorer_that_keeps_crashing_is_given_up_and_gives_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dies.py");
    std::fs::write(
        &path,
        "import sys\nprint('ImportError: no module named sqlglot', file=sys.stderr)\nsys.exit(1)\n",
    )
    .unwrap();
    let pool = pool(
        vec!["python3".into(), path.display().to_string()],
        1,
        10_000,
    );
    let mut reasons = Vec::new();
    for x in 0..MAX_CRASHES + 2 {
        let got = pool.ask(request(x as i64)).await;
        assert_eq!(got.score, None);
        reasons.push(got.reason.unwrap());
    }
    assert!(
        reasons[0].contains("stderr: ImportError: no module named sqlglot"),
        "{reasons:?}"
    );
    let last = reasons.last().unwrap();
    assert!(
        last.starts_with(
            "check 't': the scorer crashed 5 times within 60 s and is no longer started"
        ),
        "{last}"
    );
}

#[tokio::test]
async fn a_command_that_cannot_start_gives_nulls_at_once() {
    let pool = pool(vec!["/nonexistent/evalfleet-scorer".into()], 2, 1_000);
    for x in 0..3 {
        let got = pool.ask(request(x)).await;
        let reason = got.reason.unwrap();
        assert!(
            reason.starts_with("check 't': cannot start `/nonexistent/evalfleet-scorer`: "),
            "{reason}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_process_is_retired_and_a_new_one_started_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    let command = scorer(&dir, "pid", "", "{'score': 1, 'reason': str(os.getpid())}");
    let mut spec = PoolSpec::new("t", &command, 1, Duration::from_secs(10));
    spec.idle = Duration::from_millis(300);
    let pool = Pool::new(spec);
    let first = pool.ask(request(1)).await;
    let soon = pool.ask(request(2)).await;
    assert_eq!(first.reason, soon.reason, "the same process while busy");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let later = pool.ask(request(3)).await;
    assert_eq!(later.score, Some(1.0));
    assert_ne!(first.reason, later.reason, "retired, then started again");
}
