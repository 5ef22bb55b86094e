//! The fleet's RabbitMQ adapter: the [`WorkQueue`](evalfleet_contract::queue::WorkQueue) that
//! carries one message per example from `evalfleet submit` to the workers (docs/DESIGN.md §1, §3, §8).
//!
//! - [`declare_topology`]: the exchanges and queues, declared by every role on every connection;
//! - [`AmqpQueue`]: confirmed batch publishing, a shared prefetch-bounded consumer that
//!   dead-letters poison messages, queue depths, and the dead-letter tools;
//! - a supervisor that replaces a dead connection by itself (backoff with jitter, forever), so
//!   publishing and consuming resume after a broker restart without losing work: unconfirmed
//!   batches are published again, unacked deliveries are redelivered by the broker, and the
//!   result store's once-per-index write keeps the counts exact.
//!
//! Built on lapin with rustls (ring). lapin's own auto-recovery is not used: recovery has to
//! know what our unconfirmed publishes and unacked deliveries mean.

mod acks;
mod config;
mod consume;
mod delivery;
pub mod depth;
mod dlq;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod publish;
mod queue;
mod supervisor;
#[doc(hidden)]
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod topology;

pub use config::AmqpConfig;
pub use delivery::{AmqpDelivery, SETTLE_TIMEOUT};
pub use dlq::{DeadLetter, RAW_LIMIT};
pub use error::AmqpError;
pub use publish::{CONTENT_TYPE, MESSAGE_TYPE};
pub use queue::{AmqpQueue, QueueDepths, OPERATION_DEADLINE, PUBLISH_DEADLINE};
pub use topology::{declare_topology, delete_topology};
