//! evalfleet's pure core: everything that decides *what* an evaluation computes, with no network
//! I/O, so the embedded `run` and the fleet produce byte-identical numbers.

pub mod text;
pub mod dataset;
