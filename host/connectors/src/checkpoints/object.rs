//! A checkpoint on object storage (S3 and S3-compatible servers, GCS,
//! Azure Blob), through the `object_store` crate.
//!
//! Objects are written whole (an object store has no torn writes), so a
//! file's atomic replace is a plain put. Write-once files use the service's
//! conditional put (S3 `If-None-Match: *`), so two writers of one
//! `offsets/N` or state snapshot cannot both succeed. The crate is async;
//! this store owns a small runtime and waits on it from the engine's
//! threads (which may themselves be a service's runtime threads, where
//! `block_on` would panic: work is spawned and waited for on a channel).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig, UpdateVersion,
};

use super::lease::Lease;
use weir_engine::{CheckpointError, CheckpointLock, CheckpointStore};

/// How long the client retries a request (5xx, timeouts) by itself.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a request that could not reach the store at all (connection
/// refused or reset, no answer) is tried again, backing off from 100 ms to
/// 5 s and logging each retry, before the run fails: a network outage of
/// this long is ridden out, as the Kafka connectors ride out a broker's.
const OUTAGE_TIMEOUT: Duration = Duration::from_secs(600);

/// Whether a failed request may simply be sent again: the store was not
/// reached or did not answer. What the store answered (absent, exists,
/// changed, refused) is final.
fn unreachable(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::Generic { .. })
}

pub struct ObjectCheckpointStore(Arc<Objects>);

/// An object's bytes and its etag (the version a conditional put names).
pub(super) type Tagged = (Vec<u8>, Option<String>);

/// The bucket and its runtime, shared with the lease's renewing thread.
pub(super) struct Objects {
    url: String,
    store: Arc<dyn ObjectStore>,
    /// Key prefix of every file, empty or ending in `/`.
    prefix: String,
    runtime: Option<tokio::runtime::Runtime>,
}

/// A request's failure, for `CheckpointError`'s I/O variant.
fn failed(e: object_store::Error) -> std::io::Error {
    let kind = match &e {
        object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => std::io::ErrorKind::PermissionDenied,
        _ => std::io::ErrorKind::Other,
    };
    std::io::Error::new(kind, e.to_string())
}

impl ObjectCheckpointStore {
    /// `url`: `scheme://bucket[/prefix]`. `options` override the
    /// environment's settings by their `object_store` names (for example
    /// `aws_endpoint`, `aws_allow_http`).
    pub fn open(url: &str, options: &[(&str, &str)]) -> Result<Self, CheckpointError> {
        Ok(ObjectCheckpointStore(Arc::new(Objects::open(
            url, options,
        )?)))
    }
}

#[cfg(test)]
impl ObjectCheckpointStore {
    pub(super) fn over(objects: Arc<Objects>) -> Self {
        ObjectCheckpointStore(objects)
    }
}

impl Objects {
    /// The bucket of `url` (see [`ObjectCheckpointStore::open`]).
    pub(super) fn open(url: &str, options: &[(&str, &str)]) -> Result<Objects, CheckpointError> {
        let bad =
            |problem: String| CheckpointError::Mismatch(format!("checkpoint {url}: {problem}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("not a URL".into()))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket or container after the scheme".into()));
        }
        let retry = RetryConfig {
            retry_timeout: RETRY_TIMEOUT,
            ..RetryConfig::default()
        };
        let store: Arc<dyn ObjectStore> = match scheme {
            "s3" | "s3a" => {
                use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
                let mut b = AmazonS3Builder::from_env()
                    .with_url(format!("s3://{bucket}"))
                    .with_retry(retry);
                for (k, v) in options {
                    let key: AmazonS3ConfigKey = k.parse().map_err(|e| bad(format!("{e}")))?;
                    b = b.with_config(key, *v);
                }
                Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
            }
            "gs" => {
                use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
                let mut b = GoogleCloudStorageBuilder::from_env()
                    .with_url(format!("gs://{bucket}"))
                    .with_retry(retry);
                for (k, v) in options {
                    let key: GoogleConfigKey = k.parse().map_err(|e| bad(format!("{e}")))?;
                    b = b.with_config(key, *v);
                }
                Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
            }
            "az" | "azure" | "abfs" | "abfss" => {
                use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
                let mut b = MicrosoftAzureBuilder::from_env()
                    .with_url(format!("az://{bucket}"))
                    .with_retry(retry);
                for (k, v) in options {
                    let key: AzureConfigKey = k.parse().map_err(|e| bad(format!("{e}")))?;
                    b = b.with_config(key, *v);
                }
                Arc::new(b.build().map_err(|e| bad(e.to_string()))?)
            }
            other => {
                return Err(bad(format!(
                    "unsupported scheme `{other}` (use a directory, s3://, gs:// or az://)"
                )));
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("weir-object-store")
            .enable_all()
            .build()
            .map_err(|e| CheckpointError::Io {
                path: url.to_string(),
                err: e,
            })?;
        Ok(Objects::over(url, store, prefix, runtime))
    }

    pub(super) fn over(
        url: &str,
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        runtime: tokio::runtime::Runtime,
    ) -> Objects {
        let prefix = prefix.trim_matches('/');
        Objects {
            url: url.trim_end_matches('/').to_string(),
            store,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            runtime: Some(runtime),
        }
    }

    fn key(&self, path: &str) -> Path {
        Path::from(format!("{}{path}", self.prefix))
    }

    fn io(&self, path: &str, e: object_store::Error) -> CheckpointError {
        CheckpointError::Io {
            path: format!("{}/{path}", self.url),
            err: failed(e),
        }
    }

    /// Run `fut` on the store's runtime and wait for it.
    pub(super) fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = self.runtime.as_ref().expect("runtime lives until drop");
        runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .expect("the object store's runtime ran the request")
    }

    /// `op` until it reaches the store, for at most [`OUTAGE_TIMEOUT`].
    /// A conditional put sent again after a lost answer may find its own
    /// first attempt landed: callers check (`create`, `update`).
    fn retried<T>(
        &self,
        what: &str,
        path: &str,
        mut op: impl FnMut() -> Result<T, object_store::Error>,
    ) -> Result<T, object_store::Error> {
        let started = std::time::Instant::now();
        let mut backoff = Duration::from_millis(100);
        loop {
            match op() {
                Err(e) if unreachable(&e) && started.elapsed() + backoff < OUTAGE_TIMEOUT => {
                    tracing::warn!(
                        "checkpoint {}: {what} {path} failed ({e}); retrying in {backoff:?} (giving up after {OUTAGE_TIMEOUT:?})",
                        self.url
                    );
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                other => return other,
            }
        }
    }

    /// Put `bytes` at `path` under `mode`; the new object's etag.
    pub(super) fn put(
        &self,
        path: &str,
        bytes: Vec<u8>,
        mode: PutMode,
    ) -> Result<Option<String>, object_store::Error> {
        self.retried("writing", path, || {
            let (store, key) = (self.store.clone(), self.key(path));
            let (bytes, mode) = (bytes.clone(), mode.clone());
            self.run(async move {
                let opts = PutOptions {
                    mode,
                    ..PutOptions::default()
                };
                let r = store.put_opts(&key, PutPayload::from(bytes), opts).await?;
                Ok(r.e_tag)
            })
        })
    }

    /// The object's bytes and etag, `None` if absent.
    pub(super) fn get(&self, path: &str) -> Result<Option<Tagged>, object_store::Error> {
        self.retried("reading", path, || {
            let (store, key) = (self.store.clone(), self.key(path));
            self.run(async move {
                match store.get(&key).await {
                    Ok(r) => {
                        let tag = r.meta.e_tag.clone();
                        Ok(Some((r.bytes().await?.to_vec(), tag)))
                    }
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            })
        })
    }

    /// Replace the object only if it is still at `e_tag`. Refused because
    /// it changed, it is read back: our own bytes there mean an attempt of
    /// this call landed before its answer was lost.
    pub(super) fn update(
        &self,
        path: &str,
        bytes: Vec<u8>,
        e_tag: Option<String>,
    ) -> Result<Option<String>, object_store::Error> {
        let mode = PutMode::Update(UpdateVersion {
            e_tag,
            version: None,
        });
        match self.put(path, bytes.clone(), mode) {
            Err(e @ object_store::Error::Precondition { .. }) => match self.get(path)? {
                Some((now, tag)) if now == bytes => Ok(tag),
                _ => Err(e),
            },
            other => other,
        }
    }

    pub(super) fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics on a runtime's thread.
        if let Some(r) = self.runtime.take() {
            r.shutdown_background();
        }
    }
}

impl CheckpointStore for ObjectCheckpointStore {
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, CheckpointError> {
        self.0.read(path)
    }

    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        self.0.write(path, bytes)
    }

    fn create(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        self.0.create(path, bytes)
    }

    fn list_numbered(&self, dir: &str) -> Result<Vec<u64>, CheckpointError> {
        self.0.list_numbered(dir)
    }

    fn delete(&self, path: &str) -> Result<(), CheckpointError> {
        self.0.delete(path)
    }

    fn location(&self) -> String {
        self.0.url.clone()
    }

    /// A lease object (`lock`) renewed in the background; see `Lease`.
    fn lock(&self) -> Result<CheckpointLock, CheckpointError> {
        Ok(CheckpointLock::new(Lease::acquire(
            self.0.clone(),
            super::lease::TTL,
        )?))
    }
}

impl Objects {
    pub(super) fn read(&self, path: &str) -> Result<Option<Vec<u8>>, CheckpointError> {
        Ok(self
            .get(path)
            .map_err(|e| self.io(path, e))?
            .map(|(bytes, _)| bytes))
    }

    pub(super) fn write(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        self.put(path, bytes.to_vec(), PutMode::Overwrite)
            .map(|_| ())
            .map_err(|e| self.io(path, e))
    }

    /// A conditional put; when it loses, the object is read back: the same
    /// bytes are a retried request of ours that had succeeded.
    pub(super) fn create(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        match self.put(path, bytes.to_vec(), PutMode::Create) {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                match self.get(path).map_err(|e| self.io(path, e))? {
                    Some((existing, _)) if existing == bytes => Ok(()),
                    _ => Err(CheckpointError::Conflict {
                        path: format!("{}/{path}", self.url),
                    }),
                }
            }
            Err(e) => Err(self.io(path, e)),
        }
    }

    /// The objects and the "directories" right under `dir`.
    pub(super) fn list(&self, dir: &str) -> Result<object_store::ListResult, CheckpointError> {
        self.retried("listing", dir, || {
            let (store, key) = (self.store.clone(), self.key(dir.trim_end_matches('/')));
            self.run(async move { store.list_with_delimiter(Some(&key)).await })
        })
        .map_err(|e| self.io(dir, e))
    }

    /// `location` (as listed) relative to the prefix.
    pub(super) fn relative(&self, location: &Path) -> String {
        let full = location.as_ref();
        full.strip_prefix(self.prefix.as_str())
            .unwrap_or(full)
            .to_string()
    }

    /// Numbered objects and numbered "directories" (prefixes with objects
    /// under them), as a local directory lists both: a stateful query
    /// finds its state partitions (`state/<op>/<n>/...`) this way.
    pub(super) fn list_numbered(&self, dir: &str) -> Result<Vec<u64>, CheckpointError> {
        let listed = self.list(dir)?;
        let objects = listed.objects.iter().map(|o| &o.location);
        let mut out: Vec<u64> = objects
            .chain(&listed.common_prefixes)
            .filter_map(|p| p.filename().and_then(|n| n.parse().ok()))
            .collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    pub(super) fn delete(&self, path: &str) -> Result<(), CheckpointError> {
        let deleted = self.retried("deleting", path, || {
            let (store, key) = (self.store.clone(), self.key(path));
            self.run(async move { store.delete(&key).await })
        });
        match deleted {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.io(path, e)),
        }
    }
}
