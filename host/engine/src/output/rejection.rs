//! Why an input record became no output: the refusal kinds progress and
//! `/metrics` count, so a user can tell a buggy guest from bad data.

/// An input record the transform refused, with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub index: u32,
    pub kind: RejectKind,
    pub reason: String,
}

/// Why a record was refused: by the guest's own verdict, or because
/// processing it broke the sandbox's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectKind {
    /// The guest returned a bad-record error for it.
    BadRecord,
    /// The guest trapped on it (panic, unreachable, stack overflow...).
    Trap,
    /// The guest ran past its CPU deadline on it.
    Deadline,
    /// The guest ran out of its memory limit on it.
    OutOfMemory,
    /// Its output broke the amplification or output-size limit.
    OutputLimit,
    /// It is larger than the pipeline's record size limit.
    TooLarge,
    /// Its event time is older than the watermark (`late = "reject"`).
    Late,
    /// The guest burned its fuel budget on it.
    Fuel,
}

impl RejectKind {
    pub const ALL: [RejectKind; 8] = [
        RejectKind::BadRecord,
        RejectKind::Trap,
        RejectKind::Deadline,
        RejectKind::OutOfMemory,
        RejectKind::OutputLimit,
        RejectKind::TooLarge,
        RejectKind::Late,
        RejectKind::Fuel,
    ];

    pub fn of(e: &crate::transform::TransformError) -> RejectKind {
        use crate::transform::TransformError as E;
        match e {
            E::Deadline { .. } => RejectKind::Deadline,
            E::OutOfFuel { .. } => RejectKind::Fuel,
            E::OutOfMemory { .. } | E::StateLimit { .. } | E::TenantMemory { .. } => {
                RejectKind::OutOfMemory
            }
            E::BadRecord { .. } => RejectKind::BadRecord,
            _ => RejectKind::Trap,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RejectKind::BadRecord => "bad-record",
            RejectKind::Trap => "trap",
            RejectKind::Deadline => "deadline",
            RejectKind::OutOfMemory => "out-of-memory",
            RejectKind::OutputLimit => "output-limit",
            RejectKind::TooLarge => "too-large",
            RejectKind::Late => "late",
            RejectKind::Fuel => "fuel",
        }
    }
}

/// How many records a batch refused, by why: what progress and `/metrics`
/// report, so a user can tell a buggy guest (traps) from bad data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rejections([u64; RejectKind::ALL.len()]);

impl Rejections {
    pub fn count(&mut self, kind: RejectKind) {
        self.0[kind as usize] += 1;
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The non-zero counts, by [`RejectKind::as_str`].
    pub fn by_kind(&self) -> std::collections::BTreeMap<String, u64> {
        RejectKind::ALL
            .iter()
            .filter(|k| self.0[**k as usize] > 0)
            .map(|k| (k.as_str().to_string(), self.0[*k as usize]))
            .collect()
    }
}

impl std::ops::AddAssign for Rejections {
    fn add_assign(&mut self, o: Rejections) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_add_up_by_kind() {
        let mut a = Rejections::default();
        a.count(RejectKind::Trap);
        a.count(RejectKind::BadRecord);
        let mut b = Rejections::default();
        b.count(RejectKind::Trap);
        a += b;
        assert_eq!(a.total(), 3);
        let by = a.by_kind();
        assert_eq!(by.get("trap"), Some(&2));
        assert_eq!(by.get("bad-record"), Some(&1));
        assert_eq!(by.len(), 2, "zero kinds are left out: {by:?}");
    }
}
