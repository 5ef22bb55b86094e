//! Questions through a provider's batches, the same in `run` and in the fleet. A question
//! without a result in the [`BatchStore`] makes the example wait (`JudgeFailure::awaiting`:
//! the consumer parks it), and the example is evaluated again from the start once the batch
//! coordinator stored every result it waits for. Custom_ids are deterministic (example,
//! dimension, judge, ask, attempt), so that evaluation asks the same questions and finds their
//! results; what it asks next (a re-ask, a retry of an expired request) waits for a later batch
//! in turn.
//!
//! A result means what a live reply means: a reply is parsed like a live one; an errored,
//! expired or cancelled request goes into a later batch up to `judges.retry.max_attempts`, or
//! live at once with `judges.batch.fallback: live`.

use std::sync::atomic::Ordering;

use evalfleet_config::BatchFallback;
use evalfleet_contract::batch_store::{BatchStore, Question};

use super::{LiveJudge, ProviderRuntime, Reply, Tally};
use crate::judge::batch::stored;
use crate::judge::prompt::Prompt;
use crate::judge::provider::batch::{encode_line, BatchItem};
use crate::judge::{Deferred, JudgeFailure};

/// The custom_id under which the fleet keeps the reply of a live fallback, so that evaluating
/// the example again does not pay for it again.
fn live_id(id: &str) -> String {
    format!("{id}L")
}

impl LiveJudge {
    /// One question to a batch-mode provider; returns the reply text.
    pub(super) async fn call_batch(
        &self,
        rt: &ProviderRuntime,
        prompt: &Prompt,
        tally: &Tally,
        id: &str,
    ) -> Result<String, JudgeFailure> {
        let Some(store) = self.parking.as_deref() else {
            return Err(JudgeFailure::new(
                format!(
                    "judge provider '{}' is in batch mode, but this judge has no batch store",
                    rt.name
                ),
                false,
            ));
        };
        let request = rt.request(prompt);
        let api = rt.client.api();
        let mut last = String::new();
        for attempt in 0..self.config.retry.max_attempts.max(1) {
            let custom_id = format!("{id}{attempt}");
            tally.attempts.fetch_add(1, Ordering::Relaxed);
            let item = match stored(store, &tally.run, &custom_id).await {
                Some(item) => item,
                None => {
                    let line = encode_line(api, &custom_id, &request);
                    return Err(JudgeFailure::awaiting(vec![Question {
                        provider: rt.name.clone(),
                        custom_id,
                        line,
                    }]));
                }
            };
            match item {
                BatchItem::Reply { text, usage, .. } => {
                    let cost = self.accounting.cost(&rt.model, usage.input, usage.output)
                        * rt.batch_discount;
                    tally.add(usage, cost);
                    if let Ok(mut d) = tally.deferred.lock() {
                        d.push((rt.name.clone(), usage, cost));
                    }
                    return Ok(text);
                }
                BatchItem::Errored {
                    reason,
                    retryable: false,
                } => {
                    let reason = format!("{reason} (judge {}/{}, batch)", rt.name, rt.model);
                    return Err(JudgeFailure::new(reason, false));
                }
                BatchItem::Errored { reason, .. } => last = reason,
                BatchItem::Expired => last = "expired in its batch".into(),
                BatchItem::Canceled => last = "cancelled with its batch".into(),
            }
            if self.config.batch.fallback == BatchFallback::Live {
                return self.fallback_live(store, rt, prompt, tally, id).await;
            }
        }
        let reason = format!(
            "{last} (judge {}/{}, batch, after {} attempts)",
            rt.name, rt.model, self.config.retry.max_attempts
        );
        Err(JudgeFailure::new(reason, false))
    }

    /// A live call for a question its batches did not answer. Its reply is kept with the batch
    /// results (billed once, when it was made), for the example's next evaluation.
    async fn fallback_live(
        &self,
        store: &dyn BatchStore,
        rt: &ProviderRuntime,
        prompt: &Prompt,
        tally: &Tally,
        id: &str,
    ) -> Result<String, JudgeFailure> {
        let kept = live_id(id);
        if let Some(BatchItem::Reply { text, usage, .. }) = stored(store, &tally.run, &kept).await {
            let cost = self.accounting.cost(&rt.model, usage.input, usage.output);
            tally.add(usage, cost);
            return Ok(text);
        }
        let Reply { text, usage, .. } = self.call_live(rt, prompt, tally).await?;
        let item = BatchItem::Reply {
            text: text.clone(),
            usage,
            model: None,
        };
        if let Ok(json) = serde_json::to_string(&item) {
            if let Err(e) = store.put_answers(&tally.run, &[(kept, json)]).await {
                tracing::warn!(error = %e, "cannot keep a live fallback's reply; a new evaluation of the example would pay for it again");
            }
        }
        Ok(text)
    }

    /// Charges an example's batch replies to the run and the metrics: it is complete.
    pub(crate) fn charge_deferred(&self, deferred: Deferred) {
        for (name, usage, cost) in deferred.0 {
            if let Some(rt) = self.providers.get(&name) {
                self.charge(rt, usage, cost);
            }
        }
    }
}
