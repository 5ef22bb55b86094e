//! A Anthropic reply body: 2xx → reply text → the judge's verdict (or the re-ask); also read as an
//! error response's body.
#![no_main]

use evalfleet_worker::judge::provider::fuzzing::Api;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    evalfleet_fuzz::judge_reply(Api::Anthropic, data);
});
