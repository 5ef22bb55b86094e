//! The Redis judge cache against a real Redis: verdicts round-trip, expire after their TTL, and
//! an unreadable entry reads as a miss.

#[path = "redis_support.rs"]
mod support;

use std::time::Duration;

use evalfleet_contract::judge_cache::{CachedVerdict, JudgeCache};
use evalfleet_fleet::redis::RedisJudgeCache;
use support::{raw, store};

#[tokio::test]
async fn verdicts_round_trip_and_expire() {
    let (store, cleanup) = store().await;
    let cache = RedisJudgeCache::new(&store, Duration::from_secs(60));
    let v = CachedVerdict {
        score: 4,
        reasoning: "on topic".into(),
    };
    assert_eq!(cache.get("openai:gpt-4o:abc").await, None);
    cache.put("openai:gpt-4o:abc", &v).await;
    assert_eq!(cache.get("openai:gpt-4o:abc").await, Some(v.clone()));
    let mut conn = raw();
    let key = format!("{}cache:judge:openai:gpt-4o:abc", cleanup.0);
    let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut conn).unwrap();
    assert!(ttl > 55_000 && ttl <= 60_000, "{ttl}");

    let short = RedisJudgeCache::new(&store, Duration::from_secs(1));
    short.put("short", &v).await;
    assert_eq!(short.get("short").await, Some(v));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(short.get("short").await, None, "expired");

    let _: () = redis::cmd("SET")
        .arg(format!("{}cache:judge:bad", cleanup.0))
        .arg("{not a verdict")
        .query(&mut conn)
        .unwrap();
    assert_eq!(cache.get("bad").await, None, "unreadable = miss");
}
