//! evalfleet's fleet adapters: RabbitMQ behind the [`WorkQueue`] seam, and Redis behind the
//! [`ResultStore`] seam plus the run registry, the results' events stream, the fleet-wide rate
//! limiter and the shared judge cache.
//!
//! [`WorkQueue`]: evalfleet_contract::queue::WorkQueue
//! [`ResultStore`]: evalfleet_contract::store::ResultStore

pub mod amqp;
pub mod limits;
pub mod redis;
