//! Kafka source and sink (librdkafka through rdkafka).
//!
//! The source follows Spark's direct stream: the driver decides each batch's
//! offset range per partition from the brokers' watermarks, partitions are
//! `assign()`ed (never group-subscribed), and offsets live in weir's
//! checkpoint. The sink writes each batch (or epoch) in one Kafka transaction
//! and records the batch id inside that same transaction, so a batch re-run
//! after a crash is recognised and not written twice.

mod consumer;
mod continuous;
mod group;
mod offsets;
mod record_size;
mod sink;
mod source;
mod starting;
mod watch;

use std::time::{Duration, Instant};

use std::sync::Mutex;

use rdkafka::ClientConfig;
use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;
use rdkafka::message::DeliveryResult;
use rdkafka::producer::ProducerContext;

pub use group::KafkaGroupMember;
pub use offsets::KafkaOffsets;
pub use sink::KafkaSink;
pub use source::KafkaSource;

use weir_engine::ConnectorError;

/// How long one metadata or watermark request may take before it is retried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A client configuration: weir's settings first, then the pipeline's
/// pass-through properties (security, tuning), which may override them.
fn client_config(
    bootstrap: &str,
    ours: &[(&str, &str)],
    properties: &[(String, String)],
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    // librdkafka's own log lines would go to stderr; route them to tracing.
    c.set_log_level(rdkafka::config::RDKafkaLogLevel::Warning);
    for (k, v) in ours {
        c.set(*k, *v);
    }
    for (k, v) in properties {
        c.set(k, v);
    }
    c
}

/// Routes librdkafka's logs and errors into `tracing` at their level
/// (end-of-partition notices are expected, not errors) and remembers the
/// first failed delivery, which a producer must not ignore.
#[derive(Default)]
pub(crate) struct Context {
    failed_delivery: Mutex<Option<String>>,
    /// The last connection-level error logged and when: while a cluster is
    /// down every client repeats them several times a second.
    last_error: Mutex<Option<(String, Instant)>>,
}

impl Context {
    /// The first delivery failure since the last call, if any.
    pub(crate) fn take_failure(&self) -> Option<String> {
        self.failed_delivery.lock().expect("not poisoned").take()
    }
}

impl ClientContext for Context {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => tracing::error!("librdkafka {fac}: {message}"),
            RDKafkaLogLevel::Warning => tracing::warn!("librdkafka {fac}: {message}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!("librdkafka {fac}: {message}")
            }
            RDKafkaLogLevel::Debug => tracing::debug!("librdkafka {fac}: {message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let eof = matches!(&error, KafkaError::PartitionEOF(_))
            || reason.contains("reached end of partition");
        if eof {
            tracing::debug!("librdkafka: {reason}");
            return;
        }
        // The same error kind again within 10 s is a repeat: debug level.
        let kind = error.to_string();
        let mut last = self.last_error.lock().expect("not poisoned");
        let repeat = last
            .as_ref()
            .is_some_and(|(k, at)| *k == kind && at.elapsed() < Duration::from_secs(10));
        if repeat {
            tracing::debug!("librdkafka: {error}: {reason}");
        } else {
            tracing::warn!("librdkafka: {error}: {reason}");
            *last = Some((kind, Instant::now()));
        }
    }
}

impl ConsumerContext for Context {}

impl ProducerContext for Context {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = result {
            let mut f = self.failed_delivery.lock().expect("not poisoned");
            f.get_or_insert_with(|| e.to_string());
        }
    }
}

pub(crate) type Consumer = rdkafka::consumer::BaseConsumer<Context>;
pub(crate) type Producer = rdkafka::producer::BaseProducer<Context>;

fn create<T: rdkafka::config::FromClientConfigAndContext<Context>>(
    config: &ClientConfig,
    what: &str,
) -> Result<T, ConnectorError> {
    config
        .create_with_context(Context::default())
        .map_err(kafka_err(what))
}

/// Watermarks of one partition. A failure also refreshes the client's
/// metadata for the topic: after a broker restart librdkafka can keep
/// answering "unknown partition" from a stale cache until it is refreshed.
fn watermarks(consumer: &Consumer, topic: &str, partition: i32) -> Result<(i64, i64), KafkaError> {
    use rdkafka::consumer::Consumer as _;
    let r = consumer.fetch_watermarks(topic, partition, REQUEST_TIMEOUT);
    if r.is_err() {
        let _ = consumer.fetch_metadata(Some(topic), REQUEST_TIMEOUT);
    }
    r
}

fn kafka_err(context: impl std::fmt::Display) -> impl FnOnce(KafkaError) -> ConnectorError {
    move |e| ConnectorError(format!("{context}: {e}"))
}

/// Run `op` until it succeeds, backing off exponentially (100 ms to 5 s)
/// while the brokers are unreachable, logging each retry, and giving up
/// with the last error after `timeout`.
fn with_retry<T>(
    what: &str,
    timeout: Duration,
    mut op: impl FnMut() -> Result<T, KafkaError>,
) -> Result<T, ConnectorError> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(100);
    loop {
        match op() {
            Ok(v) => return Ok(v),
            Err(e) if started.elapsed() + backoff < timeout && retriable(&e) => {
                tracing::warn!(
                    "kafka: {what} failed ({e}); retrying in {backoff:?} (giving up after {timeout:?})"
                );
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
            Err(e) => {
                return Err(ConnectorError(format!(
                    "kafka: {what} failed after {:.1?}: {e}",
                    started.elapsed()
                )));
            }
        }
    }
}

/// Errors worth retrying: the broker is down, slow or electing a leader.
/// Configuration and authorisation errors are not.
fn retriable(e: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    match e {
        KafkaError::Transaction(t) => t.is_retriable(),
        KafkaError::ClientConfig(..) | KafkaError::ClientCreation(_) => false,
        _ => !matches!(
            e.rdkafka_error_code(),
            Some(
                C::TopicAuthorizationFailed
                    | C::GroupAuthorizationFailed
                    | C::ClusterAuthorizationFailed
                    | C::TransactionalIdAuthorizationFailed
                    | C::Authentication
                    | C::InvalidArgument
                    | C::Fenced
                    | C::ProducerFenced
                    | C::InvalidConfig
            )
        ),
    }
}
