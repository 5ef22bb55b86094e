//! The fleet-wide rate limiter against a real Redis: three limiters (three workers) sharing one
//! quota together stay under it and close to it, and one worker's pause stops all three.

#[path = "redis_support.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use evalfleet_fleet::redis::{FleetLimiter, PAUSE_POLL};
use support::{raw, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_workers_share_one_quota() {
    let (store, _cleanup) = store().await;
    // 600/min = 10/s, burst 10.
    let workers: Vec<Arc<FleetLimiter>> = (0..3)
        .map(|_| Arc::new(FleetLimiter::new(&store, "openai:rpm", 600, 3)))
        .collect();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(3);
    let tasks: Vec<_> = workers
        .iter()
        .map(|w| {
            let w = w.clone();
            tokio::spawn(async move {
                let mut granted = 0u64;
                loop {
                    w.acquire(1).await.unwrap();
                    if Instant::now() >= deadline {
                        return granted;
                    }
                    granted += 1;
                }
            })
        })
        .collect();
    let mut per_worker = Vec::new();
    for t in tasks {
        per_worker.push(t.await.unwrap());
    }
    let total: u64 = per_worker.iter().sum();
    let allowed = 10.0 + 10.0 * 3.0;
    eprintln!("granted {total} of {allowed} allowed in 3 s: {per_worker:?}");
    assert!(
        total as f64 <= allowed,
        "granted {total} > {allowed} ({per_worker:?})"
    );
    assert!(
        total as f64 >= 0.9 * allowed,
        "granted {total} < 90% of {allowed} ({per_worker:?})"
    );
    assert!(
        per_worker.iter().all(|n| *n > 0),
        "every worker got a share: {per_worker:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pause_stops_every_worker_even_with_leases_in_hand() {
    let (store, _cleanup) = store().await;
    let workers: Vec<Arc<FleetLimiter>> = (0..3)
        .map(|_| Arc::new(FleetLimiter::new(&store, "anthropic:rpm", 6000, 5)))
        .collect();
    for w in &workers {
        w.acquire(1).await.unwrap(); // each now holds unspent units of its lease
    }
    let pause = Duration::from_millis(1200);
    workers[0].pause_fleet(pause).await.unwrap();
    let paused_at = Instant::now();
    // Let the other workers' cached view of the pause go stale, as it would in a real fleet.
    tokio::time::sleep(PAUSE_POLL + Duration::from_millis(50)).await;
    let tasks: Vec<_> = workers
        .iter()
        .map(|w| {
            let w = w.clone();
            tokio::spawn(async move {
                w.acquire(1).await.unwrap();
                paused_at.elapsed()
            })
        })
        .collect();
    for t in tasks {
        let waited = t.await.unwrap();
        assert!(
            waited >= pause - Duration::from_millis(20),
            "a worker went on after {waited:?} of a {pause:?} pause"
        );
        assert!(waited < pause + Duration::from_millis(800), "{waited:?}");
    }
}

#[tokio::test]
async fn a_shorter_pause_never_cuts_a_longer_one() {
    let (store, cleanup) = store().await;
    let l = FleetLimiter::new(&store, "k", 600, 1);
    l.pause_fleet(Duration::from_secs(5)).await.unwrap();
    l.pause_fleet(Duration::from_millis(10)).await.unwrap();
    let left: i64 = redis::cmd("PTTL")
        .arg(format!("{}ratelimit:k:pause", cleanup.0))
        .query(&mut raw())
        .unwrap();
    assert!(left > 4_000, "{left}");
}

#[tokio::test]
async fn requests_larger_than_the_burst_accumulate_leases() {
    let (store, _cleanup) = store().await;
    // 600 tokens/min: burst 10, 10/s. 25 units = the burst now + 15 more over ~1.5 s.
    let l = FleetLimiter::new(&store, "openai:tpm", 600, 4);
    let t = Instant::now();
    l.acquire(25).await.unwrap();
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(1400) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    // No rate configured: only pauses apply.
    let free = FleetLimiter::new(&store, "free", 0, 10);
    let t = Instant::now();
    for _ in 0..100 {
        free.acquire(1000).await.unwrap();
    }
    assert!(t.elapsed() < Duration::from_secs(2));
}
