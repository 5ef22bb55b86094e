//! Helpers for tests against a real broker: a private topology per test (unique prefix) that
//! is deleted afterwards, and a way to kill this process's connections from the broker side
//! (`rabbitmqctl close_connection`) without restarting a broker other tests share.
//! Only ever talks to the broker at `EVALFLEET_TEST_AMQP_URL` (default: local guest).
//! [`FlakyProxy`] goes further: a local TCP proxy a test cuts and restores, to take the broker
//! away at the network level (connection refused, no goodbye) and bring it back.

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use lapin::{Channel, Connection, ConnectionProperties};

use super::{delete_topology, AmqpConfig, AmqpError};

/// The broker tests use.
pub fn test_url() -> String {
    std::env::var("EVALFLEET_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A config with a prefix no other test (or test run) uses.
pub fn unique_config(tag: &str) -> AmqpConfig {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    AmqpConfig {
        url: test_url(),
        prefix: format!(
            "evalfleet-test-{tag}-{}-{nanos}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ),
        prefetch: 16,
        delivery_limit: 5,
    }
}

/// A plain lapin connection and channel to the test broker, for raw publishing and checks.
pub async fn raw_channel(cfg: &AmqpConfig) -> Result<(Connection, Channel), AmqpError> {
    let conn = Connection::connect(&cfg.url, ConnectionProperties::default())
        .await
        .map_err(AmqpError::broker("connect to", cfg.redacted_url()))?;
    let channel = conn
        .create_channel()
        .await
        .map_err(AmqpError::broker("open channel on", cfg.redacted_url()))?;
    Ok((conn, channel))
}

/// Deletes the test's queues and exchanges.
pub async fn cleanup(cfg: &AmqpConfig) -> Result<(), AmqpError> {
    let (conn, channel) = raw_channel(cfg).await?;
    delete_topology(&channel, cfg).await?;
    let _ = conn.close(200, "test cleanup".into()).await;
    Ok(())
}

/// Polls `check` until it returns Some or `within` has passed (then panics naming `what`):
/// for effects the broker applies asynchronously, such as dead-lettering.
pub async fn eventually<T, F, Fut>(what: &str, within: std::time::Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let give_up = tokio::time::Instant::now() + within;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < give_up,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Deletes the test's topology when dropped — also when the test panics.
pub struct TopologyGuard(pub AmqpConfig);

impl Drop for TopologyGuard {
    fn drop(&mut self) {
        let cfg = self.0.clone();
        // A runtime of its own: Drop cannot await, and the test's runtime may be unwinding.
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(cleanup(&cfg)).map_err(|e| e.to_string())
        })
        .join();
        if let Ok(Err(e)) = done {
            eprintln!("cleaning up the test topology failed: {e}");
        }
    }
}

/// Closes, from the broker side, every connection an [`AmqpQueue`](super::AmqpQueue) with
/// this prefix opened (they are named after it); returns how many. Blocking: runs
/// `rabbitmqctl`, which must be on PATH and allowed to talk to the local node.
pub fn close_broker_connections(prefix: &str) -> Result<usize, String> {
    let listing = Command::new("rabbitmqctl")
        .args(["-q", "list_connections", "pid", "client_properties"])
        .output()
        .map_err(|e| format!("run rabbitmqctl: {e}"))?;
    if !listing.status.success() {
        return Err(format!(
            "rabbitmqctl list_connections: {}",
            String::from_utf8_lossy(&listing.stderr)
        ));
    }
    let wanted = format!("evalfleet {prefix} pid ");
    let stdout = String::from_utf8_lossy(&listing.stdout);
    let pids: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains(&wanted))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    for pid in &pids {
        let closed = Command::new("rabbitmqctl")
            .args([
                "-q",
                "close_connection",
                pid,
                "evalfleet test: simulated outage",
            ])
            .output()
            .map_err(|e| format!("run rabbitmqctl: {e}"))?;
        if !closed.status.success() {
            return Err(format!(
                "rabbitmqctl close_connection {pid}: {}",
                String::from_utf8_lossy(&closed.stderr)
            ));
        }
    }
    Ok(pids.len())
}

/// A TCP proxy on 127.0.0.1 in front of the broker that a test can cut — every connection
/// through it dropped, new ones refused after the TCP handshake — and restore: a broker going
/// away and coming back, as a restart or a network cut looks to a client, without touching a
/// broker other tests share. Plain threads, no runtime needed.
pub struct FlakyProxy {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<TcpStream>>>,
}

impl FlakyProxy {
    /// Listens on an ephemeral local port and forwards to `upstream` (`127.0.0.1:5672`).
    pub fn start(upstream: &str) -> std::io::Result<Self> {
        let upstream: SocketAddr = upstream
            .parse()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let proxy = FlakyProxy {
            addr: listener.local_addr()?,
            up: Arc::new(AtomicBool::new(true)),
            stop: Arc::new(AtomicBool::new(false)),
            links: Arc::new(Mutex::new(Vec::new())),
        };
        let (up, stop, links) = (proxy.up.clone(), proxy.stop.clone(), proxy.links.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if !up.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let pair = (client.try_clone(), server.try_clone());
                let (Ok(client2), Ok(server2)) = pair else {
                    continue;
                };
                if let Ok(mut l) = links.lock() {
                    l.extend(
                        [client.try_clone(), server.try_clone()]
                            .into_iter()
                            .flatten(),
                    );
                }
                std::thread::spawn(move || pipe(client, server2));
                std::thread::spawn(move || pipe(server, client2));
            }
        });
        Ok(proxy)
    }

    /// `url` with its host and port replaced by the proxy's.
    pub fn url(&self, url: &str) -> String {
        let Some(start) = url.find("://").map(|i| i + 3) else {
            return url.to_owned();
        };
        let rest = &url[start..];
        let end = rest.find('/').unwrap_or(rest.len());
        let host_start = rest[..end].rfind('@').map(|i| i + 1).unwrap_or(0);
        format!(
            "{}{}{}{}",
            &url[..start],
            &rest[..host_start],
            self.addr,
            &rest[end..]
        )
    }

    /// Drops every connection through the proxy and refuses new ones.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        if let Ok(mut links) = self.links.lock() {
            for s in links.drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for FlakyProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
        // Wake the accept loop so it sees `stop`.
        let _ = TcpStream::connect(self.addr);
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}
