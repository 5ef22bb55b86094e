//! producer
