//! aggregator
