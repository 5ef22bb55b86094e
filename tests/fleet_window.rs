//! The broker holds a window of a run, not the run: `submit` keeps at most `fleet.max_queued`
//! messages waiting in the work queue (RabbitMQ's ready count), waits for the workers while it
//! is full, and a submit stopped mid-way resumes after what it published — nothing twice.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::fleet::Fleet;

/// The work queue's ready messages once RabbitMQ's statistics show them (they are collected
/// every few seconds): the first reading at least `least`, within 20 s.
fn ready_at_least(queue: &str, least: u64) -> u64 {
    let started = Instant::now();
    loop {
        let n = ready(queue);
        if n >= least || started.elapsed() > Duration::from_secs(20) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The work queue's ready messages, from `rabbitmqctl list_queues`.
fn ready(queue: &str) -> u64 {
    let out = Command::new("rabbitmqctl")
        .args([
            "list_queues",
            "-q",
            "--no-table-headers",
            "name",
            "messages_ready",
        ])
        .output()
        .expect("rabbitmqctl");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.split_once(char::is_whitespace))
        .find(|(name, _)| *name == queue)
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no queue {queue} in:\n{text}"))
}

#[test]
fn submit_keeps_a_window_of_the_run_in_the_queue_and_resumes_after_it() {
    const N: u64 = 2000;
    const WINDOW: u64 = 500;
    let mut fleet = Fleet::new("");
    let data = fleet.generate("support-judge", N, 21);
    let run_id = format!("{}-window", fleet.prefix);
    let queue = format!("{}.examples", fleet.prefix);

    // No workers: the submit fills the window, then waits.
    fleet
        .env
        .push(("EVALFLEET_FLEET__MAX_QUEUED".into(), WINDOW.to_string()));
    fleet.spawn(
        "submit",
        &["submit", data.to_str().unwrap(), "--run-id", &run_id],
    );
    assert!(
        fleet.wait_log("submit", "waiting for the workers", Duration::from_secs(60)),
        "the submit waits for room\n{}",
        fleet.log("submit")
    );
    let held = ready_at_least(&queue, 1);
    assert!(
        (WINDOW - 256..=WINDOW).contains(&held),
        "the queue holds the window: {held}\n{}",
        fleet.log("submit")
    );
    assert!(fleet.alive("submit"), "still waiting");
    let through: u64 = fleet
        .redis(&[
            "HGET",
            &format!("{}:run:{run_id}", fleet.prefix),
            "published_through",
        ])
        .parse()
        .expect("published_through is recorded");
    assert!(through < N, "{through}");
    fleet.signal("submit", 9);

    // Submitting again resumes after what was published: no message twice.
    fleet
        .env
        .retain(|(k, _)| k != "EVALFLEET_FLEET__MAX_QUEUED");
    let again = fleet.run(
        &["submit", data.to_str().unwrap(), "--run-id", &run_id],
        Duration::from_secs(60),
    );
    again.assert_code(0);
    assert!(again.stderr.contains("resumed run"), "{}", again.stderr);
    let queued = ready_at_least(&queue, N);
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(
        (queued, ready(&queue)),
        (N, N),
        "every example once in the queue"
    );

    fleet.worker("w1", 19851);
    fleet.aggregator("agg", 19852);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N);
}
