//! Judging one example: each of its judge dimensions asked of each of its judges (one, or the
//! panel), every question through the cache, then the budget and the call, and a reply that
//! does not parse re-asked once before the dimension is `unscored`.

use evalfleet_model::record::{JudgeId, Scores};
use evalfleet_suites::evaluate::{Example, JudgeTask};

use super::panel::{combine, Asked};
use super::{LiveJudge, ProviderRuntime, Tally};
use crate::judge::batch::ExampleAt;
use crate::judge::cache::CachedVerdict;
use crate::judge::prompt::{self, Prompt};
use crate::judge::reply::parse_verdict;
use crate::judge::{Deferred, JudgeFailure, JudgeOutcome};

impl LiveJudge {
    /// Scores every task of one example (its evaluation `at`) with its judges
    /// (one, or the configured panel). In fleet batch mode, an example with questions still
    /// out fails with only [`JudgeFailure::awaiting`] set: it is parked, not failed.
    pub async fn judge(
        &self,
        example: &Example,
        tasks: &[JudgeTask<'_>],
        at: ExampleAt<'_>,
    ) -> Result<JudgeOutcome, JudgeFailure> {
        let tally = Tally {
            run: at.run_id.to_owned(),
            key: at.key(),
            ..Tally::default()
        };
        let result = self.judge_all(example, tasks, &tally).await;
        let deferred = Deferred(tally.deferred.into_inner().unwrap_or_default());
        let usage = tally.usage.into_inner().unwrap_or_default();
        let attempts = tally.attempts.into_inner();
        match result {
            Ok(scores) => Ok(JudgeOutcome {
                scores,
                usage,
                attempts,
                deferred,
            }),
            Err(mut failure) => {
                failure.attempts = attempts;
                failure.usage = usage;
                failure.deferred = deferred;
                failure.last_status = tally
                    .last_status
                    .into_inner()
                    .unwrap_or(None)
                    .or(failure.last_status);
                Err(failure)
            }
        }
    }

    async fn judge_all(
        &self,
        example: &Example,
        tasks: &[JudgeTask<'_>],
        tally: &Tally,
    ) -> Result<Scores, JudgeFailure> {
        let judges = self
            .config
            .judges_for(example.response_provider())
            .map_err(|reason| JudgeFailure::new(reason, false))?;
        // Every question of the example at once (each dimension of each judge): an example
        // takes one judge call's time, not one per dimension. Each question keeps its own tally,
        // added to the example's in question order, so its tokens and cost sum exactly as if
        // the questions had been asked one after another.
        let questions = tasks.iter().enumerate().flat_map(|(t, task)| {
            judges
                .iter()
                .enumerate()
                .map(move |(j, name)| (t, task, j, *name))
        });
        let asked =
            futures_util::future::join_all(questions.map(|(t, task, j, name)| async move {
                let own = tally.child();
                let rt = match self.providers.get(name) {
                    Some(rt) => rt,
                    None => {
                        let reason = format!("judge provider '{name}' is not configured");
                        return (t, own, Err(JudgeFailure::new(reason, false)));
                    }
                };
                let question = format!("{}-{t}-{j}", tally.key);
                let asked = if task.is_pairwise() {
                    self.ask_pairwise(rt, task, &own, &question).await
                } else {
                    self.ask(rt, task, &own, &question).await
                };
                let asked = asked.map(|asked| {
                    let judge = JudgeId {
                        provider: rt.name.clone(),
                        model: rt.model.clone(),
                    };
                    (judge, asked)
                });
                (t, own, asked)
            }))
            .await;
        let mut verdicts: Vec<Vec<(JudgeId, Asked)>> = tasks.iter().map(|_| Vec::new()).collect();
        // Questions still waiting for a batch: the others were asked all the same, so that an
        // example's first questions all go into the same round of batches.
        let mut awaiting = Vec::new();
        let mut failed = None;
        for (t, own, asked) in asked {
            tally.absorb(own);
            match asked {
                Ok(verdict) => verdicts[t].push(verdict),
                Err(failure) if !failure.awaiting.is_empty() => awaiting.extend(failure.awaiting),
                Err(failure) => {
                    failed.get_or_insert(failure);
                }
            }
        }
        if let Some(failure) = failed {
            return Err(failure);
        }
        if !awaiting.is_empty() {
            return Err(JudgeFailure::awaiting(awaiting));
        }
        Ok(Scores(
            tasks
                .iter()
                .zip(verdicts)
                .map(|(task, verdicts)| {
                    let score = if task.is_pairwise() {
                        super::pairwise::combine(verdicts)
                    } else {
                        combine(task.dimension, verdicts)
                    };
                    (task.dimension.name.clone(), score)
                })
                .collect(),
        ))
    }

    async fn ask(
        &self,
        rt: &ProviderRuntime,
        task: &JudgeTask<'_>,
        tally: &Tally,
        question: &str,
    ) -> Result<Asked, JudgeFailure> {
        let dim = task.dimension;
        let prompt = prompt::for_task(task).map_err(|reason| JudgeFailure::new(reason, false))?;
        let key = self
            .cache
            .enabled()
            .then(|| format!("{}:{}", rt.name, prompt::prompt_hash(&rt.model, &prompt)));
        if let Some(key) = &key {
            if let Some(hit) = self.cache.get(key).await {
                return Ok(Asked::Scored {
                    score: hit.score,
                    reasoning: hit.reasoning,
                    cached: true,
                });
            }
        }
        let first = self
            .call(rt, &prompt, tally, &format!("{question}-a"))
            .await?;
        let verdict = match parse_verdict(&first, dim.min, dim.max) {
            Ok(v) => v,
            Err(problem) => {
                let again = prompt::reask(&prompt, &first, &problem);
                let second = self
                    .call(rt, &again, tally, &format!("{question}-r"))
                    .await?;
                match parse_verdict(&second, dim.min, dim.max) {
                    Ok(v) => v,
                    Err(problem) => {
                        return Ok(Asked::Unscored(format!(
                            "invalid judge reply after a re-ask: {problem}"
                        )))
                    }
                }
            }
        };
        let cached = CachedVerdict {
            score: verdict.score,
            reasoning: verdict.reasoning,
        };
        if let Some(key) = &key {
            self.cache.put(key, &cached).await;
        }
        Ok(Asked::Scored {
            score: cached.score,
            reasoning: cached.reasoning,
            cached: false,
        })
    }

    /// One judge question, live or through the provider's batches; returns the reply text.
    /// `id` names the question (the example, dimension, judge, and first ask or re-ask).
    pub(super) async fn call(
        &self,
        rt: &ProviderRuntime,
        prompt: &Prompt,
        tally: &Tally,
        id: &str,
    ) -> Result<String, JudgeFailure> {
        if let Some(reason) = self.stopped() {
            return Err(JudgeFailure::new(reason.to_owned(), true));
        }
        if !self.accounting.within_budget() {
            return Err(JudgeFailure::new("budget exhausted".into(), false));
        }
        if rt.batch.is_some() {
            self.call_batch(rt, prompt, tally, id).await
        } else {
            self.call_live(rt, prompt, tally).await.map(|r| r.text)
        }
    }
}
