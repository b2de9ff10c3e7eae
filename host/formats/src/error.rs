//! Two kinds of failure: a record that cannot be decoded or encoded (it goes
//! to the pipeline's error policy with the reason) and a schema source that
//! cannot answer (retried; no record is judged while it is down).

/// Why one record could not be decoded or encoded: goes to the pipeline's
/// error policy, one line a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RecordFault(pub String);

/// Why a schema could not be had.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The schema source does not know this id (a record naming it is bad).
    #[error("schema id {0} is not known to {1}")]
    UnknownId(u32, String),
    /// A schema file or a registry's answer is not a schema weir can use.
    #[error("{0}")]
    Invalid(String),
    /// The registry could not be reached or answered with a server error;
    /// the caller retries.
    #[error("schema registry {url}: {message}")]
    Unavailable { url: String, message: String },
    /// The registry refused a schema (incompatible with the subject's
    /// versions, or malformed).
    #[error("schema registry {url} refused the schema for subject `{subject}`: {message}")]
    Refused {
        url: String,
        subject: String,
        message: String,
    },
}
