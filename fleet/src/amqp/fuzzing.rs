//! Entry points for the fuzz targets in `fuzz/` at the repository root, not an API: what the
//! consumer and the dead-letter tools do with a delivery's body.

use evalfleet_contract::queue::Message;
use lapin::BasicProperties;

use super::DeadLetter;

/// A delivery body: a message of the current version, or why it is poison (what the consumer
/// does to every delivery before handing it to a worker).
pub fn decode(body: &[u8]) -> Result<Message, String> {
    super::consume::decode(body)
}

/// A dead-lettered body as `dlq list` shows it, with no AMQP properties.
pub fn dead_letter(body: &[u8]) -> DeadLetter {
    DeadLetter::from_delivery(&BasicProperties::default(), body)
}
