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

#[cfg(test)]
impl Objects {
    /// A bucket in memory (object_store's own, with its conditional puts).
    pub(super) fn in_memory(prefix: &str) -> Arc<Objects> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let store = Arc::new(object_store::memory::InMemory::new());
        Arc::new(Objects::over("memory://test", store, prefix, runtime))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_engine::CheckpointStore;

    #[test]
    fn numbered_directories_are_listed_as_a_local_directory_lists_them() {
        let objects = Objects::in_memory("root");
        let cp = super::super::ObjectCheckpointStore::over(objects.clone());
        cp.write("state/0/0/snapshots/1", b"s").unwrap();
        cp.write("state/0/4/deltas/2", b"d").unwrap();
        cp.write("state/0/12", b"a file named like one").unwrap();
        cp.write("state/0/x/deltas/2", b"not numbered").unwrap();
        assert_eq!(cp.list_numbered("state/0").unwrap(), vec![0, 4, 12]);
        let files = ObjectFiles(objects);
        files.create("c/a.wasm", b"a").unwrap();
        files.create("c/a.wasm", b"a").unwrap();
        assert!(files.create("c/a.wasm", b"b").is_err());
        assert_eq!(files.read("c/a.wasm").unwrap().as_deref(), Some(&b"a"[..]));
        files.remove_all("state").unwrap();
        assert!(cp.list_numbered("state/0").unwrap().is_empty());
        assert_eq!(files.read("c/a.wasm").unwrap().as_deref(), Some(&b"a"[..]));
    }
}
