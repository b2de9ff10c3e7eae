//! Kafka: the options a pipeline gives its Kafka source, sink and consumer
//! group (always built, so every weir validates Kafka pipelines alike), and
//! the connectors themselves on librdkafka (cargo feature `kafka`).

#[cfg(feature = "kafka")]
mod librdkafka;
mod options;

#[cfg(feature = "kafka")]
pub use librdkafka::*;
pub use options::{
    ConsumerGroup, KafkaSinkOptions, KafkaSourceOptions, KafkaStarting, KafkaTopics,
};
