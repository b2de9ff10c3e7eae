//! Source options: starting offsets, new partitions, data loss, backpressure.
