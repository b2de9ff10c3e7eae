//! How the control plane's Kafka clients report: into `tracing`, with what
//! the protocol makes routine at debug level (a config writer fenced by
//! another node taking its turn, a reader at the end of its partition).

use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

fn routine(text: &str) -> bool {
    text.contains("fenced") || text.contains("old epoch") || text.contains("end of partition")
}

pub fn log(level: RDKafkaLogLevel, fac: &str, message: &str) {
    if routine(message) {
        tracing::debug!("librdkafka: {fac}: {message}");
        return;
    }
    match level {
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => {
            tracing::error!("cluster: librdkafka: {fac}: {message}")
        }
        RDKafkaLogLevel::Warning => tracing::warn!("cluster: librdkafka: {fac}: {message}"),
        _ => tracing::debug!("cluster: librdkafka: {fac}: {message}"),
    }
}

pub fn error(e: KafkaError, reason: &str) {
    let code = e.rdkafka_error_code();
    if matches!(
        code,
        Some(RDKafkaErrorCode::PartitionEOF | RDKafkaErrorCode::Fenced)
    ) || routine(reason)
    {
        tracing::debug!("cluster: Kafka: {e}: {reason}");
    } else {
        tracing::warn!("cluster: Kafka: {e}: {reason}");
    }
}

/// The context of the control plane's plain clients.
pub struct Quiet;

impl ClientContext for Quiet {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        log(level, fac, message)
    }

    fn error(&self, e: KafkaError, reason: &str) {
        error(e, reason)
    }
}

impl ConsumerContext for Quiet {}

impl rdkafka::producer::ProducerContext for Quiet {
    type DeliveryOpaque = ();

    fn delivery(&self, r: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = r {
            tracing::warn!("cluster: a status report was not delivered: {e}");
        }
    }
}
