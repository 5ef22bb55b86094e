//! Injected faults: which one (if any) a request gets is decided by one uniform draw from the
//! seeded per-request stream, never from the prompt — so a retried prompt can succeed, and a
//! given request order always sees the same faults.

use crate::args::FakeProviderArgs;

/// What goes wrong with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    /// A retryable 429 rate-limit error (with `retry-after`).
    RateLimit,
    /// A non-retryable quota/billing error.
    Quota,
    /// A 500.
    ServerError,
    /// Anthropic 529 `overloaded_error`; OpenAI 503.
    Overloaded,
    /// Sleep `hang_ms`, then answer normally.
    Hang,
    /// 200 with a truncated JSON body.
    Malformed,
    /// A valid reply whose score is max + 3.
    OutOfRange,
    /// A valid reply whose content is prose with no JSON.
    NonJson,
}

impl Fault {
    /// Maps a uniform draw `u` in [0, 1) onto the configured rates, laid end to end in the
    /// order of the CLI flags; rates summing past 1 crowd out the later ones.
    pub fn pick(args: &FakeProviderArgs, u: f64) -> Self {
        let table = [
            (args.fault_429, Self::RateLimit),
            (args.fault_quota, Self::Quota),
            (args.fault_500, Self::ServerError),
            (args.fault_529, Self::Overloaded),
            (args.fault_hang, Self::Hang),
            (args.fault_malformed, Self::Malformed),
            (args.fault_out_of_range, Self::OutOfRange),
            (args.fault_non_json, Self::NonJson),
        ];
        let mut edge = 0.0;
        for (rate, fault) in table {
            edge += rate;
            if u < edge {
                return fault;
            }
        }
        Self::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_laid_end_to_end() {
        let args = FakeProviderArgs {
            fault_429: 0.25,
            fault_500: 0.25,
            fault_non_json: 1.0,
            ..FakeProviderArgs::default()
        };
        assert_eq!(Fault::pick(&args, 0.0), Fault::RateLimit);
        assert_eq!(Fault::pick(&args, 0.3), Fault::ServerError);
        assert_eq!(Fault::pick(&args, 0.99), Fault::NonJson);
        assert_eq!(Fault::pick(&FakeProviderArgs::default(), 0.0), Fault::None);
    }
}
