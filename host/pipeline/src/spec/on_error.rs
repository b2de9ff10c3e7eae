//! `on-error`: what becomes of a record a transform or a window cannot take.

/// The pipeline's error policy (see [`weir_engine::ErrorPolicy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    Fail,
    Skip,
    DeadLetter,
}

impl OnError {
    /// `section.on-error` as written (default "skip").
    pub(super) fn parse(section: &str, text: Option<&str>) -> Result<OnError, String> {
        Ok(match text.unwrap_or("skip") {
            "skip" => OnError::Skip,
            "fail" => OnError::Fail,
            "dead-letter" => OnError::DeadLetter,
            p => {
                return Err(format!(
                    "{section}.on-error: `{p}` (use \"skip\", \"fail\" or \"dead-letter\")"
                ));
            }
        })
    }

    /// The engine's policy; dead letters name `producer` (a component's
    /// hash, or a host window's identity) as what refused them.
    pub fn policy(self, producer: String) -> weir_engine::ErrorPolicy {
        match self {
            OnError::Fail => weir_engine::ErrorPolicy::Fail,
            OnError::Skip => weir_engine::ErrorPolicy::Skip,
            OnError::DeadLetter => weir_engine::ErrorPolicy::DeadLetter {
                component: producer.into(),
            },
        }
    }
}
