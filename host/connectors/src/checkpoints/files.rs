//! Named files on object storage outside any checkpoint: what the nodes of
//! a `weir serve` cluster share (component bytes by their SHA-256), with
//! the same client, retries and write-once puts as checkpoints.

use std::sync::Arc;

use super::object::Objects;
use weir_engine::CheckpointError;

pub struct ObjectFiles(Arc<Objects>);

impl ObjectFiles {
    /// `url`: `scheme://bucket[/prefix]`; credentials and endpoint from the
    /// environment, as checkpoints take them.
    pub fn open(url: &str) -> Result<ObjectFiles, CheckpointError> {
        Ok(ObjectFiles(Arc::new(Objects::open(url, &[])?)))
    }

    /// The file's bytes, `None` if absent.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, CheckpointError> {
        self.0.read(path)
    }

    /// Write once: a file that exists with other bytes is a
    /// [`CheckpointError::Conflict`]; with the same bytes it is left as is.
    pub fn create(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        self.0.create(path, bytes)
    }

    /// Every file under `dir`, at any depth.
    pub fn remove_all(&self, dir: &str) -> Result<(), CheckpointError> {
        let mut dirs = vec![dir.trim_end_matches('/').to_string()];
        while let Some(d) = dirs.pop() {
            let listed = self.0.list(&d)?;
            for o in &listed.objects {
                self.0.delete(&self.0.relative(&o.location))?;
            }
            dirs.extend(listed.common_prefixes.iter().map(|p| self.0.relative(p)));
        }
        Ok(())
    }

    pub fn url(&self) -> &str {
        self.0.url()
    }
}
