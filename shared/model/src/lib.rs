//! # evalfleet-model
//! Owns: the words every other crate shares — the result record of one example ([`record`]),
//! numbers and running statistics ([`num`], [`stats`]), item gates ([`gate`]), field paths
//! ([`field`]), text normalisation and escaping ([`text`]), provider routing by model name
//! ([`routing`]), the suite vocabulary ([`suite`]) and the run-id rule ([`run_id`]). It must
//! not depend on any other evalfleet crate nor do I/O, and its dependencies stay light (serde,
//! statrs): `evalfleet compare` builds on it alone.

pub mod epochs;
pub mod field;
pub mod gate;
pub mod num;
pub mod pairwise;
pub mod record;
pub mod redact;
pub mod routing;
pub mod run_id;
pub mod stats;
pub mod suite;
pub mod text;
