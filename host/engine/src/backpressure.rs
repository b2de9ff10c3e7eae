//! Backpressure for micro-batches: a PID controller on the ingestion rate,
//! after Spark Streaming's `PIDRateEstimator`. After each batch it compares
//! the rate it allowed with the rate the pipeline actually processed, and
//! steers the next batch's size so that processing keeps up with the trigger
//! interval instead of batches (and latency) growing without bound.

use std::time::Duration;

/// Controller gains and floor. Spark's defaults: P 1.0, I 0.2, D 0, 100 rec/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidConfig {
    pub proportional: f64,
    pub integral: f64,
    pub derivative: f64,
    /// Never go below this many records per second, so a stalled pipeline
    /// still makes progress and measures its rate again.
    pub min_rate: f64,
    /// Cap on the first batch, before any rate has been measured; `None`
    /// leaves it to the source's own limits.
    pub initial_rate: Option<f64>,
}

impl Default for PidConfig {
    fn default() -> Self {
        PidConfig {
            proportional: 1.0,
            integral: 0.2,
            derivative: 0.0,
            min_rate: 100.0,
            initial_rate: None,
        }
    }
}

/// The estimator's state between batches.
#[derive(Debug, Clone)]
pub struct PidRateEstimator {
    config: PidConfig,
    /// When the last update happened (ms on the caller's clock).
    latest_time: Option<i64>,
    latest_rate: f64,
    latest_error: f64,
}

impl PidRateEstimator {
    pub fn new(config: PidConfig) -> Self {
        PidRateEstimator {
            config,
            latest_time: None,
            latest_rate: -1.0,
            latest_error: -1.0,
        }
    }

    /// The records per second the next batch may take (`None` until the
    /// first measurement, unless an initial rate is configured).
    pub fn rate(&self) -> Option<f64> {
        if self.latest_rate >= 0.0 {
            Some(self.latest_rate)
        } else {
            self.config.initial_rate
        }
    }

    /// Feed one finished batch: its end time (ms), its size, how long it
    /// took to process, how long it waited past its scheduled start, and the
    /// trigger interval. Batches that carry no information (empty, or
    /// instantaneous) leave the rate alone.
    pub fn update(
        &mut self,
        time_ms: i64,
        records: u64,
        processing: Duration,
        scheduling_delay: Duration,
        interval: Duration,
    ) -> Option<f64> {
        let processing_ms = processing.as_secs_f64() * 1000.0;
        let interval_ms = interval.as_secs_f64() * 1000.0;
        if records == 0 || processing_ms <= 0.0 || interval_ms <= 0.0 {
            return self.rate();
        }
        if let Some(latest) = self.latest_time
            && time_ms <= latest
        {
            return self.rate();
        }
        let processing_rate = records as f64 / processing_ms * 1000.0;
        let Some(latest_time) = self.latest_time else {
            // First measurement: adopt the observed rate as the baseline.
            self.latest_time = Some(time_ms);
            self.latest_rate = processing_rate;
            self.latest_error = 0.0;
            return self.rate();
        };
        let since_update = (time_ms - latest_time) as f64 / 1000.0;
        // Positive when we admitted more than the pipeline could process.
        let error = self.latest_rate - processing_rate;
        // The backlog accumulated as scheduling delay, expressed as a rate:
        // records that should have been processed in earlier intervals.
        let historical_error =
            scheduling_delay.as_secs_f64() * 1000.0 * processing_rate / interval_ms;
        let d_error = (error - self.latest_error) / since_update;
        let c = &self.config;
        let new_rate = (self.latest_rate
            - c.proportional * error
            - c.integral * historical_error
            - c.derivative * d_error)
            .max(c.min_rate);
        self.latest_time = Some(time_ms);
        self.latest_rate = new_rate;
        self.latest_error = error;
        self.rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[test]
    fn first_batch_sets_the_baseline() {
        let mut e = PidRateEstimator::new(PidConfig::default());
        assert_eq!(e.rate(), None);
        let r = e.update(1000, 5000, Duration::from_secs(5), Duration::ZERO, SEC);
        assert_eq!(r, Some(1000.0));
    }

    #[test]
    fn converges_to_the_processing_rate_and_drains_the_backlog() {
        // A pipeline that processes exactly 1,000 rec/s, 1 s trigger.
        let mut e = PidRateEstimator::new(PidConfig::default());
        let mut t = 0;
        let mut rate = 8000.0;
        let mut delay = Duration::ZERO;
        for _ in 0..30 {
            let records = rate as u64;
            let processing = Duration::from_secs_f64(records as f64 / 1000.0);
            t += processing.as_millis() as i64;
            rate = e.update(t, records, processing, delay, SEC).unwrap();
            // Whatever ran past the interval delays the next batch.
            delay = processing.saturating_sub(SEC);
        }
        assert!((rate - 1000.0).abs() < 50.0, "rate {rate}");
    }

    #[test]
    fn scheduling_delay_pushes_below_the_processing_rate() {
        let mut e = PidRateEstimator::new(PidConfig::default());
        e.update(1000, 1000, SEC, Duration::ZERO, SEC);
        let r = e
            .update(2000, 1000, SEC, Duration::from_secs(2), SEC)
            .unwrap();
        // error 0, historical error 2 s * 1000 rec/s / 1 s = 2000: I term 400.
        assert!((r - 600.0).abs() < 1e-6, "{r}");
    }

    #[test]
    fn never_drops_below_the_minimum_and_ignores_empty_batches() {
        let mut e = PidRateEstimator::new(PidConfig::default());
        e.update(1000, 10, Duration::from_secs(100), Duration::ZERO, SEC);
        let r = e
            .update(
                2000,
                10,
                Duration::from_secs(100),
                Duration::from_secs(50),
                SEC,
            )
            .unwrap();
        assert_eq!(r, 100.0);
        assert_eq!(e.update(3000, 0, SEC, Duration::ZERO, SEC), Some(100.0));
    }
}
