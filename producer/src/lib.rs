//! The producer: streams a dataset from disk, validates each record, publishes valid examples to
//! the work queue in batches and stores skipped records directly as results, so every record of
//! the file ends up accounted for in the report. Messages carry the examples typed, as validated
//! here (workers never parse raw records again); a log-analysis scenario is stored once per run
//! and messages name it by digest. Reading and validation run on their own thread
//! (blocking file I/O) and hand records over a bounded channel, so memory stays flat.

pub mod baseline;
pub mod ops;
pub mod submit;

use std::collections::HashSet;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use evalfleet_contract::queue::{Message, QueueError, WorkQueue};
use evalfleet_contract::registry::RunRegistry;
use evalfleet_contract::store::{ResultStore, StoreError};
use evalfleet_dataset::{DatasetError, DatasetReader, Position, ReadOptions};
use evalfleet_model::record::ResultRecord;
use evalfleet_suites::evaluate::{Checked, Validator, Work};
use evalfleet_suites::loganalysis::canonical_json;

/// Messages published per call; the queue confirms each batch as a whole.
const BATCH: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum ProduceError {
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error("publishing failed: {0}")]
    Queue(#[from] QueueError),
    #[error("storing a skipped record failed: {0}")]
    Store(#[from] StoreError),
    #[error("the dataset reader thread failed: {0}")]
    Reader(String),
}

/// How many skipped records a command shows when it ends (the rest are in the report).
pub const SHOWN_SKIPPED: usize = 5;

/// Where the producer got to: records read and the dataset's bytes consumed (for progress).
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_read: AtomicU64,
    pub records: AtomicU64,
    pub published: AtomicU64,
    pub skipped: AtomicU64,
    /// The first [`SHOWN_SKIPPED`] skipped records, as `line 3 (id): reason`.
    pub first_skipped: std::sync::Mutex<Vec<String>>,
    /// Records that already hold fields the run's target fills, and those fields: the target's
    /// outputs replace them, and the run says so once ([`Progress::replaced_summary`]).
    pub replaced: AtomicU64,
    pub replaced_fields: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// While a submit waits for room in the queue: the messages it holds (0 otherwise).
    pub waiting: AtomicU64,
}

impl Progress {
    fn skipped(&self, position: Position, id: &str, reason: &str) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut first) = self.first_skipped.lock() {
            if first.len() < SHOWN_SKIPPED {
                let id = if id.is_empty() {
                    String::new()
                } else {
                    format!(" ({id})")
                };
                first.push(format!("{position}{id}: {reason}"));
            }
        }
    }

    fn replaced(&self, fields: &[String]) {
        self.replaced.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut known) = self.replaced_fields.lock() {
            known.extend(fields.iter().cloned());
        }
    }

    /// The one note about records whose fields the target replaced, if any.
    pub fn replaced_summary(&self) -> Option<String> {
        let n = self.replaced.load(Ordering::Relaxed);
        let fields = self.replaced_fields.lock().ok()?;
        if n == 0 {
            return None;
        }
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        Some(format!(
            "  note: {n} record{} already held fields the target fills ({}); the target's outputs replaced them",
            if n == 1 { "" } else { "s" },
            fields.join(", ")
        ))
    }

    /// What to print about skipped records when a command ends: how many, the first few, and
    /// where the rest are (`rest_in`).
    pub fn skipped_summary(&self, rest_in: &str) -> Option<String> {
        let n = self.skipped.load(Ordering::Relaxed);
        let first = self.first_skipped.lock().ok()?;
        if n == 0 || first.is_empty() {
            return None;
        }
        let mut out = if n as usize > first.len() {
            format!("  skipped {n} records; the first {}:\n", first.len())
        } else {
            format!("  skipped {n} record{}:\n", if n == 1 { "" } else { "s" })
        };
        for line in first.iter() {
            out.push_str(&format!("    {line}\n"));
        }
        out.push_str(&format!("  every skipped record is in {rest_in}"));
        Some(out)
    }
}

/// Opens a dataset for [`produce`], counting bytes into `progress`.
pub fn open_dataset(
    path: &Path,
    options: &ReadOptions,
    progress: Arc<Progress>,
) -> Result<DatasetReader, DatasetError> {
    let file = std::fs::File::open(path).map_err(|source| DatasetError::Open {
        path: path.to_owned(),
        source,
    })?;
    let counting = CountingRead {
        inner: file,
        progress,
    };
    DatasetReader::from_reader_with(path, Box::new(counting), options)
}

/// Streams every record of `reader` into `queue` (valid) or `store` (skipped).
pub async fn produce<Q: WorkQueue, S: ResultStore>(
    reader: DatasetReader,
    validator: Validator,
    run_id: &str,
    queue: &Q,
    store: &S,
    progress: &Progress,
    options: &ProduceOptions<'_>,
) -> Result<(), ProduceError> {
    let suite = validator.evaluator.suite.name.clone();
    // Records cross from the reader thread in batches: one hand-over per record would cost a
    // thread wake-up each.
    let (tx, rx) = async_channel::bounded::<Vec<Result<Checked, DatasetError>>>(4);
    let reader_thread = std::thread::Builder::new()
        .name("dataset-reader".into())
        .spawn(move || {
            let mut checks = validator.checks(reader).peekable();
            while checks.peek().is_some() {
                let items: Vec<_> = checks.by_ref().take(BATCH).collect();
                if tx.send_blocking(items).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| ProduceError::Reader(e.to_string()))?;
    let mut out = Outbox {
        queue,
        store,
        run_id,
        options,
        progress,
        batch: Vec::with_capacity(BATCH),
        queued: 0,
        scenarios: HashSet::new(),
    };
    let mut outcome = Ok(());
    'read: while let Ok(items) = rx.recv().await {
        for item in items {
            progress.records.fetch_add(1, Ordering::Relaxed);
            let checked = match item {
                Ok(c) => c,
                Err(e) => {
                    outcome = Err(e.into());
                    break 'read;
                }
            };
            match checked {
                Checked::Valid {
                    ordinal,
                    position,
                    work,
                } => {
                    if let Work::Generate(pending) = &work {
                        if !pending.replaced.is_empty() {
                            progress.replaced(&pending.replaced);
                        }
                    }
                    out.push(Message {
                        v: Message::VERSION,
                        run_id: run_id.to_owned(),
                        index: ordinal,
                        line: position.line(),
                        suite: suite.clone(),
                        work,
                    })
                    .await?;
                }
                Checked::Skipped {
                    ordinal,
                    position,
                    id,
                    reason,
                } => {
                    progress.skipped(position, &id, &reason);
                    let rec =
                        ResultRecord::skipped(run_id, &suite, ordinal, position.line(), id, reason);
                    store.put(rec).await?;
                }
            }
        }
        if rx.is_empty() {
            // The reader is slower than the workers: do not hold a part batch back.
            out.flush().await?;
        }
    }
    drop(rx);
    out.flush().await?;
    reader_thread
        .join()
        .map_err(|_| ProduceError::Reader("the reader thread panicked".into()))?;
    outcome
}

/// What a producer does beyond streaming: the fleet resumes runs and keeps a window.
#[derive(Default)]
pub struct ProduceOptions<'a> {
    /// Publish only examples without a stored result (re-submitting a run resumes it).
    pub resume: bool,
    /// A resumed submit: the examples up to this dataset index were published before (they
    /// are in the queue, or done): publish only what comes after.
    pub published_through: Option<u64>,
    /// The fleet: how much the broker may hold, and where progress is recorded.
    pub window: Option<Window<'a>>,
}

/// The broker holds a window of the run, not the run: a submit keeps at most `max_queued`
/// messages waiting in the work queue (`fleet.max_queued`), waiting for the workers when it is
/// full, and records after each confirmed batch how far it published, so that submitting again
/// resumes after it instead of publishing again what waits in the queue.
pub struct Window<'a> {
    pub max_queued: u64,
    pub registry: &'a dyn RunRegistry,
}

/// How often a submit waiting for room in the queue reads its depth again.
const WINDOW_POLL: Duration = Duration::from_millis(250);

/// Batches messages for the queue, dropping already-stored examples when resuming, and stores
/// each scenario the messages name (a recorded example's, or a target run's record's) before
/// the first message that names it.
struct Outbox<'a, Q, S> {
    queue: &'a Q,
    store: &'a S,
    run_id: &'a str,
    options: &'a ProduceOptions<'a>,
    progress: &'a Progress,
    batch: Vec<Message>,
    /// What this submit believes waits in the queue: the depth it last read plus what it
    /// published since (an overestimate: workers take messages meanwhile).
    queued: u64,
    /// Digests of the scenarios stored for this run so far.
    scenarios: HashSet<String>,
}

impl<Q: WorkQueue, S: ResultStore> Outbox<'_, Q, S> {
    async fn push(&mut self, msg: Message) -> Result<(), ProduceError> {
        if let Some(named) = msg.work.scenario() {
            let digest = named.digest();
            if !self.scenarios.contains(digest) {
                if let Some(scenario) = named.get() {
                    let json = canonical_json(scenario);
                    self.store.put_scenario(self.run_id, digest, &json).await?;
                }
                self.scenarios.insert(digest.to_owned());
            }
        }
        self.batch.push(msg);
        if self.batch.len() >= BATCH {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), ProduceError> {
        let mut batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        if let Some(through) = self.options.published_through {
            batch.retain(|m| m.index > through);
        }
        if self.options.resume && !batch.is_empty() {
            let indices: Vec<u64> = batch.iter().map(|m| m.index).collect();
            let stored = self.store.stored(self.run_id, &indices).await?;
            let mut stored = stored.into_iter();
            batch.retain(|_| !stored.next().unwrap_or(false));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let n = batch.len() as u64;
        let last = batch.last().map(|m| m.index);
        self.wait_for_room(n).await?;
        self.queue.publish(batch).await?;
        self.progress.published.fetch_add(n, Ordering::Relaxed);
        if let (Some(window), Some(last)) = (&self.options.window, last) {
            self.queued += n;
            window
                .registry
                .set_published_through(self.run_id, last)
                .await?;
        }
        Ok(())
    }

    /// With a window: returns once `n` more messages fit in the queue, reading its depth when
    /// the estimate says it may be full (a queue that cannot tell its depth never waits).
    async fn wait_for_room(&mut self, n: u64) -> Result<(), ProduceError> {
        let Some(window) = &self.options.window else {
            return Ok(());
        };
        let max = window.max_queued.max(n);
        let mut said = false;
        while self.queued + n > max {
            let Some(depth) = self.queue.backlog().await? else {
                break;
            };
            self.queued = depth;
            if depth + n <= max {
                break;
            }
            self.progress.waiting.store(depth, Ordering::Relaxed);
            if !std::mem::replace(&mut said, true) {
                tracing::info!(
                    run = self.run_id,
                    queued = depth,
                    max_queued = window.max_queued,
                    "the queue holds the window: waiting for the workers"
                );
            }
            tokio::time::sleep(WINDOW_POLL).await;
        }
        self.progress.waiting.store(0, Ordering::Relaxed);
        Ok(())
    }
}

struct CountingRead<R> {
    inner: R,
    progress: Arc<Progress>,
}

impl<R: Read> Read for CountingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress
            .bytes_read
            .fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use evalfleet_contract::queue::InProcessQueue;
    use evalfleet_contract::store::InProcessStore;
    use evalfleet_model::routing::ProviderRules;
    use evalfleet_model::suite::SuiteKind;
    use evalfleet_suites::evaluate::Evaluator;
    use evalfleet_suites::suite::Suite;

    use super::*;

    fn record(id: &str) -> String {
        serde_json::json!({"id": id, "ticket": "t", "response": "r", "model": "gpt-4o", "prompt_version": "v1"})
            .to_string()
    }

    /// A JSON array cut off inside its last element: the complete ones are published, the cut
    /// one is stored as a skipped result with its index, and producing succeeds.
    #[tokio::test]
    async fn a_cut_off_last_element_is_a_skipped_record() {
        let text = format!("[{}, {}, {{\"id\": \"c\", \"tick", record("a"), record("b"));
        let input = Box::new(io::Cursor::new(text.into_bytes()));
        let reader = DatasetReader::from_reader(Path::new("cut.json"), input, 1 << 20).unwrap();
        let suite = Arc::new(Suite::builtin(SuiteKind::SupportJudge));
        let validator = Validator::new(Evaluator::new(suite, ProviderRules::default(), None));
        let queue = InProcessQueue::new(16, 1);
        let (store, _events) = InProcessStore::new("r", 16, 1).unwrap();
        let progress = Progress::default();
        let options = ProduceOptions::default();
        produce(reader, validator, "r", &queue, &store, &progress, &options)
            .await
            .unwrap();
        assert_eq!(progress.records.load(Ordering::Relaxed), 3);
        assert_eq!(progress.published.load(Ordering::Relaxed), 2);
        assert_eq!(progress.skipped.load(Ordering::Relaxed), 1);
        assert_eq!(
            *progress.first_skipped.lock().unwrap(),
            ["index 2: the JSON array ends before element 2 is closed"]
        );
        assert_eq!(store.counts("r").await.unwrap().skipped, 1);
    }

    /// A log-analysis target run: each record's scenario is loaded here, stored once per run,
    /// and named by digest in its message; a record whose scenario file is missing is skipped
    /// with the reason a recorded run gives.
    #[tokio::test]
    async fn a_log_analysis_target_run_stores_each_scenario_once_and_names_it() {
        use evalfleet_contract::queue::Delivery;
        use evalfleet_suites::target::{Secrets, TargetPlan};

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.json"), r#"{"metrics": {"errors": 3}}"#).unwrap();
        let rec = |id: &str, scenario: &str| {
            serde_json::json!({"id": id, "scenario": scenario, "logs": "ERROR disk full"})
                .to_string()
        };
        let text = [
            rec("a", "s.json"),
            rec("b", "s.json"),
            rec("c", "none.json"),
        ]
        .join("\n");
        let data = dir.path().join("logs.jsonl");
        std::fs::write(&data, text).unwrap();
        let reader = DatasetReader::open_with(&data, &ReadOptions::default()).unwrap();
        let suite = Arc::new(Suite::builtin(SuiteKind::LogAnalysis));
        let evaluator =
            Evaluator::new(suite, ProviderRules::default(), Some(dir.path().to_owned()));
        let target = evalfleet_config::Target::parse(
            "name: analyst\nkind: chat\nprovider: openai\nmodel: m\n\
             prompt: \"{{ logs }}\"\noutput: output\n",
        )
        .unwrap();
        let plan = Arc::new(TargetPlan::compile(target, Secrets::Keep).unwrap());
        let validator = Validator::new(evaluator).with_target(plan);
        let queue = InProcessQueue::new(16, 1);
        let (store, _events) = InProcessStore::new("r", 16, 1).unwrap();
        let progress = Progress::default();
        produce(
            reader,
            validator,
            "r",
            &queue,
            &store,
            &progress,
            &ProduceOptions::default(),
        )
        .await
        .unwrap();
        queue.finish_publishing();

        let mut digests = Vec::new();
        while let Some(d) = queue.next().await.unwrap() {
            let Work::Generate(pending) = &d.message().work else {
                panic!("a target run publishes records to complete");
            };
            digests.push(pending.scenario.as_ref().unwrap().digest().to_owned());
            d.ack().await.unwrap();
        }
        assert_eq!(digests.len(), 2);
        assert_eq!(digests[0], digests[1], "both name s.json");
        let stored = store.scenario("r", &digests[0]).await.unwrap().unwrap();
        let scenario = evalfleet_suites::loganalysis::load_stored(&digests[0], &stored).unwrap();
        assert_eq!(scenario.metrics.len(), 1, "s.json, stored under its digest");
        let skipped = progress.first_skipped.lock().unwrap().clone();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(
            skipped[0].starts_with("line 3 (c): Cannot read scenario 'none.json': "),
            "{skipped:?}"
        );
    }
}
