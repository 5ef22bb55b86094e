//! A rate limit shared by the whole fleet (docs/DESIGN.md §2.5): N workers together stay under one
//! provider quota, and a 429 seen by one worker slows all of them down.
//!
//! The quota is a GCRA in Redis (`lua/gcra.lua`, timed by Redis's own clock). A worker takes a
//! lease of a few units per round trip and spends it locally; what Redis granted is the upper
//! bound on what the fleet spends, whether or not every leased unit is used. A 429 sets a
//! shared pause key (`lua/pause.lua`): the script grants nothing while it lasts, and a worker
//! spending a local lease looks at the key at least every [`PAUSE_POLL`].

use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use redis::Script;

use super::error::{cmd_err, RedisError};
use super::store::RedisStore;

static GCRA: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/gcra.lua")));
static PAUSE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/pause.lua")));

/// How stale a worker's view of the fleet pause may be while it spends a local lease.
pub const PAUSE_POLL: Duration = Duration::from_millis(100);

pub struct FleetLimiter {
    conn: ConnectionManager,
    key: String,
    pause_key: String,
    /// µs between two units at the quota's rate; None = no rate (only pauses apply).
    interval_us: Option<f64>,
    burst: u64,
    lease: u64,
    /// Units leased and not yet spent. Held across the wait, so callers queue in order.
    balance: tokio::sync::Mutex<u64>,
    pause: Mutex<PauseView>,
}

#[derive(Default)]
struct PauseView {
    until: Option<Instant>,
    checked: Option<Instant>,
}

impl FleetLimiter {
    /// `per_minute` units (requests or tokens) for `key` (e.g. "openai:rpm"), shared by every
    /// process using the same key and prefix; burst = max(1, per_minute/60); leases of up to
    /// `lease` units (at most the burst) are taken from Redis and spent locally. `per_minute`
    /// 0 means no rate limit: only fleet pauses apply.
    pub fn new(store: &RedisStore, key: &str, per_minute: u32, lease: u32) -> Self {
        let burst = u64::from((per_minute / 60).max(1));
        FleetLimiter {
            conn: store.conn.clone(),
            key: store.keys.rate(key),
            pause_key: store.keys.rate_pause(key),
            interval_us: (per_minute > 0).then(|| 60e6 / f64::from(per_minute)),
            burst,
            lease: u64::from(lease).clamp(1, burst),
            balance: tokio::sync::Mutex::new(0),
            pause: Mutex::new(PauseView::default()),
        }
    }

    /// Waits until `units` are available to this worker (sleeping for the wait the script
    /// returns, and through any fleet pause), then spends them. Requests larger than the burst
    /// are served by accumulating several leases.
    pub async fn acquire(&self, units: u32) -> Result<(), RedisError> {
        let units = u64::from(units);
        let mut balance = self.balance.lock().await;
        loop {
            if let Some(wait) = self.paused_for().await? {
                tokio::time::sleep(wait).await;
                continue;
            }
            let Some(interval) = self.interval_us else {
                return Ok(());
            };
            if *balance >= units {
                *balance -= units;
                return Ok(());
            }
            let need = units - *balance;
            let want = need.max(self.lease).min(self.burst);
            let fewest = need.min(self.lease).clamp(1, self.burst);
            let (granted, wait_us, pause_ms): (u64, u64, u64) = GCRA
                .key(&self.key)
                .key(&self.pause_key)
                .arg(format!("{interval:.3}"))
                .arg(self.burst)
                .arg(want)
                .arg(fewest)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(cmd_err("rate limit (EVALSHA gcra.lua)", &self.key))?;
            if pause_ms > 0 {
                self.note_pause(Duration::from_millis(pause_ms));
                continue;
            }
            *balance += granted;
            if granted == 0 {
                tokio::time::sleep(Duration::from_micros(wait_us.max(1_000))).await;
            }
        }
    }

    /// A 429 seen by this worker: every worker's `acquire` waits until `for_` has passed (a
    /// longer pause already in force is kept).
    pub async fn pause_fleet(&self, for_: Duration) -> Result<(), RedisError> {
        let ms: u64 = PAUSE
            .key(&self.pause_key)
            .arg(for_.as_millis().max(1) as u64)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("pause (EVALSHA pause.lua)", &self.pause_key))?;
        self.note_pause(Duration::from_millis(ms));
        Ok(())
    }

    fn note_pause(&self, left: Duration) {
        if let Ok(mut p) = self.pause.lock() {
            let now = Instant::now();
            p.until = Some(now + left);
            p.checked = Some(now);
        }
    }

    /// How long the fleet is still paused, looking at Redis when the local view is older than
    /// [`PAUSE_POLL`].
    async fn paused_for(&self) -> Result<Option<Duration>, RedisError> {
        let now = Instant::now();
        let (until, fresh) = match self.pause.lock() {
            Ok(p) => (
                p.until,
                p.checked
                    .is_some_and(|c| now.duration_since(c) < PAUSE_POLL),
            ),
            Err(_) => (None, false),
        };
        if let Some(until) = until.filter(|u| *u > now) {
            return Ok(Some(until - now));
        }
        if fresh {
            return Ok(None);
        }
        let ms: i64 = redis::cmd("PTTL")
            .arg(&self.pause_key)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("PTTL", &self.pause_key))?;
        let left = (ms > 0).then(|| Duration::from_millis(ms as u64));
        if let Ok(mut p) = self.pause.lock() {
            p.until = left.map(|l| now + l);
            p.checked = Some(now);
        }
        Ok(left)
    }
}
