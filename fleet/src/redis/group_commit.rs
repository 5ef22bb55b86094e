//! Group commit for result writes. Every task of a worker stores its result through one writer,
//! which sends whatever queued up while its previous write was in flight as one script call per
//! run. Under load that is one Redis round trip (and one Lua call) for tens of results instead
//! of one each, which saves CPU in the worker and in Redis; when results trickle in, each goes
//! alone and at once, so nothing ever waits for a batch to fill.
//!
//! Each result keeps its own answer (stored or already stored), and a failed call fails every
//! result in it with the same transient-or-permanent verdict, so the consumer loop settles each
//! message exactly as it did with one call per result.
//!
//! The group commit knows how to batch, not how to write: the store gives it a [`WriteResults`]
//! (its connection and script), so the imports go one way, from the store to here.

use std::future::Future;

use evalfleet_contract::store::{PutOutcome, StoreError};
use evalfleet_model::record::ResultRecord;
use tokio::sync::{mpsc, oneshot};

use super::error::{store_error, RedisError};

/// Results sent in one script call at most (a few hundred KiB of JSON).
const MAX_BATCH: usize = 256;
/// Results queued for the writer before `put` waits.
const QUEUE: usize = 4096;

type Reply = oneshot::Sender<Result<PutOutcome, StoreError>>;

/// One script call storing results of one run: one outcome per record, in order. The writer
/// task owns it, and ends when the last [`GroupCommit`] handle is dropped.
pub(crate) trait WriteResults: Send + Sync + 'static {
    fn put_records(
        &self,
        run: &str,
        records: &[ResultRecord],
    ) -> impl Future<Output = Result<Vec<PutOutcome>, RedisError>> + Send;
}

/// The handle tasks store results through; the writer task ends when every handle is dropped.
pub(crate) struct GroupCommit {
    tx: mpsc::Sender<(ResultRecord, Reply)>,
}

impl GroupCommit {
    /// Starts the writer on the current Tokio runtime.
    pub(crate) fn start(writer: impl WriteResults) -> Self {
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

async fn write_batches(writer: impl WriteResults, mut rx: mpsc::Receiver<(ResultRecord, Reply)>) {
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// One script call: the run and the indices of its results.
    type Call = (String, Vec<u64>);

    /// Records the calls it gets; fails every call for run `bad`.
    #[derive(Clone, Default)]
    struct Calls(Arc<Mutex<Vec<Call>>>);

    impl WriteResults for Calls {
        async fn put_records(
            &self,
            run: &str,
            records: &[ResultRecord],
        ) -> Result<Vec<PutOutcome>, RedisError> {
            let indices = records.iter().map(|r| r.index).collect();
            self.0.lock().unwrap().push((run.to_owned(), indices));
            if run == "bad" {
                return Err(RedisError::Data {
                    op: "put",
                    key: "k".into(),
                    message: "refused".into(),
                });
            }
            Ok(records
                .iter()
                .map(|r| {
                    if r.index % 2 == 0 {
                        PutOutcome::Stored
                    } else {
                        PutOutcome::AlreadyStored
                    }
                })
                .collect())
        }
    }

    fn record(run: &str, index: u64) -> ResultRecord {
        ResultRecord::skipped(run, "s", index, None, String::new(), "r".into())
    }

    #[tokio::test]
    async fn each_result_gets_its_own_answer_and_runs_are_written_apart() {
        let calls = Calls::default();
        let commit = GroupCommit::start(calls.clone());
        let (a0, a1, b2, bad3) = tokio::join!(
            commit.put(record("a", 0)),
            commit.put(record("a", 1)),
            commit.put(record("b", 2)),
            commit.put(record("bad", 3)),
        );
        assert_eq!(a0.unwrap(), PutOutcome::Stored);
        assert_eq!(a1.unwrap(), PutOutcome::AlreadyStored);
        assert_eq!(b2.unwrap(), PutOutcome::Stored);
        let err = bad3.unwrap_err();
        assert!(!err.is_transient(), "{err}");
        let calls = calls.0.lock().unwrap().clone();
        let written: usize = calls.iter().map(|(_, ix)| ix.len()).sum();
        assert_eq!(written, 4, "every result written once: {calls:?}");
        assert!(
            calls
                .iter()
                .all(|(run, ix)| ix.iter().all(|&i| match run.as_str() {
                    "a" => i < 2,
                    "b" => i == 2,
                    _ => i == 3,
                })),
            "one run per call: {calls:?}"
        );
    }
}
