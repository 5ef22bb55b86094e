//! A dataset file's content read as CSV, every record, with typed cells for a few column names
//! (the seeds and the fuzzer use them as headers).
#![no_main]

use evalfleet_dataset::{CellType, Format};
use libfuzzer_sys::fuzz_target;

const CELLS: &[(&str, CellType)] = &[
    ("s", CellType::String),
    ("n", CellType::Number),
    ("b", CellType::Bool),
    ("j", CellType::Json),
    ("latency_ms", CellType::Number),
];

fuzz_target!(|data: &[u8]| {
    evalfleet_fuzz::read_dataset(data, Format::Csv, CELLS);
});
