//! The batch client against `fake-provider` over real sockets: both APIs submit, report
//! progress, end and decode every result type; a batch is found again by its tag; errors and
//! expiries come back as per-request results, not as failures of the batch.

use std::collections::HashSet;
use std::time::Duration;

use evalfleet_config::{Api, JudgeConfig, ProviderConfig};
use evalfleet_fake_provider::{spawn, FakeProviderArgs, Verdict};
use evalfleet_worker::judge::prompt::Prompt;
use evalfleet_worker::judge::provider::batch::{
    encode_line, BatchBody, BatchItem, BatchState, BatchStatus, Shape, Sought,
};
use evalfleet_worker::judge::provider::{ChatRequest, ProviderClient};

async fn client(api: Api, args: FakeProviderArgs) -> (ProviderClient, tokio::task::JoinHandle<()>) {
    let (addr, handle) = spawn(FakeProviderArgs {
        port: 0,
        wrap_rate: 0.0,
        ..args
    })
    .await
    .unwrap();
    let name = match api {
        Api::Openai => "openai",
        Api::Anthropic => "anthropic",
    };
    let mut config: ProviderConfig = JudgeConfig::default().providers[name].clone();
    config.base_url = match api {
        Api::Openai => format!("http://{addr}/v1"),
        Api::Anthropic => format!("http://{addr}"),
    };
    (
        ProviderClient::new(&config, "test-key".into()).unwrap(),
        handle,
    )
}

fn prompts(n: usize) -> Vec<Prompt> {
    (0..n)
        .map(|i| Prompt {
            system: "Score the answer as an integer from 1 to 5.".into(),
            user: format!("answer {i}"),
        })
        .collect()
}

/// The batch body of these prompts, custom_ids `run-<i>`.
fn body(api: Api, prompts: &[Prompt]) -> BatchBody {
    let lines: Vec<Vec<u8>> = prompts
        .iter()
        .enumerate()
        .map(|(i, prompt)| {
            let request = ChatRequest {
                model: "judge-model",
                prompt,
                max_tokens: 100,
            };
            encode_line(api, &format!("run-{i}"), &request)
        })
        .collect();
    BatchBody::of(api, &lines).unwrap()
}

/// Every result of an ended batch, as downloaded.
async fn all_results(client: &ProviderClient, status: &BatchStatus) -> Vec<(String, BatchItem)> {
    let mut results = client.batch_results(status);
    let mut all = Vec::new();
    while let Some(result) = results.next().await.unwrap() {
        all.push(result);
    }
    all
}

async fn wait_ended(client: &ProviderClient, id: &str) -> BatchStatus {
    for _ in 0..200 {
        let status = client.batch_status(id).await.unwrap();
        if status.state != BatchState::Running {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("batch {id} never ended");
}

#[tokio::test]
async fn both_apis_round_trip_with_the_live_verdicts() {
    for api in [Api::Openai, Api::Anthropic] {
        let args = FakeProviderArgs {
            batch_processing_ms: 300,
            ..FakeProviderArgs::default()
        };
        let (client, _fake) = client(api, args).await;
        let prompts = prompts(12);
        let collected_ms = jiff::Timestamp::now().as_millisecond() as u64;
        let created = client
            .create_batch(&body(api, &prompts), "tag-1")
            .await
            .unwrap();
        assert_eq!(created.state, BatchState::Running, "{api:?}");
        assert_eq!(created.total, 12);
        let ended = wait_ended(&client, &created.id).await;
        assert_eq!(
            (&ended.state, ended.finished),
            (&BatchState::Ended, 12),
            "{api:?}"
        );
        let results = all_results(&client, &ended).await;
        assert_eq!(results.len(), 12);
        for (custom_id, item) in results {
            let i: usize = custom_id.trim_start_matches("run-").parse().unwrap();
            let prompt = format!("{}\n{}", prompts[i].system, prompts[i].user);
            let BatchItem::Reply { text, usage, .. } = item else {
                panic!("{api:?} {custom_id}: {item:?}");
            };
            assert_eq!(text, Verdict::for_prompt(7, &prompt).json(), "{api:?}");
            assert!(usage.input > 0 && usage.output > 0);
        }
        // Found again after a crash: OpenAI's by its tag, Anthropic's by its shape (created
        // after the questions were collected, with their number, not already recorded).
        let tag_only = |tag| Sought { tag, shape: None };
        let found = client.find_batch(&tag_only("tag-1"), 1_000).await.unwrap();
        match api {
            Api::Openai => assert_eq!(found.map(|s| s.id), Some(created.id.clone())),
            Api::Anthropic => assert_eq!(found, None),
        }
        assert_eq!(
            client.find_batch(&tag_only("tag-2"), 1_000).await.unwrap(),
            None
        );
        let known = HashSet::new();
        let shaped = |requests, known| Sought {
            tag: "tag-1",
            shape: Some(Shape {
                collected_ms: collected_ms - 1_000,
                requests,
                known,
            }),
        };
        let found = client.find_batch(&shaped(12, &known), 1_000).await.unwrap();
        assert_eq!(found.map(|s| s.id), Some(created.id.clone()), "{api:?}");
        if api == Api::Anthropic {
            let other_size = client.find_batch(&shaped(13, &known), 1_000).await.unwrap();
            assert_eq!(other_size, None);
            let recorded: HashSet<String> = [created.id.clone()].into();
            let recorded = client
                .find_batch(&shaped(12, &recorded), 1_000)
                .await
                .unwrap();
            assert_eq!(recorded, None);
        }
    }
}

#[tokio::test]
async fn per_request_failures_are_results_and_cancels_end_the_batch() {
    for api in [Api::Openai, Api::Anthropic] {
        let args = FakeProviderArgs {
            batch_processing_ms: 200,
            batch_error_rate: 0.3,
            batch_expiry_rate: 0.2,
            ..FakeProviderArgs::default()
        };
        let (client, _fake) = client(api, args).await;
        let created = client
            .create_batch(&body(api, &prompts(100)), "t")
            .await
            .unwrap();
        let ended = wait_ended(&client, &created.id).await;
        let results = all_results(&client, &ended).await;
        assert_eq!(results.len(), 100, "{api:?}");
        let count = |f: fn(&BatchItem) -> bool| results.iter().filter(|(_, i)| f(i)).count();
        let errored = count(|i| {
            matches!(
                i,
                BatchItem::Errored {
                    retryable: true,
                    ..
                }
            )
        });
        let expired = count(|i| *i == BatchItem::Expired);
        let replies = count(|i| matches!(i, BatchItem::Reply { .. }));
        assert!(
            errored > 10 && expired > 5,
            "{api:?}: {errored} errored, {expired} expired"
        );
        assert_eq!(errored + expired + replies, 100);

        let created = client
            .create_batch(&body(api, &prompts(5)), "c")
            .await
            .unwrap();
        let cancelling = client.cancel_batch(&created.id).await.unwrap();
        assert_eq!(cancelling.state, BatchState::Running);
        let ended = wait_ended(&client, &created.id).await;
        let results = all_results(&client, &ended).await;
        assert!(
            results.iter().all(|(_, i)| *i == BatchItem::Canceled),
            "{api:?}: {results:?}"
        );
    }
}

#[tokio::test]
async fn a_batch_over_the_limits_is_refused_or_fails_as_the_provider_says() {
    let args = FakeProviderArgs {
        batch_max_requests_openai: 3,
        batch_processing_ms: 100,
        ..FakeProviderArgs::default()
    };
    let (openai, _fake) = client(Api::Openai, args).await;
    let created = openai
        .create_batch(&body(Api::Openai, &prompts(4)), "big")
        .await
        .unwrap();
    let failed = wait_ended(&openai, &created.id).await;
    assert!(
        matches!(&failed.state, BatchState::Failed(why) if why.contains("too_many_requests")),
        "{failed:?}"
    );
    let args = FakeProviderArgs {
        batch_max_requests_anthropic: 3,
        ..FakeProviderArgs::default()
    };
    let (anthropic, _fake) = client(Api::Anthropic, args).await;
    let refused = anthropic
        .create_batch(&body(Api::Anthropic, &prompts(4)), "big")
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(400), "{refused}");
    assert!(!refused.retryable());
}
