//! A Openai batch results file (JSONL): each line decoded, each reply's verdict read.
#![no_main]

use evalfleet_worker::judge::provider::fuzzing::Api;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    evalfleet_fuzz::batch_results(Api::Openai, data);
});
