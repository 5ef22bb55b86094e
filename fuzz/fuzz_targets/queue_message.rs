//! A queue delivery's body: decoded as the fleet consumer does (a v2 `Message`, or poison), as
//! `dlq list` shows it, and a decoded message through JSON again (the producer's encoding).
#![no_main]

use evalfleet_contract::queue::Message;
use evalfleet_fleet::amqp::fuzzing::{dead_letter, decode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let decoded = decode(data);
    let direct = serde_json::from_slice::<Message>(data);
    assert!(direct.is_ok() || decoded.is_err());
    let letter = dead_letter(data);
    assert!(letter.raw.len() <= evalfleet_fleet::amqp::RAW_LIMIT);
    assert_eq!(letter.message.is_some(), decoded.is_ok());
    if let Ok(message) = decoded {
        let body = serde_json::to_vec(&message).expect("a message serialises");
        let again = decode(&body).unwrap_or_else(|e| panic!("a published message is poison: {e}"));
        assert_eq!(again, message, "a message survives publishing");
    }
});
