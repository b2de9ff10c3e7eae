//! End-to-end tests: real guests built from source, run through the real
//! host runtime and the real `weir` binary.

use weir_testkit as testkit;

mod adversarial;
mod bad_components;
mod cli;
#[cfg(feature = "kafka")]
mod cluster;
mod continuous;
mod examples;
mod golden_languages;
mod guest_errors;
mod guest_test;
#[cfg(feature = "kafka")]
mod kafka;
mod microbatch;
mod misbehaving_guests;
mod network;
mod polyglot;
mod polyglot_joins;
mod power;
mod replay;
mod scaffolds;
mod sdk_records;
mod serve;
mod stateful;
mod tenants;
