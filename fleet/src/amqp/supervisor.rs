//! Connection supervision: one connection per process, replaced whenever it dies.
//!
//! lapin's own auto-recovery replays channels and consumers but cannot know what our
//! unconfirmed publishes and unacked deliveries mean, and gives up after a fixed number of
//! attempts. So recovery is ours (docs/DESIGN.md §3): a background task watches the live [`Session`]
//! (connection + confirm-mode publishing channel); when the broker goes away it withdraws the
//! session, reconnects with exponential backoff and jitter (capped at 5 s, forever, until the
//! last handle is dropped), re-declares the topology and publishes the new session under a new
//! *generation*. Publishers and consumers hold no connection state of their own: they ask
//! [`Supervisor::session`] for the current session, and tell [`Supervisor::report_broken`]
//! when an operation failed on it, which only speeds up what the watch loop notices anyway.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use lapin::options::ConfirmSelectOptions;
use lapin::uri::AMQPUri;
use lapin::{Channel, Connection, ConnectionProperties};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use super::topology::declare_topology;
use super::{AmqpConfig, AmqpError};

/// How often the watch loop looks at the session's state.
const WATCH_INTERVAL: Duration = Duration::from_millis(200);
/// One TCP + AMQP handshake may take this long before the attempt counts as failed.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Reconnection backoff: 100 ms doubling to 5 s, with jitter, never giving up.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Heartbeat proposed when the URL sets none (`?heartbeat=N` wins): a silently dead peer
/// (a lost node, a cut without RST) is noticed in about two intervals instead of minutes.
const HEARTBEAT_S: u16 = 20;

/// One live connection with its publishing channel (publisher confirms on, topology declared).
pub(crate) struct Session {
    pub(crate) generation: u64,
    pub(crate) connection: Connection,
    pub(crate) publisher: Channel,
}

impl Session {
    pub(crate) fn alive(&self) -> bool {
        self.connection.status().connected() && self.publisher.status().connected()
    }
}

/// The reconnection schedule: exponential, jittered, capped at [`BACKOFF_MAX`], endless.
pub(crate) fn backoff() -> impl Iterator<Item = Duration> {
    ExponentialBuilder::default()
        .with_min_delay(BACKOFF_MIN)
        .with_max_delay(BACKOFF_MAX)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .build()
        .map(|d| d.min(BACKOFF_MAX))
}

struct Shared {
    cfg: AmqpConfig,
    /// The live session, or None while reconnecting.
    state: watch::Sender<Option<Arc<Session>>>,
    /// Someone saw an operation fail: look at the session now.
    broken: Notify,
    generations: AtomicU64,
    reconnections: AtomicU64,
}

/// Owns the watch loop; dropping it (with the last queue handle) stops the loop and closes the
/// connection.
pub(crate) struct Supervisor {
    shared: Arc<Shared>,
    _stop: watch::Sender<()>,
}

impl Supervisor {
    /// Connects (retrying with backoff until `deadline` has passed), then starts watching.
    /// Refusals that retrying cannot fix (bad credentials, conflicting queue arguments) fail
    /// at once.
    pub(crate) async fn start(cfg: AmqpConfig, deadline: Duration) -> Result<Self, AmqpError> {
        cfg.validate()?;
        let started = Instant::now();
        let give_up = started + deadline;
        let mut delays = backoff();
        let mut attempts = 0;
        let first = loop {
            attempts += 1;
            // Every attempt gets a fair chance, even with a zero deadline.
            let remaining = give_up.saturating_duration_since(Instant::now());
            let attempt_deadline =
                Instant::now() + ATTEMPT_TIMEOUT.min(remaining.max(Duration::from_secs(2)));
            let err = match connect_once(&cfg, 1, attempt_deadline).await {
                Ok(session) => break session,
                Err(e) => e,
            };
            let delay = delays.next().unwrap_or(BACKOFF_MAX);
            if !err.is_transient() || Instant::now() + delay > give_up {
                return Err(AmqpError::Connect {
                    url: cfg.redacted_url(),
                    attempts,
                    waited: started.elapsed(),
                    last: Box::new(err),
                });
            }
            tracing::warn!(url = %cfg.redacted_url(), attempt = attempts, error = %err, retry_in = ?delay, "RabbitMQ not reachable yet");
            tokio::time::sleep(delay).await;
        };
        tracing::info!(url = %cfg.redacted_url(), prefix = %cfg.prefix, "connected to RabbitMQ");
        let (state, _) = watch::channel(Some(Arc::new(first)));
        let shared = Arc::new(Shared {
            cfg,
            state,
            broken: Notify::new(),
            generations: AtomicU64::new(1),
            reconnections: AtomicU64::new(0),
        });
        let (stop, stopped) = watch::channel(());
        tokio::spawn(watch_loop(shared.clone(), stopped));
        Ok(Supervisor {
            shared,
            _stop: stop,
        })
    }

    pub(crate) fn config(&self) -> &AmqpConfig {
        &self.shared.cfg
    }

    /// The live session, waiting through a reconnection until `deadline` (None: forever).
    /// None once the deadline has passed.
    pub(crate) async fn session(&self, deadline: Option<Instant>) -> Option<Arc<Session>> {
        let mut rx = self.shared.state.subscribe();
        let wait = async {
            loop {
                let current = rx.borrow_and_update().clone();
                if let Some(session) = current {
                    if session.alive() {
                        return Some(session);
                    }
                    self.report_broken(session.generation);
                }
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        };
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, wait).await.ok().flatten(),
            None => wait.await,
        }
    }

    /// The generation of the live session, None while reconnecting.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.shared.state.borrow().as_ref().map(|s| s.generation)
    }

    /// Whether a live session is up right now (for readiness probes).
    pub(crate) fn is_connected(&self) -> bool {
        self.shared
            .state
            .borrow()
            .as_ref()
            .is_some_and(|s| s.alive())
    }

    /// Connections replaced since the start.
    pub(crate) fn reconnections(&self) -> u64 {
        self.shared.reconnections.load(Ordering::Relaxed)
    }

    /// An operation on session `generation` failed: have the watch loop check it now.
    pub(crate) fn report_broken(&self, generation: u64) {
        if self.generation() == Some(generation) {
            self.shared.broken.notify_one();
        }
    }
}

async fn connect_once(
    cfg: &AmqpConfig,
    generation: u64,
    deadline: Instant,
) -> Result<Session, AmqpError> {
    let name = format!("evalfleet {} pid {}", cfg.prefix, std::process::id());
    let properties = ConnectionProperties::default().with_connection_name(name.into());
    let url = cfg.redacted_url();
    let timeout = || AmqpError::Timeout {
        op: "connect to",
        target: url.clone(),
        after: ATTEMPT_TIMEOUT,
    };
    let mut uri: AMQPUri = cfg
        .url
        .parse()
        .map_err(|e| AmqpError::Config(format!("url `{url}`: {e}")))?;
    if uri.query.heartbeat.is_none() {
        uri.query.heartbeat = Some(HEARTBEAT_S);
    }
    let handshake = async {
        let connection = Connection::connect_uri(uri, properties)
            .await
            .map_err(AmqpError::broker("connect to", &url))?;
        let publisher = connection
            .create_channel()
            .await
            .map_err(AmqpError::broker("open channel on", &url))?;
        declare_topology(&publisher, cfg).await?;
        publisher
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(AmqpError::broker(
                "enable publisher confirms on",
                cfg.exchange(),
            ))?;
        Ok(Session {
            generation,
            connection,
            publisher,
        })
    };
    tokio::time::timeout_at(deadline, handshake)
        .await
        .unwrap_or_else(|_| Err(timeout()))
}

/// Watches the live session; replaces it when it dies; stops when the supervisor is dropped.
async fn watch_loop(shared: Arc<Shared>, mut stop: watch::Receiver<()>) {
    loop {
        let current = shared.state.borrow().clone();
        if let Some(session) = current {
            loop {
                tokio::select! {
                    _ = stop.changed() => {
                        close(&session).await;
                        return;
                    }
                    _ = shared.broken.notified() => {}
                    _ = tokio::time::sleep(WATCH_INTERVAL) => {}
                }
                if !session.alive() {
                    break;
                }
            }
            shared.state.send_replace(None);
            tracing::warn!(
                url = %shared.cfg.redacted_url(),
                generation = session.generation,
                "RabbitMQ connection lost; reconnecting"
            );
            // The connection may be half-alive (only a channel died): close it so the broker
            // requeues its unacked deliveries now rather than at the heartbeat timeout.
            close(&session).await;
        }
        let generation = shared.generations.fetch_add(1, Ordering::SeqCst) + 1;
        let mut delays = backoff();
        let mut attempt = 0u64;
        let session = loop {
            attempt += 1;
            let deadline = Instant::now() + ATTEMPT_TIMEOUT;
            tokio::select! {
                _ = stop.changed() => return,
                result = connect_once(&shared.cfg, generation, deadline) => match result {
                    Ok(session) => break session,
                    Err(e) => {
                        let delay = delays.next().unwrap_or(BACKOFF_MAX);
                        tracing::warn!(attempt, error = %e, retry_in = ?delay, "reconnecting to RabbitMQ failed");
                        tokio::select! {
                            _ = stop.changed() => return,
                            _ = tokio::time::sleep(delay) => {}
                        }
                    }
                }
            }
        };
        tracing::info!(
            generation,
            attempts = attempt,
            "reconnected to RabbitMQ; topology declared"
        );
        shared.state.send_replace(Some(Arc::new(session)));
        shared.reconnections.fetch_add(1, Ordering::Relaxed);
    }
}

async fn close(session: &Session) {
    if session.connection.status().connected() {
        let bye = session.connection.close(200, "evalfleet: closing".into());
        let _ = tokio::time::timeout(Duration::from_secs(2), bye).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_the_cap_and_never_ends() {
        let delays: Vec<Duration> = backoff().take(40).collect();
        assert_eq!(delays.len(), 40);
        assert!(delays[0] >= BACKOFF_MIN && delays[0] < BACKOFF_MIN * 3);
        assert!(delays.iter().all(|d| *d <= BACKOFF_MAX));
        assert!(delays[20..].iter().all(|d| *d >= BACKOFF_MAX / 2));
    }
}
