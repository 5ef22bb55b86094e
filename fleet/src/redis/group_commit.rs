//! Group commit for result writes. Every task of a worker stores its result through one writer,
//! which sends whatever queued up while its previous write was in flight as one script call per
//! run. Under load that is one Redis round trip (and one Lua call) for tens of results instead
//! of one each, which saves CPU in the worker and in Redis; when results trickle in, each goes
//! alone and at once, so nothing ever waits for a batch to fill.
//!
//! Each result keeps its own answer (stored or already stored), and a failed call fails every
//! result in it with the same transient-or-permanent verdict, so the consumer loop settles each
//! message exactly as it did with one call per result.

use evalfleet_contract::store::{PutOutcome, StoreError};
use evalfleet_model::record::ResultRecord;
use tokio::sync::{mpsc, oneshot};

use super::error::store_error;
use super::store::Writer;

/// Results sent in one script call at most (a few hundred KiB of JSON).
const MAX_BATCH: usize = 256;
/// Results queued for the writer before `put` waits.
const QUEUE: usize = 4096;

type Reply = oneshot::Sender<Result<PutOutcome, StoreError>>;

/// The handle tasks store results through; the writer task ends when every handle is dropped.
pub(crate) struct GroupCommit {
    tx: mpsc::Sender<(ResultRecord, Reply)>,
}

impl GroupCommit {
    /// Starts the writer on the current Tokio runtime.
    pub(crate) fn start(writer: Writer) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(write_batches(writer, rx));
        GroupCommit { tx }
    }

    pub(crate) async fn put(&self, rec: ResultRecord) -> Result<PutOutcome, StoreError> {
        let (reply, answer) = oneshot::channel();
        let gone = || StoreError::Unavailable("the result writer stopped".into());
        self.tx.send((rec, reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

async fn write_batches(writer: Writer, mut rx: mpsc::Receiver<(ResultRecord, Reply)>) {
    let mut queued = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut queued, MAX_BATCH).await > 0 {
        // One call per run, results in the order they came.
        while !queued.is_empty() {
            let run = queued[0].0.run_id.clone();
            let (batch, rest): (Vec<_>, Vec<_>) =
                queued.drain(..).partition(|(rec, _)| rec.run_id == run);
            queued = rest;
            let (records, replies): (Vec<ResultRecord>, Vec<Reply>) = batch.into_iter().unzip();
            match writer.put_records(&run, &records).await {
                Ok(outcomes) => {
                    for (reply, outcome) in replies.into_iter().zip(outcomes) {
                        let _ = reply.send(Ok(outcome));
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(store_error(&e)));
                    }
                }
            }
        }
    }
}
