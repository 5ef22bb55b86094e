//! One scorer process: requests are written to its stdin as they come, without waiting for the
//! replies before them (pipelined), and each line of its stdout answers the oldest request not
//! yet answered (a FIFO of the requests' reply channels).
//!
//! Four tasks per process, so that writing never waits on reading or the other way round (a
//! scorer blocked writing a reply while we block writing a request would be a deadlock):
//! - the writer takes requests off the channel, queues their reply senders, writes them in
//!   batches and flushes; it retires the process after [`Spawn::idle`] without requests;
//! - the stdout reader turns lines into messages for the matcher;
//! - the stderr reader logs each line under the check's name and keeps the last ones, for the
//!   reason of a crash;
//! - the matcher owns the child: it answers the oldest request with each line, and ends the
//!   process when the oldest request waits longer than the timeout or stdout ends.
//!
//! When the process ends, the oldest request unanswered gets the reason (it was being worked
//! on: a timeout, a crash), and the requests behind it are [`Answer::Lost`]: not their fault,
//! the pool sends them again.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lines::{next_line, Line};

/// The longest reply line read; a longer one answers its request with a null.
const MAX_REPLY_BYTES: usize = 1 << 20;
/// The longest stderr line kept whole (longer ones are cut).
const MAX_LOG_BYTES: usize = 16 << 10;
/// Stderr lines kept for the reason of a crash.
const STDERR_TAIL: usize = 20;
/// Requests written before one flush, at most.
const WRITE_BATCH: usize = 256;
/// How long a process that ended is given to say how (its exit status, the end of its stderr).
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// One request: its JSON line (without the newline), and where its answer goes.
pub(super) struct Job {
    pub line: Arc<str>,
    pub reply: oneshot::Sender<Answer>,
}

/// What a request got from the process.
#[derive(Debug, PartialEq)]
pub(super) enum Answer {
    /// Its reply line, as written.
    Reply(Vec<u8>),
    /// No reply, for this reason: it timed out, was too long, or the process ended on it.
    Failed(String),
    /// The process ended while the request waited behind another: send it again.
    Lost,
}

/// How a process ended, for the pool.
#[derive(Debug)]
pub(super) enum Ended {
    /// Retired when idle, or exited cleanly with nothing to answer.
    Quiet,
    /// Killed because its oldest request took longer than the timeout.
    TimedOut,
    /// Ended on its own (or closed its stdout) with work in hand, or with a failure status.
    Crashed {
        reason: String,
        stderr: Vec<String>,
        /// Replies it gave before (a process that worked for a while resets the backoff).
        answered: u64,
    },
}

/// How to start one process.
pub(super) struct Spawn<'a> {
    /// The check's name, for the log.
    pub check: Arc<str>,
    pub command: &'a [String],
    /// How long the oldest request may wait for its reply.
    pub timeout: Duration,
    /// How long the process may go without requests before it is retired.
    pub idle: Duration,
    /// Told once, when the process has ended and every request it held is answered.
    pub on_end: Box<dyn FnOnce(Ended) + Send>,
}

/// A running scorer process: what callers hand requests to.
pub(super) struct Proc {
    jobs: mpsc::UnboundedSender<Job>,
    load: AtomicUsize,
}

/// A request written and not yet answered.
struct Pending {
    reply: oneshot::Sender<Answer>,
    written: Instant,
}

/// What the tasks of one process share.
struct Shared {
    pending: Mutex<VecDeque<Pending>>,
    /// A request was queued (the matcher recomputes its deadline).
    pushed: Notify,
    /// The writer retired the process (idle, or every handle dropped).
    retired: AtomicBool,
    /// The matcher is done: the writer stops.
    stop: CancellationToken,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, VecDeque<Pending>> {
        // A panic while holding the queue leaves it usable: its entries are plain data.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Proc {
    /// Starts the process and its tasks. Err says why it could not start.
    pub(super) fn spawn(spawn: Spawn<'_>) -> Result<Proc, String> {
        let shown = spawn.command.join(" ");
        let (program, args) = spawn
            .command
            .split_first()
            .ok_or_else(|| "the command is empty".to_owned())?;
        let mut child = Command::new(program)
            .args(args)
            // Python block-buffers a pipe: its replies would wait in its buffer while we wait
            // for them. Harmless to any other program.
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start `{shown}`: {e}"))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!("`{shown}` started without its pipes"));
        };
        let pid = child.id();
        tracing::debug!(check = %spawn.check, pid, command = %shown, "scorer process started");
        let shared = Arc::new(Shared {
            pending: Mutex::new(VecDeque::new()),
            pushed: Notify::new(),
            retired: AtomicBool::new(false),
            stop: CancellationToken::new(),
        });
        let (jobs, rx) = mpsc::unbounded_channel();
        let (lines_tx, lines) = mpsc::unbounded_channel();
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let writer = tokio::spawn(write(stdin, rx, shared.clone(), spawn.idle));
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            while let Ok(Some(line)) = next_line(&mut reader, MAX_REPLY_BYTES).await {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = tokio::spawn(log_stderr(stderr, spawn.check.clone(), pid, tail.clone()));
        tokio::spawn(async move {
            let matched = Matcher {
                child,
                lines,
                shared,
                timeout: spawn.timeout,
            };
            let ended = matched.run(writer, stderr, tail).await;
            (spawn.on_end)(ended);
        });
        Ok(Proc {
            jobs,
            load: AtomicUsize::new(0),
        })
    }

    /// Hands a request over; gives it back when the process is gone.
    pub(super) fn submit(&self, job: Job) -> Result<(), Job> {
        self.jobs.send(job).map_err(|e| e.0)
    }

    /// Whether the process still takes requests.
    pub(super) fn alive(&self) -> bool {
        !self.jobs.is_closed()
    }

    /// Requests handed over and not yet answered.
    pub(super) fn load(&self) -> usize {
        self.load.load(Ordering::Relaxed)
    }

    /// Counts a request in [`Proc::load`] until the guard drops.
    pub(super) fn busy(&self) -> Busy<'_> {
        self.load.fetch_add(1, Ordering::Relaxed);
        Busy(&self.load)
    }
}

/// A request in a process's load (see [`Proc::busy`]).
pub(super) struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The writer: requests to stdin, in batches; their reply senders queued first, so that a
/// reply never arrives before its request is in the queue.
async fn write(
    stdin: ChildStdin,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    shared: Arc<Shared>,
    idle: Duration,
) {
    let mut stdin = stdin;
    let mut buf = Vec::new();
    loop {
        let next = tokio::select! {
            () = shared.stop.cancelled() => return,
            next = tokio::time::timeout(idle, jobs.recv()) => next,
        };
        let first = match next {
            Ok(Some(job)) => job,
            // Every handle is gone (the pool was dropped): nothing more will come.
            Ok(None) => break,
            Err(_) if shared.pending().is_empty() => break,
            Err(_) => continue,
        };
        buf.clear();
        let mut batch = vec![first];
        while batch.len() < WRITE_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        {
            let now = Instant::now();
            let mut pending = shared.pending();
            for job in batch {
                buf.extend_from_slice(job.line.as_bytes());
                buf.push(b'\n');
                pending.push_back(Pending {
                    reply: job.reply,
                    written: now,
                });
            }
        }
        shared.pushed.notify_one();
        let written = tokio::select! {
            () = shared.stop.cancelled() => return,
            written = stdin.write_all(&buf) => written,
        };
        if written.is_err() {
            // The process is gone: the matcher sees its stdout end and answers the queue.
            return;
        }
    }
    // Retired: closing stdin asks the scorer to exit; the matcher makes sure it does.
    shared.retired.store(true, Ordering::Relaxed);
    drop(stdin);
    shared.pushed.notify_one();
}

/// Stderr to the log under the check's name, the last lines kept.
async fn log_stderr(
    stderr: tokio::process::ChildStderr,
    check: Arc<str>,
    pid: Option<u32>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut reader = BufReader::new(stderr);
    while let Ok(Some(line)) = next_line(&mut reader, MAX_LOG_BYTES).await {
        let text = match line {
            Line::Text(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Line::TooLong => format!("(a line longer than {MAX_LOG_BYTES} bytes)"),
        };
        tracing::warn!(check = %check, pid, "scorer stderr: {text}");
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(text);
    }
}

/// The matcher's state: the child, its stdout lines, the queue.
struct Matcher {
    child: Child,
    lines: mpsc::UnboundedReceiver<Line>,
    shared: Arc<Shared>,
    timeout: Duration,
}

/// Why the matcher stopped matching.
enum Stop {
    /// Stdout ended (the process exited, or closed it).
    Eof,
    /// The oldest request waited longer than the timeout.
    Timeout,
    /// The writer retired the process.
    Retired,
}

impl Matcher {
    async fn run(
        mut self,
        writer: tokio::task::JoinHandle<()>,
        stderr: tokio::task::JoinHandle<()>,
        tail: Arc<Mutex<VecDeque<String>>>,
    ) -> Ended {
        let mut answered = 0u64;
        // A request's time starts when it is written or when the one before it was answered,
        // whichever is later: it is not charged for the time the ones before it took.
        let mut last_reply = Instant::now();
        let stop = loop {
            let deadline = self
                .shared
                .pending()
                .front()
                .map(|p| p.written.max(last_reply) + self.timeout);
            if deadline.is_none() && self.shared.retired.load(Ordering::Relaxed) {
                break Stop::Retired;
            }
            let far = Instant::now() + Duration::from_secs(86_400);
            tokio::select! {
                biased;
                line = self.lines.recv() => match line {
                    None => break Stop::Eof,
                    Some(line) => {
                        last_reply = Instant::now();
                        let Some(front) = self.shared.pending().pop_front() else {
                            tracing::warn!(
                                "a scorer wrote a line on stdout that answers no request: stdout \
                                 is for replies only (write logs to stderr)"
                            );
                            continue;
                        };
                        answered += 1;
                        let answer = match line {
                            Line::Text(bytes) => Answer::Reply(bytes),
                            Line::TooLong => Answer::Failed(format!(
                                "the reply is longer than {MAX_REPLY_BYTES} bytes"
                            )),
                        };
                        // The caller may have gone (its example was dropped): nothing to do.
                        let _ = front.reply.send(answer);
                    }
                },
                () = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                    break Stop::Timeout;
                }
                () = self.shared.pushed.notified() => {}
            }
        };
        if !matches!(stop, Stop::Eof) {
            let _ = self.child.start_kill();
        }
        // Nothing more is written; requests still in the channel are dropped (Lost).
        self.shared.stop.cancel();
        let _ = writer.await;
        let status = match tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                let _ = self.child.kill().await;
                self.child.wait().await.ok()
            }
        };
        // The end of stderr says why it ended: give the reader a moment to get there.
        let _ = tokio::time::timeout(EXIT_GRACE, stderr).await;
        let stderr: Vec<String> = tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        let mut pending: VecDeque<Pending> = std::mem::take(&mut *self.shared.pending());
        let seconds = self.timeout.as_secs_f64();
        let (first, ended) = match stop {
            Stop::Retired => (None, Ended::Quiet),
            Stop::Timeout => (
                Some(format!("no reply within {seconds} s (timeout_s)")),
                Ended::TimedOut,
            ),
            Stop::Eof
                if pending.is_empty()
                    && (self.shared.retired.load(Ordering::Relaxed)
                        || status.is_some_and(|s| s.success())) =>
            {
                (None, Ended::Quiet)
            }
            Stop::Eof => {
                let reason = exited(status, &stderr);
                (
                    Some(reason.clone()),
                    Ended::Crashed {
                        reason,
                        stderr,
                        answered,
                    },
                )
            }
        };
        if let (Some(reason), Some(front)) = (first, pending.pop_front()) {
            let _ = front.reply.send(Answer::Failed(reason));
        }
        for p in pending {
            let _ = p.reply.send(Answer::Lost);
        }
        ended
    }
}

/// A crash in words: the exit status and the last stderr line.
fn exited(status: Option<ExitStatus>, stderr: &[String]) -> String {
    let how = match status {
        Some(s) => format!("the scorer process exited ({s}) before it answered"),
        None => "the scorer process ended before it answered".to_owned(),
    };
    match stderr.iter().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => {
            let last: String = last.chars().take(300).collect();
            format!("{how}; stderr: {last}")
        }
        None => how,
    }
}
