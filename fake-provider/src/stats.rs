//! What the provider has seen, for `GET /stats` and `GET /stats/timeline`: counters by
//! provider, model and status in bounded memory (atomics on the hot path), and per provider the
//! arrival times of accepted requests over the last ten minutes, so a test can prove a client
//! never exceeded a rate limit.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use serde_json::{json, Map, Value};

use crate::clock::rfc3339_ms;

/// The two API dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Anthropic,
}

impl Provider {
    pub const ALL: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Statuses counted without a lock; anything else goes to a small map.
const STATUS_SLOTS: [u16; 9] = [200, 400, 401, 404, 413, 429, 500, 503, 529];
/// Distinct models tracked per provider before the rest are pooled under `(other)`.
const MAX_MODELS: usize = 1_000;
/// How far back the accepted-request timeline reaches.
pub const TIMELINE_WINDOW_MS: u64 = 10 * 60 * 1_000;
/// The most timeline entries kept per provider (oldest dropped first).
pub const TIMELINE_CAP: usize = 200_000;

#[derive(Debug, Default)]
struct PerProvider {
    statuses: [AtomicU64; STATUS_SLOTS.len()],
    models: RwLock<HashMap<Box<str>, AtomicU64>>,
    other_models: AtomicU64,
    timeline: Mutex<Timeline>,
}

#[derive(Debug, Default)]
struct Timeline {
    accepted_ms: VecDeque<u64>,
    truncated: bool,
}

/// All counters.
#[derive(Debug, Default)]
pub struct Stats {
    total: AtomicU64,
    first_ms: AtomicU64,
    last_ms: AtomicU64,
    providers: [PerProvider; 2],
    other_statuses: Mutex<BTreeMap<(usize, u16), u64>>,
    /// `POST /agent` requests, whatever they were answered: the demo agent is not a provider.
    agent: AtomicU64,
}

impl Stats {
    /// Counts one finished API request. `accepted_at_ms` (the arrival time) is given for
    /// requests answered 200 and goes on the timeline.
    pub fn record(
        &self,
        provider: Provider,
        model: Option<&str>,
        status: u16,
        now_ms: u64,
        accepted_at_ms: Option<u64>,
    ) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .first_ms
            .compare_exchange(0, now_ms, Ordering::Relaxed, Ordering::Relaxed);
        self.last_ms.fetch_max(now_ms, Ordering::Relaxed);
        let p = &self.providers[provider.index()];
        match STATUS_SLOTS.iter().position(|s| *s == status) {
            Some(i) => {
                p.statuses[i].fetch_add(1, Ordering::Relaxed);
            }
            None => {
                let mut other = self
                    .other_statuses
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                *other.entry((provider.index(), status)).or_default() += 1;
            }
        }
        if let Some(model) = model {
            count_model(p, model);
        }
        if let Some(at) = accepted_at_ms {
            let mut t = p.timeline.lock().unwrap_or_else(|e| e.into_inner());
            prune(&mut t.accepted_ms, now_ms);
            if t.accepted_ms.len() >= TIMELINE_CAP {
                t.accepted_ms.pop_front();
                t.truncated = true;
            }
            t.accepted_ms.push_back(at);
        }
    }

    /// Counts one request to the demo agent.
    pub fn agent_request(&self) {
        self.agent.fetch_add(1, Ordering::Relaxed);
    }

    /// Zeroes everything.
    pub fn reset(&self) {
        self.total.store(0, Ordering::Relaxed);
        self.agent.store(0, Ordering::Relaxed);
        self.first_ms.store(0, Ordering::Relaxed);
        self.last_ms.store(0, Ordering::Relaxed);
        for p in &self.providers {
            for s in &p.statuses {
                s.store(0, Ordering::Relaxed);
            }
            p.models.write().unwrap_or_else(|e| e.into_inner()).clear();
            p.other_models.store(0, Ordering::Relaxed);
            let mut t = p.timeline.lock().unwrap_or_else(|e| e.into_inner());
            t.accepted_ms.clear();
            t.truncated = false;
        }
        self.other_statuses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The `GET /stats` document.
    pub fn to_json(&self) -> Value {
        let mut by_provider = Map::new();
        let mut by_model = BTreeMap::new();
        let mut by_status: BTreeMap<u16, u64> = BTreeMap::new();
        let mut by_provider_status = Map::new();
        let other = self
            .other_statuses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for provider in Provider::ALL {
            let p = &self.providers[provider.index()];
            let mut statuses: BTreeMap<u16, u64> = STATUS_SLOTS
                .iter()
                .zip(&p.statuses)
                .map(|(s, n)| (*s, n.load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect();
            for ((i, status), n) in &other {
                if *i == provider.index() {
                    statuses.insert(*status, *n);
                }
            }
            for (status, n) in &statuses {
                *by_status.entry(*status).or_default() += n;
            }
            let total: u64 = statuses.values().sum();
            if total == 0 {
                continue;
            }
            by_provider.insert(provider.name().into(), json!(total));
            by_provider_status.insert(provider.name().into(), status_map(&statuses));
            for (model, n) in p.models.read().unwrap_or_else(|e| e.into_inner()).iter() {
                by_model.insert(
                    format!("{}/{model}", provider.name()),
                    n.load(Ordering::Relaxed),
                );
            }
            let pooled = p.other_models.load(Ordering::Relaxed);
            if pooled > 0 {
                by_model.insert(format!("{}/(other)", provider.name()), pooled);
            }
        }
        let time = |a: &AtomicU64| match a.load(Ordering::Relaxed) {
            0 => (Value::Null, Value::Null),
            ms => (json!(rfc3339_ms(ms)), json!(ms)),
        };
        let (first_at, first_ms) = time(&self.first_ms);
        let (last_at, last_ms) = time(&self.last_ms);
        json!({
            "total": self.total.load(Ordering::Relaxed),
            "agent_requests": self.agent.load(Ordering::Relaxed),
            "by_provider": by_provider,
            "by_model": by_model,
            "by_status": status_map(&by_status),
            "by_provider_status": by_provider_status,
            "first_request_at": first_at,
            "last_request_at": last_at,
            "first_request_unix_ms": first_ms,
            "last_request_unix_ms": last_ms,
        })
    }

    /// Accepted arrival times (unix ms, ascending) of the last ten minutes, and whether the
    /// cap dropped some of them.
    pub fn timeline(&self, provider: Provider, now_ms: u64) -> (Vec<u64>, bool) {
        let p = &self.providers[provider.index()];
        let mut t = p.timeline.lock().unwrap_or_else(|e| e.into_inner());
        prune(&mut t.accepted_ms, now_ms);
        let mut out: Vec<u64> = t.accepted_ms.iter().copied().collect();
        let truncated = t.truncated;
        drop(t);
        // Entries are pushed when a reply finishes, so latency can reorder arrivals slightly.
        out.sort_unstable();
        (out, truncated)
    }
}

fn count_model(p: &PerProvider, model: &str) {
    {
        let models = p.models.read().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = models.get(model) {
            n.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if models.len() >= MAX_MODELS {
            p.other_models.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    let mut models = p.models.write().unwrap_or_else(|e| e.into_inner());
    if models.len() >= MAX_MODELS && !models.contains_key(model) {
        p.other_models.fetch_add(1, Ordering::Relaxed);
        return;
    }
    models
        .entry(model.into())
        .or_default()
        .fetch_add(1, Ordering::Relaxed);
}

fn prune(accepted: &mut VecDeque<u64>, now_ms: u64) {
    let horizon = now_ms.saturating_sub(TIMELINE_WINDOW_MS);
    while accepted.front().is_some_and(|at| *at < horizon) {
        accepted.pop_front();
    }
}

fn status_map(statuses: &BTreeMap<u16, u64>) -> Value {
    Value::Object(
        statuses
            .iter()
            .map(|(s, n)| (s.to_string(), json!(n)))
            .collect(),
    )
}
