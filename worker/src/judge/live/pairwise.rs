//! A pairwise dimension asked of one live judge: two questions, the judged answer in position
//! A and then in position B, asked at once, each through the cache, the budget and the call
//! (live or batched: two batch lines, `…-a`/`…s-a` custom_ids), each re-asked once on an
//! unusable reply. Either question unscored makes the dimension unscored. The two verdicts
//! then make the item's win, tie or loss ([`evalfleet_model::pairwise`]).

use evalfleet_model::pairwise::{PairwiseResult, Pick, Preference};
use evalfleet_model::record::{JudgeId, Score};
use evalfleet_suites::evaluate::{pairwise_score, JudgeTask};

use super::panel::Asked;
use super::{LiveJudge, ProviderRuntime, Tally};
use crate::judge::cache::CachedVerdict;
use crate::judge::pairwise::{self, PairVerdict, PairwiseProblem};
use crate::judge::prompt::{self, Prompt};
use crate::judge::JudgeFailure;

/// One of the two questions' outcome.
enum PickAsked {
    Picked(PairVerdict, bool),
    Unscored(String),
}

/// A pick in the judge cache, whose entries hold an integer: 0 tie, 1 A, 2 B. The key is the
/// pairwise prompt's hash, which no scored question shares.
fn encode(pick: Pick) -> i64 {
    match pick {
        Pick::Tie => 0,
        Pick::A => 1,
        Pick::B => 2,
    }
}

fn decode(n: i64) -> Option<Pick> {
    match n {
        0 => Some(Pick::Tie),
        1 => Some(Pick::A),
        2 => Some(Pick::B),
        _ => None,
    }
}

impl LiveJudge {
    /// Both questions of a pairwise task; `question` names it (example, dimension, judge).
    pub(super) async fn ask_pairwise(
        &self,
        rt: &ProviderRuntime,
        task: &JudgeTask<'_>,
        tally: &Tally,
        question: &str,
    ) -> Result<Asked, JudgeFailure> {
        let [first, swapped] = match pairwise::prompts(task) {
            Ok(prompts) => prompts,
            Err(PairwiseProblem::Missing(reason)) => return Ok(Asked::Unscored(reason)),
            Err(PairwiseProblem::Broken(reason)) => return Err(JudgeFailure::new(reason, false)),
        };
        let (one, two) = futures_util::future::join(
            self.ask_pick(rt, &first, tally, question),
            self.ask_pick(rt, &swapped, tally, &format!("{question}s")),
        )
        .await;
        let (one, two) = match (one, two) {
            (Ok(one), Ok(two)) => (one, two),
            // Both waiting for batches: the example waits for both.
            (Err(mut a), Err(b)) if !a.awaiting.is_empty() && !b.awaiting.is_empty() => {
                a.awaiting.extend(b.awaiting);
                return Err(a);
            }
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => return Err(e),
            (Err(a), Err(b)) => return Err(if a.awaiting.is_empty() { a } else { b }),
        };
        Ok(match (one, two) {
            (PickAsked::Picked(a, a_cached), PickAsked::Picked(b, b_cached)) => Asked::Pairwise {
                first: a.pick,
                swapped: b.pick,
                reasoning: format!(
                    "judged answer as A: {} | as B: {}",
                    a.reasoning, b.reasoning
                ),
                cached: a_cached && b_cached,
            },
            (PickAsked::Unscored(reason), _) | (_, PickAsked::Unscored(reason)) => {
                Asked::Unscored(reason)
            }
        })
    }

    /// One of the two questions: the cache, the call, a re-ask when the reply is unusable.
    async fn ask_pick(
        &self,
        rt: &ProviderRuntime,
        prompt: &Prompt,
        tally: &Tally,
        question: &str,
    ) -> Result<PickAsked, JudgeFailure> {
        let key = self
            .cache
            .enabled()
            .then(|| format!("{}:{}", rt.name, prompt::prompt_hash(&rt.model, prompt)));
        if let Some(key) = &key {
            if let Some(hit) = self.cache.get(key).await {
                if let Some(pick) = decode(hit.score) {
                    let verdict = PairVerdict {
                        pick,
                        reasoning: hit.reasoning,
                    };
                    return Ok(PickAsked::Picked(verdict, true));
                }
            }
        }
        let reply = self
            .call(rt, prompt, tally, &format!("{question}-a"))
            .await?;
        let verdict = match pairwise::parse_pick(&reply) {
            Ok(v) => v,
            Err(problem) => {
                let again = pairwise::reask(prompt, &reply, &problem);
                let second = self
                    .call(rt, &again, tally, &format!("{question}-r"))
                    .await?;
                match pairwise::parse_pick(&second) {
                    Ok(v) => v,
                    Err(problem) => {
                        return Ok(PickAsked::Unscored(format!(
                            "invalid judge reply after a re-ask: {problem}"
                        )))
                    }
                }
            }
        };
        if let Some(key) = &key {
            let cached = CachedVerdict {
                score: encode(verdict.pick),
                reasoning: verdict.reasoning.clone(),
            };
            self.cache.put(key, &cached).await;
        }
        Ok(PickAsked::Picked(verdict, false))
    }
}

/// One judge's pair: its result, reasoning and whether both answers came from the cache; or
/// why it stayed unscored.
type JudgeResult = Result<(PairwiseResult, String, bool), String>;

/// A pairwise dimension's score from its judges' answers: one judge's win, tie or loss; a
/// panel's from the mean of its judges' scores (above ½ a win, below a loss), following the
/// position when any judge's pair did. No panel agreement is computed for it (there is no
/// rubric scale to agree on); each judge's result is in the reasoning.
pub(super) fn combine(verdicts: Vec<(JudgeId, Asked)>) -> Score {
    let results: Vec<(JudgeId, JudgeResult)> = verdicts
        .into_iter()
        .map(|(judge, asked)| {
            let r = match asked {
                Asked::Pairwise {
                    first,
                    swapped,
                    reasoning,
                    cached,
                } => Ok((PairwiseResult::combine(first, swapped), reasoning, cached)),
                Asked::Unscored(reason) => Err(reason),
                Asked::Scored { .. } => Err("a scored reply to a pairwise question".into()),
            };
            (judge, r)
        })
        .collect();
    if results.len() == 1 {
        let (judge, r) = results.into_iter().next().expect("one verdict");
        return match r {
            Ok((result, reasoning, cached)) => {
                let [first, swapped] = result.verdicts;
                Score {
                    cached,
                    ..pairwise_score(first, swapped, reasoning, judge)
                }
            }
            Err(reason) => Score::unscored(judge, reason),
        };
    }
    let ensemble = JudgeId {
        provider: "ensemble".into(),
        model: results
            .iter()
            .map(|(j, _)| format!("{}/{}", j.provider, j.model))
            .collect::<Vec<_>>()
            .join("+"),
    };
    let scored: Vec<&PairwiseResult> = results
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().map(|(p, _, _)| p))
        .collect();
    let Some(first) = scored.first() else {
        return Score::unscored(ensemble, "every judge of the panel stayed unscored".into());
    };
    let mean = scored.iter().map(|p| p.preference.score()).sum::<f64>() / scored.len() as f64;
    let reasoning = results
        .iter()
        .map(|(j, r)| match r {
            Ok((p, _, _)) => format!(
                "{}/{}: {} ({}, {})",
                j.provider,
                j.model,
                p.preference.as_str(),
                p.verdicts[0].as_str(),
                p.verdicts[1].as_str()
            ),
            Err(reason) => format!("{}/{}: unscored ({reason})", j.provider, j.model),
        })
        .collect::<Vec<_>>()
        .join("; ");
    let result = PairwiseResult {
        preference: Preference::of_mean(mean),
        verdicts: first.verdicts,
        followed_position: scored.iter().any(|p| p.followed_position),
    };
    Score {
        pairwise: Some(result),
        cached: results
            .iter()
            .all(|(_, r)| r.as_ref().is_ok_and(|(_, _, cached)| *cached)),
        ..Score::scored(mean, reasoning, ensemble)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(name: &str) -> JudgeId {
        JudgeId {
            provider: name.into(),
            model: "m".into(),
        }
    }

    fn pair(first: Pick, swapped: Pick) -> Asked {
        Asked::Pairwise {
            first,
            swapped,
            reasoning: "r".into(),
            cached: false,
        }
    }

    #[test]
    fn one_judge_and_a_panel() {
        let one = combine(vec![(judge("openai"), pair(Pick::B, Pick::A))]);
        assert_eq!(one.score, Some(0.0));
        assert_eq!(one.pairwise.unwrap().preference, Preference::Loss);
        let flip = combine(vec![(judge("openai"), pair(Pick::A, Pick::A))]);
        assert_eq!(flip.score, Some(0.5));
        assert!(flip.pairwise.unwrap().followed_position);
        let unscored = combine(vec![(judge("openai"), Asked::Unscored("bad".into()))]);
        assert_eq!(unscored.unscored.as_deref(), Some("bad"));
        let panel = combine(vec![
            (judge("openai"), pair(Pick::A, Pick::B)),
            (judge("anthropic"), pair(Pick::A, Pick::A)),
        ]);
        assert_eq!(panel.score, Some(0.75));
        let result = panel.pairwise.unwrap();
        assert_eq!(result.preference, Preference::Win);
        assert!(result.followed_position);
        assert_eq!(panel.judge.provider, "ensemble");
        assert!(panel.panel.is_empty());
    }

    #[test]
    fn picks_round_trip_through_the_cache_encoding() {
        for pick in [Pick::A, Pick::B, Pick::Tie] {
            assert_eq!(decode(encode(pick)), Some(pick));
        }
        assert_eq!(decode(5), None);
    }
}
