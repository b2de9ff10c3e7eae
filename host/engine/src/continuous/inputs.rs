//! A continuous query's sources as one row of readers: source 0's
//! partitions first, then source 1's, and so on. An epoch's positions are
//! one flat list in that order; the offsets log keeps one range per source,
//! as in micro-batch mode, so a checkpoint reads the same either way.

use super::source_err;
use crate::connector::{ContinuousSource, Offset, PartitionReader};
use crate::options::EngineError;

pub(crate) struct Inputs {
    sources: Vec<Box<dyn ContinuousSource>>,
    /// The first reader of each source, then the number of readers.
    starts: Vec<usize>,
}

impl Inputs {
    pub(crate) fn new(sources: Vec<Box<dyn ContinuousSource>>) -> Inputs {
        let mut starts = vec![0];
        for s in &sources {
            starts.push(starts.last().expect("one") + s.partition_count() as usize);
        }
        Inputs { sources, starts }
    }

    pub(crate) fn len(&self) -> usize {
        self.sources.len()
    }

    /// Readers of all sources together.
    pub(crate) fn readers(&self) -> u32 {
        *self.starts.last().expect("one") as u32
    }

    pub(crate) fn partitions(&self, source: usize) -> u32 {
        self.sources[source].partition_count()
    }

    /// Reader `r`'s (source, partition of that source).
    pub(crate) fn locate(&self, r: u32) -> (usize, u32) {
        let r = r as usize;
        let s = self.starts.partition_point(|&start| start <= r) - 1;
        (s, (r - self.starts[s]) as u32)
    }

    pub(crate) fn description(&self, source: usize) -> String {
        self.sources[source].description()
    }

    /// The sources' checkpoint identities.
    pub(crate) fn identities(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.identity()).collect()
    }

    /// Reader `r`'s source description.
    pub(crate) fn name_of(&self, r: u32) -> String {
        self.description(self.locate(r).0)
    }

    pub(crate) fn reader(&self, r: u32) -> Result<Box<dyn PartitionReader>, EngineError> {
        let (s, p) = self.locate(r);
        self.sources[s]
            .reader(p)
            .map_err(source_err(&self.description(s)))
    }

    /// Source `source`'s share of flat `positions`.
    pub(crate) fn slice<'a>(&self, source: usize, positions: &'a [u64]) -> &'a [u64] {
        &positions[self.starts[source]..self.starts[source + 1]]
    }

    /// Flat `positions` as one offset per source.
    pub(crate) fn to_offsets(&self, positions: &[u64]) -> Vec<Offset> {
        (0..self.len())
            .map(|s| self.sources[s].to_offset(self.slice(s, positions)))
            .collect()
    }

    /// One offset per source as flat positions.
    pub(crate) fn positions(&self, offsets: &[Offset]) -> Result<Vec<u64>, EngineError> {
        if offsets.len() != self.len() {
            return Err(EngineError::Checkpoint(
                crate::checkpoint::CheckpointError::Mismatch(format!(
                    "the checkpoint records {} source(s) and the pipeline reads {}",
                    offsets.len(),
                    self.len()
                )),
            ));
        }
        let mut flat = Vec::with_capacity(self.readers() as usize);
        for (s, o) in offsets.iter().enumerate() {
            flat.extend(
                self.sources[s]
                    .positions(o)
                    .map_err(source_err(&self.description(s)))?,
            );
        }
        Ok(flat)
    }

    /// Where a new query starts reading source `s`.
    pub(crate) fn initial_offset(
        &mut self,
        s: usize,
    ) -> Result<Offset, crate::connector::ConnectorError> {
        let source = &mut self.sources[s];
        let p = source.initial_positions()?;
        Ok(source.to_offset(&p))
    }

    /// Every source's newest positions, flat; `None` when one cannot tell.
    pub(crate) fn latest_positions(&mut self) -> Option<Vec<u64>> {
        let mut flat = Vec::new();
        for s in &mut self.sources {
            flat.extend(s.latest_positions()?);
        }
        Some(flat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connector::ConnectorError;

    struct Parts(u32);
    impl ContinuousSource for Parts {
        fn identity(&self) -> String {
            format!("parts {}", self.0)
        }
        fn partition_count(&self) -> u32 {
            self.0
        }
        fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError> {
            Ok(vec![0; self.0 as usize])
        }
        fn reader(&self, _: u32) -> Result<Box<dyn PartitionReader>, ConnectorError> {
            Err(ConnectorError("no reader".into()))
        }
        fn positions(&self, o: &Offset) -> Result<Vec<u64>, ConnectorError> {
            o.read()
        }
    }

    #[test]
    fn readers_are_numbered_source_after_source() {
        let i = Inputs::new(vec![Box::new(Parts(2)), Box::new(Parts(3))]);
        assert_eq!(i.readers(), 5);
        let located: Vec<_> = (0..5).map(|r| i.locate(r)).collect();
        assert_eq!(located, [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]);
        let offsets = i.to_offsets(&[1, 2, 3, 4, 5]);
        assert_eq!(offsets, [Offset::of(&[1, 2]), Offset::of(&[3, 4, 5])]);
        assert_eq!(i.positions(&offsets).unwrap(), [1, 2, 3, 4, 5]);
        assert!(i.positions(&offsets[..1]).is_err());
        assert_eq!(i.name_of(3), "parts 3");
    }
}
