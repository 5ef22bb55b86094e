//! Exit codes, so CI can tell a failed gate from bad input from a broken environment.

use std::process::ExitCode;

use evalfleet_compare::CompareError;
use evalfleet_config::ConfigError;
use evalfleet_dataset::DatasetError;
use evalfleet_model::run_id::BadRunId;
use evalfleet_producer::submit::SubmitError;
use evalfleet_producer::ProduceError;
use evalfleet_suites::suite::SuiteError;
use evalfleet_worker::WorkerError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the run completed and every gate held.
    Success = 0,
    /// 1: the run completed but a run-level gate failed (or `validate` found invalid records, or
    /// `compare` found a regression).
    GatesFailed = 1,
    /// 2: bad input or usage: unreadable dataset, no valid example, bad suite or config.
    BadInput = 2,
    /// 3: infrastructure: the queue, the store or the file system failed.
    Infrastructure = 3,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// A failure the user can fix by changing the input or the command line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

impl Exit {
    /// The outcome of two gates together: the higher code wins (a failed gate over success).
    pub fn worst(self, other: Exit) -> Exit {
        if other as u8 > self as u8 {
            other
        } else {
            self
        }
    }

    pub fn classify(err: &anyhow::Error) -> Exit {
        // `ProduceError::Dataset` is transparent, so the chain skips the DatasetError inside.
        let bad_input = err.chain().any(|e| {
            e.is::<BadInput>()
                || e.is::<DatasetError>()
                || e.is::<SuiteError>()
                || e.is::<ConfigError>()
                || e.is::<BadRunId>()
                || matches!(e.downcast_ref::<SubmitError>(), Some(SubmitError::RunId(_)))
                || e.downcast_ref::<CompareError>()
                    .is_some_and(CompareError::is_bad_input)
                || matches!(
                    e.downcast_ref::<WorkerError>(),
                    Some(WorkerError::Stopped(_))
                )
                || matches!(
                    e.downcast_ref::<ProduceError>(),
                    Some(ProduceError::Dataset(_))
                )
        });
        if bad_input {
            Exit::BadInput
        } else {
            Exit::Infrastructure
        }
    }
}
