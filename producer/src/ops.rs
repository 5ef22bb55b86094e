//! What `cancel` and `retry` may do to a run, decided here and nowhere else, over the registry
//! and queue contracts (so the rules are tested without Redis or RabbitMQ).
//!
//! - **cancel**: a run being submitted or running becomes `cancelled` (workers then drop its
//!   remaining messages without judging them). A complete run cannot be cancelled; cancelling a
//!   cancelled run changes nothing.
//! - **retry**: the messages kept for the run's failed examples are taken (their failed results
//!   and counts go with them) and published again; a run with any becomes `running` again
//!   (a finished run is reopened, and its report is written anew when they are done).

use evalfleet_contract::queue::{Message, QueueError, WorkQueue};
use evalfleet_contract::registry::{RunMeta, RunRegistry, RunStatus};
use evalfleet_contract::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error("no run '{0}'")]
    UnknownRun(String),
    #[error("run '{0}' is already complete")]
    AlreadyComplete(String),
    #[error("run registry: {0}")]
    Registry(#[from] StoreError),
    #[error("publishing failed: {0}")]
    Queue(#[from] QueueError),
}

/// The run's entry, or the error naming it.
async fn registered<R: RunRegistry>(registry: &R, run: &str) -> Result<RunMeta, OpError> {
    registry
        .run(run)
        .await?
        .ok_or_else(|| OpError::UnknownRun(run.to_owned()))
}

/// Cancels `run`; its entry as it was before.
pub async fn cancel<R: RunRegistry>(registry: &R, run: &str) -> Result<RunMeta, OpError> {
    let meta = registered(registry, run).await?;
    match meta.status {
        RunStatus::Complete => Err(OpError::AlreadyComplete(run.to_owned())),
        RunStatus::Cancelled => Ok(meta),
        RunStatus::Submitting | RunStatus::Running => {
            registry.set_status(run, RunStatus::Cancelled).await?;
            Ok(meta)
        }
    }
}

/// Re-enqueues the run's failed examples; how many.
pub async fn retry<R, Q>(registry: &R, queue: &Q, run: &str) -> Result<u64, OpError>
where
    R: RunRegistry,
    Q: WorkQueue,
{
    registered(registry, run).await?;
    let messages: Vec<Message> = registry
        .take_failed(run)
        .await?
        .iter()
        .filter_map(|json| match serde_json::from_str(json) {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::warn!(run, error = %e, "a kept message does not parse; not retried");
                None
            }
        })
        .collect();
    let n = messages.len() as u64;
    if n > 0 {
        registry.set_status(run, RunStatus::Running).await?;
        queue.publish(messages).await?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use evalfleet_contract::conformance::{message, run_meta, run_spec};
    use evalfleet_contract::queue::{Delivery, InProcessQueue};
    use evalfleet_contract::registry::{InProcessRegistry, Verdict};

    use super::*;

    async fn registry_with(run: &str, status: RunStatus) -> InProcessRegistry {
        let registry = InProcessRegistry::default();
        registry
            .register(&run_meta(run), &run_spec())
            .await
            .unwrap();
        match status {
            RunStatus::Complete => {
                let verdict = Verdict {
                    gates_passed: true,
                    summary_md: "",
                    report_dir: "",
                };
                registry.finish(run, &verdict).await.unwrap();
            }
            other => registry.set_status(run, other).await.unwrap(),
        }
        registry
    }

    async fn status(registry: &InProcessRegistry, run: &str) -> RunStatus {
        registry.run(run).await.unwrap().unwrap().status
    }

    #[tokio::test]
    async fn submitting_and_running_runs_are_cancelled() {
        for from in [RunStatus::Submitting, RunStatus::Running] {
            let registry = registry_with("r", from).await;
            let before = cancel(&registry, "r").await.unwrap();
            assert_eq!(before.status, from);
            assert_eq!(status(&registry, "r").await, RunStatus::Cancelled);
        }
    }

    #[tokio::test]
    async fn a_complete_run_is_not_cancelled_and_a_cancelled_one_stays_so() {
        let registry = registry_with("r", RunStatus::Complete).await;
        assert!(matches!(
            cancel(&registry, "r").await,
            Err(OpError::AlreadyComplete(_))
        ));
        assert_eq!(status(&registry, "r").await, RunStatus::Complete);
        let registry = registry_with("c", RunStatus::Cancelled).await;
        cancel(&registry, "c").await.unwrap();
        assert_eq!(status(&registry, "c").await, RunStatus::Cancelled);
    }

    #[tokio::test]
    async fn unknown_runs_are_refused_by_name() {
        let registry = InProcessRegistry::default();
        let queue = InProcessQueue::new(8, 1);
        let e = cancel(&registry, "ghost").await.unwrap_err();
        assert_eq!(e.to_string(), "no run 'ghost'");
        assert!(matches!(
            retry(&registry, &queue, "ghost").await,
            Err(OpError::UnknownRun(_))
        ));
    }

    #[tokio::test]
    async fn retry_republishes_the_failed_examples_once_and_reopens_the_run() {
        let registry = registry_with("r", RunStatus::Complete).await;
        let queue = InProcessQueue::new(8, 1);
        for i in [3, 1] {
            let json = serde_json::to_string(&message("r", i)).unwrap();
            registry.keep_failed_message("r", i, &json).await.unwrap();
        }
        registry
            .keep_failed_message("r", 9, "not json")
            .await
            .unwrap();
        assert_eq!(retry(&registry, &queue, "r").await.unwrap(), 2);
        assert_eq!(status(&registry, "r").await, RunStatus::Running);
        queue.finish_publishing();
        let mut indices = Vec::new();
        while let Some(d) = queue.next().await.unwrap() {
            indices.push(d.message().index);
            d.ack().await.unwrap();
        }
        assert_eq!(indices, [1, 3]);
        assert_eq!(
            retry(&registry, &queue, "r").await.unwrap(),
            0,
            "taken once"
        );
    }

    #[tokio::test]
    async fn retry_with_nothing_failed_leaves_the_run_as_it_is() {
        let registry = registry_with("r", RunStatus::Complete).await;
        let queue = InProcessQueue::new(8, 1);
        assert_eq!(retry(&registry, &queue, "r").await.unwrap(), 0);
        assert_eq!(status(&registry, "r").await, RunStatus::Complete);
    }
}
