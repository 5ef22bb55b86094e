//! A `command` scorer's pool of processes: up to `processes` of them, started when the load
//! asks for them (a request goes to the least loaded process, and a slot without one starts
//! one only when every running process has work in hand), retired when idle.
//!
//! A process that crashes is restarted after a backoff (backon's exponential schedule, reset
//! once a restarted process has answered); the requests it held behind the one it crashed on
//! are sent again. A scorer that crashes [`MAX_CRASHES`] times within [`CRASH_WINDOW`], or
//! cannot be started at all, is given up: it is reported once in the log with its stderr, and
//! every request after that is a null with the reason, while the run goes on.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use evalfleet_suites::custom::ExternalScore;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::process::{Answer, Ended, Job, Proc, Spawn};

/// Crashes within [`CRASH_WINDOW`] after which a scorer is given up.
pub(super) const MAX_CRASHES: usize = 5;
/// See [`MAX_CRASHES`].
pub(super) const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// How long a process may go without requests before it is retired.
const IDLE: Duration = Duration::from_secs(60);
/// How many times one request is handed to a process (it is sent again when the process it
/// waited in ended on another request).
const MAX_SENDS: usize = 4;

/// A pool's settings.
pub(super) struct PoolSpec {
    /// The check's name, for the log and the reasons.
    pub check: String,
    pub command: Vec<String>,
    pub processes: usize,
    pub timeout: Duration,
    pub idle: Duration,
}

impl PoolSpec {
    pub(super) fn new(
        check: &str,
        command: &[String],
        processes: usize,
        timeout: Duration,
    ) -> Self {
        PoolSpec {
            check: check.to_owned(),
            command: command.to_vec(),
            processes: processes.max(1),
            timeout,
            idle: IDLE,
        }
    }
}

/// A `command` scorer's processes.
pub(super) struct Pool {
    shared: Arc<Shared>,
}

/// What the pool and its processes' end callbacks share (the callbacks hold it weakly, so
/// dropping the pool ends its processes).
struct Shared {
    spec: PoolSpec,
    check: Arc<str>,
    slots: Vec<Slot>,
    health: Mutex<Health>,
    /// Tells processes apart, so that the end of an old one never clears its successor.
    generation: AtomicU64,
}

struct Slot {
    current: Mutex<Option<(u64, Arc<Proc>)>>,
    /// Held while a process is being started, so only one caller starts it.
    starting: tokio::sync::Mutex<()>,
    restart: Mutex<Restart>,
}

/// When a slot may start its next process.
#[derive(Default)]
struct Restart {
    backoff: Option<ExponentialBackoff>,
    not_before: Option<Instant>,
}

/// The pool's crashes lately, and whether it gave up.
#[derive(Default)]
struct Health {
    crashes: VecDeque<Instant>,
    gave_up: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    pub(super) fn new(spec: PoolSpec) -> Pool {
        let slots = (0..spec.processes)
            .map(|_| Slot {
                current: Mutex::new(None),
                starting: tokio::sync::Mutex::new(()),
                restart: Mutex::new(Restart::default()),
            })
            .collect();
        Pool {
            shared: Arc::new(Shared {
                check: spec.check.as_str().into(),
                spec,
                slots,
                health: Mutex::new(Health::default()),
                generation: AtomicU64::new(0),
            }),
        }
    }

    /// One request's score: its reply read, or a null with the reason.
    pub(super) async fn ask(&self, line: Arc<str>) -> ExternalScore {
        for _ in 0..MAX_SENDS {
            let proc = match self.pick().await {
                Ok(proc) => proc,
                Err(reason) => return ExternalScore::null(reason),
            };
            let answer = {
                let _busy = proc.busy();
                let (tx, rx) = oneshot::channel();
                match proc.submit(Job {
                    line: line.clone(),
                    reply: tx,
                }) {
                    Ok(()) => rx.await.unwrap_or(Answer::Lost),
                    Err(_) => Answer::Lost,
                }
            };
            match answer {
                Answer::Reply(bytes) => return ExternalScore::from_reply(&bytes),
                Answer::Failed(reason) => return ExternalScore::null(reason),
                Answer::Lost => {}
            }
        }
        ExternalScore::null(format!(
            "the scorer's processes ended {MAX_SENDS} times before this request was answered"
        ))
    }

    /// The process for the next request: the least loaded running one, or a new one in a slot
    /// without one when every running process has work in hand.
    async fn pick(&self) -> Result<Arc<Proc>, String> {
        let shared = &self.shared;
        if let Some(reason) = &lock(&shared.health).gave_up {
            return Err(reason.clone());
        }
        let mut best: Option<(usize, (usize, bool))> = None;
        for (i, slot) in shared.slots.iter().enumerate() {
            let running = lock(&slot.current)
                .as_ref()
                .filter(|(_, p)| p.alive())
                .map(|(_, p)| p.load());
            // Running before idle slots at equal load: a process is started only when needed.
            let key = (running.unwrap_or(0), running.is_none());
            if best.is_none_or(|(_, b)| key < b) {
                best = Some((i, key));
            }
        }
        let (i, _) = best.ok_or("the pool has no process slots")?;
        self.start(i).await
    }

    /// Slot `i`'s running process, started (after its restart delay) when it has none.
    async fn start(&self, i: usize) -> Result<Arc<Proc>, String> {
        let shared = &self.shared;
        let slot = &shared.slots[i];
        let running = || {
            lock(&slot.current)
                .as_ref()
                .filter(|(_, p)| p.alive())
                .map(|(_, p)| p.clone())
        };
        if let Some(proc) = running() {
            return Ok(proc);
        }
        let _starting = slot.starting.lock().await;
        if let Some(proc) = running() {
            return Ok(proc);
        }
        let not_before = lock(&slot.restart).not_before;
        if let Some(at) = not_before {
            tokio::time::sleep_until(at).await;
        }
        if let Some(reason) = &lock(&shared.health).gave_up {
            return Err(reason.clone());
        }
        let generation = shared.generation.fetch_add(1, Ordering::Relaxed);
        let weak = Arc::downgrade(shared);
        let spawned = Proc::spawn(Spawn {
            check: shared.check.clone(),
            command: &shared.spec.command,
            timeout: shared.spec.timeout,
            idle: shared.spec.idle,
            on_end: Box::new(move |ended| ended_in(&weak, i, generation, ended)),
        });
        match spawned {
            Ok(proc) => {
                let proc = Arc::new(proc);
                *lock(&slot.current) = Some((generation, proc.clone()));
                Ok(proc)
            }
            Err(reason) => {
                // A program that cannot be started will not start on the next try either.
                let reason = format!("check '{}': {reason}", shared.spec.check);
                tracing::error!(check = %shared.check, "{reason}; the check gives nulls");
                lock(&shared.health).gave_up = Some(reason.clone());
                Err(reason)
            }
        }
    }
}

/// A process of slot `slot` ended: the slot is freed, and a crash counted, delayed and, past
/// [`MAX_CRASHES`] in [`CRASH_WINDOW`], makes the pool give up.
fn ended_in(shared: &Weak<Shared>, slot: usize, generation: u64, ended: Ended) {
    let Some(shared) = shared.upgrade() else {
        return;
    };
    let s = &shared.slots[slot];
    {
        let mut current = lock(&s.current);
        if current.as_ref().is_some_and(|(g, _)| *g == generation) {
            *current = None;
        }
    }
    let check = &shared.check;
    let (reason, stderr, answered) = match ended {
        Ended::Quiet => return,
        Ended::TimedOut => {
            let timeout_s = shared.spec.timeout.as_secs_f64();
            tracing::warn!(
                check = %check,
                timeout_s,
                "a scorer request timed out: its process was restarted"
            );
            return;
        }
        Ended::Crashed {
            reason,
            stderr,
            answered,
        } => (reason, stderr, answered),
    };
    let now = Instant::now();
    let delay = {
        let mut restart = lock(&s.restart);
        if answered > 0 {
            restart.backoff = None;
        }
        let delay = restart
            .backoff
            .get_or_insert_with(|| {
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(100))
                    .with_max_delay(Duration::from_secs(5))
                    .with_jitter()
                    .without_max_times()
                    .build()
            })
            .next()
            .unwrap_or(Duration::from_secs(5));
        restart.not_before = Some(now + delay);
        delay
    };
    let mut health = lock(&shared.health);
    while health
        .crashes
        .front()
        .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
    {
        health.crashes.pop_front();
    }
    health.crashes.push_back(now);
    if health.gave_up.is_some() {
        return;
    }
    if health.crashes.len() >= MAX_CRASHES {
        let window = CRASH_WINDOW.as_secs();
        health.gave_up = Some(format!(
            "check '{}': the scorer crashed {MAX_CRASHES} times within {window} s and is no longer started (last: {reason})",
            shared.spec.check
        ));
        tracing::error!(
            check = %check,
            command = %shared.spec.command.join(" "),
            stderr = %stderr.join("\n"),
            "the scorer crashed {MAX_CRASHES} times within {window} s: it is no longer \
             started, and its check gives nulls for the rest of the run (last: {reason})"
        );
    } else {
        tracing::warn!(check = %check, ?delay, "{reason}; restarting it");
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
