//! Broker outages: stopped at start and mid-run.
