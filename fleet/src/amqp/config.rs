//! Where the broker is and what the fleet's exchanges and queues are called.
//!
//! Every role derives the same names from one prefix (docs/DESIGN.md §3: exchange `evalfleet`, queue
//! `evalfleet.examples`, dead-letter exchange `evalfleet.dlx`, queue `evalfleet.dead`), so a
//! producer, a worker and an aggregator configured alike always meet on the same queues, and a
//! test can run a private copy of the topology under a unique prefix.

use lapin::types::ShortString;
use lapin::uri::AMQPUri;

use evalfleet_model::redact::redact_url;

use super::AmqpError;

/// The longest prefix whose derived names still fit an AMQP short string (255 bytes).
const MAX_PREFIX: usize = 200;

/// How to reach RabbitMQ and which topology to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpConfig {
    /// `amqp://guest:guest@127.0.0.1:5672/%2f`, or `amqps://…` for TLS.
    pub url: String,
    /// Exchange `{prefix}`, queue `{prefix}.examples`, dead-letter exchange `{prefix}.dlx`,
    /// dead-letter queue `{prefix}.dead`.
    pub prefix: String,
    /// Unacknowledged deliveries the broker may push to this process (`basic_qos`); size it to
    /// 1–2× the worker's concurrency. 0 is read as 1.
    pub prefetch: u16,
    /// Deliveries after which the quorum queue dead-letters a message (`x-delivery-limit`).
    pub delivery_limit: u32,
}

impl Default for AmqpConfig {
    fn default() -> Self {
        AmqpConfig {
            url: "amqp://guest:guest@127.0.0.1:5672/%2f".into(),
            prefix: "evalfleet".into(),
            prefetch: 64,
            delivery_limit: 5,
        }
    }
}

impl AmqpConfig {
    /// The work exchange (direct, durable).
    pub fn exchange(&self) -> String {
        self.prefix.clone()
    }

    /// The work queue (quorum) the producer fills and workers drain.
    pub fn queue(&self) -> String {
        format!("{}.examples", self.prefix)
    }

    /// The routing key binding the work queue to the work exchange: the queue's own name.
    pub fn routing_key(&self) -> String {
        self.queue()
    }

    /// The dead-letter exchange (fanout, durable).
    pub fn dlx(&self) -> String {
        format!("{}.dlx", self.prefix)
    }

    /// The dead-letter queue.
    pub fn dead_queue(&self) -> String {
        format!("{}.dead", self.prefix)
    }

    /// The URL with any password replaced by `***`, for logs and error messages.
    pub fn redacted_url(&self) -> String {
        redact_url(&self.url)
    }

    /// Checks what would otherwise fail late (or panic inside lapin): the URL parses, the names
    /// fit AMQP short strings.
    pub fn validate(&self) -> Result<(), AmqpError> {
        if self.prefix.trim().is_empty() {
            return Err(AmqpError::Config("prefix: must not be empty".into()));
        }
        if self.prefix.len() > MAX_PREFIX {
            return Err(AmqpError::Config(format!(
                "prefix: {} bytes, at most {MAX_PREFIX} allowed",
                self.prefix.len()
            )));
        }
        if self.delivery_limit > i32::MAX as u32 {
            return Err(AmqpError::Config(format!(
                "delivery_limit: {} is too large",
                self.delivery_limit
            )));
        }
        self.url
            .parse::<AMQPUri>()
            .map_err(|e| AmqpError::Config(format!("url `{}`: {e}", self.redacted_url())))?;
        Ok(())
    }
}

/// A short string from a name that [`AmqpConfig::validate`] or the caller has bounded.
pub(crate) fn short(s: impl Into<String>) -> ShortString {
    let s = s.into();
    match ShortString::try_new(s) {
        Ok(s) => s,
        // Unreachable for validated names; truncate rather than panic inside lapin.
        Err(_) => ShortString::from(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_derive_from_the_prefix() {
        let cfg = AmqpConfig::default();
        assert_eq!(cfg.exchange(), "evalfleet");
        assert_eq!(cfg.queue(), "evalfleet.examples");
        assert_eq!(cfg.dlx(), "evalfleet.dlx");
        assert_eq!(cfg.dead_queue(), "evalfleet.dead");
        cfg.validate().expect("the default config is valid");
    }

    #[test]
    fn bad_configs_are_refused_with_the_key() {
        let long = AmqpConfig {
            prefix: "p".repeat(300),
            ..AmqpConfig::default()
        };
        assert!(long.validate().unwrap_err().to_string().contains("prefix"));
        let url = AmqpConfig {
            url: "http://x".into(),
            ..AmqpConfig::default()
        };
        assert!(url.validate().unwrap_err().to_string().contains("url"));
    }
}
