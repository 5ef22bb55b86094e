//! The progress bar of `run`: bytes of the dataset read, examples evaluated and their rate. It
//! draws only on a terminal (indicatif hides itself when stderr is a pipe or a file).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use evalfleet_producer::Progress;

pub struct RunProgress {
    bar: ProgressBar,
    ticker: tokio::task::JoinHandle<()>,
}

impl RunProgress {
    pub fn start(dataset_bytes: u64, read: Arc<Progress>, evaluated: Arc<AtomicU64>) -> Self {
        let bar = ProgressBar::with_draw_target(Some(dataset_bytes), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% · {msg} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let ticker_bar = bar.clone();
        let ticker = tokio::spawn(async move {
            let started = std::time::Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let done = evaluated.load(Ordering::Relaxed);
                let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
                ticker_bar.set_position(read.bytes_read.load(Ordering::Relaxed));
                let waiting = read.waiting.load(Ordering::Relaxed);
                ticker_bar.set_message(if waiting > 0 {
                    format!("{done} published · the queue is full ({waiting} waiting): waiting for the workers")
                } else {
                    format!("{done} evaluated · {rate:.0}/s")
                });
            }
        });
        RunProgress { bar, ticker }
    }

    pub fn finish(self) {
        self.ticker.abort();
        self.bar.finish_and_clear();
    }
}
