//! Where a pipeline's checkpoint lives: a local directory (the file store
//! of [`weir_engine::LocalCheckpointStore`]) or an object store chosen by URL
//! (`s3://bucket/prefix`, `gs://...`, `az://...`), so that processes on
//! several machines share one checkpoint (group mode) and a machine's disk
//! is not the only copy.

#[cfg(feature = "object-store")]
mod files;
#[cfg(feature = "object-store")]
mod lease;
#[cfg(feature = "object-store")]
mod object;

use std::path::PathBuf;
use std::sync::Arc;

#[cfg(feature = "object-store")]
pub use files::ObjectFiles;
#[cfg(feature = "object-store")]
pub use object::ObjectCheckpointStore;

use weir_engine::{CheckpointError, CheckpointStore, LocalCheckpointStore};

/// A checkpoint location as written in a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointLocation {
    /// A directory (relative paths are resolved against the spec's).
    Dir(PathBuf),
    /// An object store URL: `s3://`, `gs://` or `az://` (also `s3a://`,
    /// `abfs://`...), bucket or container then an optional prefix.
    Url(String),
}

impl CheckpointLocation {
    /// `s3://b/p` and other URLs with a scheme; anything else is a path
    /// (`file:///x` too, as the path `/x`).
    pub fn parse(text: &str, base: &std::path::Path) -> Self {
        if let Some(path) = text.strip_prefix("file://") {
            return CheckpointLocation::Dir(base.join(path));
        }
        match text.split_once("://") {
            Some((scheme, _))
                if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric()) =>
            {
                CheckpointLocation::Url(text.to_string())
            }
            _ => CheckpointLocation::Dir(base.join(text)),
        }
    }

    /// The directory, for what only works on local checkpoints.
    pub fn dir(&self) -> Option<&std::path::Path> {
        match self {
            CheckpointLocation::Dir(d) => Some(d),
            CheckpointLocation::Url(_) => None,
        }
    }

    /// Open the store; object stores read their credentials and endpoint
    /// from the usual environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
    pub fn open(&self) -> Result<Arc<dyn CheckpointStore>, CheckpointError> {
        Ok(match self {
            CheckpointLocation::Dir(d) => Arc::new(LocalCheckpointStore::open(d)?),
            #[cfg(feature = "object-store")]
            CheckpointLocation::Url(u) => Arc::new(ObjectCheckpointStore::open(u, &[])?),
            #[cfg(not(feature = "object-store"))]
            CheckpointLocation::Url(u) => {
                return Err(CheckpointError::Mismatch(format!(
                    "checkpoint {u}: this weir was built without object storage (cargo feature `object-store`)"
                )));
            }
        })
    }
}

impl std::fmt::Display for CheckpointLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckpointLocation::Dir(d) => write!(f, "{}", d.display()),
            CheckpointLocation::Url(u) => f.write_str(u),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn urls_and_paths_are_told_apart() {
        let base = Path::new("/specs");
        assert_eq!(
            CheckpointLocation::parse("s3://bucket/a/b", base),
            CheckpointLocation::Url("s3://bucket/a/b".into())
        );
        assert_eq!(
            CheckpointLocation::parse("checkpoints/x", base),
            CheckpointLocation::Dir("/specs/checkpoints/x".into())
        );
        assert_eq!(
            CheckpointLocation::parse("/abs", base),
            CheckpointLocation::Dir("/abs".into())
        );
        assert_eq!(
            CheckpointLocation::parse("file:///data/c", base),
            CheckpointLocation::Dir("/data/c".into())
        );
    }
}
