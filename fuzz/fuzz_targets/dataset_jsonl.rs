//! A dataset file's content read as JSONL, every record.
#![no_main]

use evalfleet_dataset::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    evalfleet_fuzz::read_dataset(data, Format::JsonLines, &[]);
});
