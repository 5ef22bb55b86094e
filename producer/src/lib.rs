//! The producer: streams a dataset from disk, validates each record, publishes valid examples to
//! the work queue in batches and stores skipped records directly as results, so every record of
//! the file ends up accounted for in the report. Reading and validation run on their own thread
//! (blocking file I/O) and hand records over a bounded channel, so memory stays flat.

use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use evalfleet_shared::dataset::{DatasetError, DatasetReader, Position, DEFAULT_MAX_RECORD_BYTES};
use evalfleet_shared::evaluate::{Checked, Validator};
use evalfleet_shared::queue::{Message, QueueError, WorkQueue};
use evalfleet_shared::record::ResultRecord;
use evalfleet_shared::store::{ResultStore, StoreError};

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

/// Where the producer got to: records read and the dataset's bytes consumed (for progress).
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_read: AtomicU64,
    pub records: AtomicU64,
    pub published: AtomicU64,
    pub skipped: AtomicU64,
}

/// Opens a dataset for [`produce`], counting bytes into `progress`.
pub fn open_dataset(path: &Path, progress: Arc<Progress>) -> Result<DatasetReader, DatasetError> {
    let file = std::fs::File::open(path).map_err(|source| DatasetError::Open {
        path: path.to_owned(),
        source,
    })?;
    let counting = CountingRead {
        inner: file,
        progress,
    };
    DatasetReader::from_reader(path, Box::new(counting), DEFAULT_MAX_RECORD_BYTES)
}

/// Streams every record of `reader` into `queue` (valid) or `store` (skipped).
pub async fn produce<Q: WorkQueue, S: ResultStore>(
    reader: DatasetReader,
    mut validator: Validator,
    run_id: &str,
    queue: &Q,
    store: &S,
    progress: &Progress,
) -> Result<(), ProduceError> {
    let suite = validator.evaluator.suite.name.clone();
    // Records cross from the reader thread in batches: one hand-over per record would cost a
    // thread wake-up each.
    let (tx, rx) = async_channel::bounded::<Vec<Result<Checked, DatasetError>>>(4);
    let reader_thread = std::thread::Builder::new()
        .name("dataset-reader".into())
        .spawn(move || {
            let mut reader = reader.peekable();
            while reader.peek().is_some() {
                let items: Vec<_> = reader
                    .by_ref()
                    .take(BATCH)
                    .map(|raw| raw.map(|r| validator.check(r)))
                    .collect();
                if tx.send_blocking(items).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| ProduceError::Reader(e.to_string()))?;
    let mut batch = Vec::with_capacity(BATCH);
    let mut outcome = Ok(());
    'read: while let Ok(items) = rx.recv().await {
        for item in items {
            progress.records.fetch_add(1, Ordering::Relaxed);
            let checked = match item {
                Ok(c) => c,
                Err(DatasetError::Truncated { index, .. }) => Checked::Skipped {
                    ordinal: index,
                    position: Position::Index(index),
                    id: String::new(),
                    reason: "the JSON array ends before this element is closed".into(),
                },
                Err(e) => {
                    outcome = Err(e.into());
                    break 'read;
                }
            };
            match checked {
                Checked::Valid {
                    ordinal,
                    position,
                    value,
                } => {
                    batch.push(Message {
                        v: Message::VERSION,
                        run_id: run_id.to_owned(),
                        index: ordinal,
                        line: position.line(),
                        suite: suite.clone(),
                        example: value,
                    });
                    if batch.len() >= BATCH {
                        publish(queue, &mut batch, progress).await?;
                    }
                }
                Checked::Skipped {
                    ordinal,
                    position,
                    id,
                    reason,
                } => {
                    let rec =
                        ResultRecord::skipped(run_id, &suite, ordinal, position.line(), id, reason);
                    store.put(rec).await?;
                    progress.skipped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if rx.is_empty() {
            // The reader is slower than the workers: do not hold a part batch back.
            publish(queue, &mut batch, progress).await?;
        }
    }
    drop(rx);
    publish(queue, &mut batch, progress).await?;
    reader_thread
        .join()
        .map_err(|_| ProduceError::Reader("the reader thread panicked".into()))?;
    outcome
}

async fn publish<Q: WorkQueue>(
    queue: &Q,
    batch: &mut Vec<Message>,
    progress: &Progress,
) -> Result<(), QueueError> {
    if batch.is_empty() {
        return Ok(());
    }
    let n = batch.len() as u64;
    queue
        .publish(std::mem::replace(batch, Vec::with_capacity(BATCH)))
        .await?;
    progress.published.fetch_add(n, Ordering::Relaxed);
    Ok(())
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
