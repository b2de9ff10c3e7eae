//! Prints output values to stdout, one per line (for demos; not exactly-once).

use std::io::Write;

use weir_engine::{ConnectorError, Sink, SinkBatch};

#[derive(Default)]
pub struct ConsoleSink;

impl Sink for ConsoleSink {
    fn description(&self) -> String {
        "console".into()
    }

    fn add_batch(&mut self, _batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let mut out = std::io::stdout().lock();
        let mut rows = 0;
        for o in batch.records() {
            out.write_all(o.value)
                .and_then(|()| out.write_all(b"\n"))
                .map_err(|e| ConnectorError(format!("stdout: {e}")))?;
            rows += 1;
        }
        out.flush()
            .map_err(|e| ConnectorError(format!("stdout: {e}")))?;
        Ok(rows)
    }
}
