//! Value formats around a pipeline's transform: each input batch of a
//! schema'd source (Avro, JSON Schema) is decoded to JSON before the
//! transform sees it, and each output routed to a schema'd sink is encoded
//! after. Records that do not
//! decode, or outputs that do not fit their sink's schema, are rejected as
//! bad records, so the pipeline's error policy (skip, fail, dead-letter)
//! decides what becomes of them, in every execution mode.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::BuildError;
use crate::spec::{Pipeline, RegistrySpec, SinkSpec};
use weir_engine::state::{FiredTimers, StateContext};
use weir_engine::{
    HeaderRef, OutputBatch, RecordBatch, RecordRef, RejectKind, Rejected, Transform,
    TransformError, TransformOutput,
};
use weir_formats::{
    Decoder, Encoder, FileSchemas, Format, FormatError, RecordFault, RegistryClient,
    RegistryCredentials, SchemaSource,
};

/// How long a batch waits for a registry that does not answer before the
/// pipeline stops (and restarts, under `weir serve`) with nothing committed.
const REGISTRY_PATIENCE: Duration = Duration::from_secs(30);

/// A pipeline's decoders and encoders, shared by its transform instances.
pub(super) struct Codecs {
    schemas: Arc<dyn SchemaSource>,
    /// By source index: its format and reader schema (Avro).
    readers: Vec<(Format, Option<String>)>,
    source_names: Vec<String>,
    /// Encoders by output name (`None`: the default output).
    encoders: Vec<(Option<String>, Encoder)>,
}

impl Codecs {
    /// `None` when no source or sink of `spec` has a decoded format.
    pub(super) fn build(
        spec: &Pipeline,
        source_names: Vec<String>,
    ) -> Result<Option<Arc<Codecs>>, BuildError> {
        let Some(registry) = &spec.registry else {
            return Ok(None);
        };
        let refused = |e: FormatError| BuildError::Refused(e.to_string());
        let schemas: Arc<dyn SchemaSource> = match registry {
            RegistrySpec::Files(files) => Arc::new(FileSchemas::read(files).map_err(refused)?),
            RegistrySpec::Url {
                url,
                credentials,
                auto_register,
                timeout,
            } => Arc::new(RegistryClient::new(
                url,
                credentials.as_ref().map(|(u, p)| RegistryCredentials {
                    username: u.clone(),
                    password: p.clone(),
                }),
                *auto_register,
                *timeout,
            )),
        };
        let read = |path: &std::path::Path| {
            std::fs::read_to_string(path)
                .map_err(|e| BuildError::Refused(format!("reading schema {}: {e}", path.display())))
        };
        let readers = spec
            .source_formats
            .iter()
            .map(|f| Ok((f.format, f.schema.as_deref().map(read).transpose()?)))
            .collect::<Result<Vec<_>, BuildError>>()?;
        // Reader schemas are checked now, not at the first record.
        for (format, reader) in &readers {
            Decoder::new(*format, schemas.clone(), reader.as_deref()).map_err(refused)?;
        }
        let mut encoders = Vec::new();
        for ((route, sink), f) in spec.sinks.iter().zip(&spec.sink_formats) {
            let Some(path) = f.schema.as_deref().filter(|_| f.is_decoded()) else {
                continue;
            };
            let text = read(path)?;
            let topic = match sink {
                SinkSpec::Kafka(k) => k.topic.as_str(),
                SinkSpec::Log { topic, .. } => topic.as_str(),
                _ => unreachable!("validated: value-format applies to log and kafka sinks"),
            };
            let record = Encoder::record_name(f.format, &text);
            let subject = f
                .subject_strategy
                .subject(topic, record.as_deref())
                .map_err(BuildError::Refused)?;
            let encoder = retrying(|| Encoder::new(f.format, schemas.as_ref(), &subject, &text))
                .map_err(refused)?;
            encoders.push((route.clone(), encoder));
        }
        Ok(Some(Arc::new(Codecs {
            schemas,
            readers,
            source_names,
            encoders,
        })))
    }

    /// `inner` behind this pipeline's formats, for batches of `source`.
    pub(super) fn wrap(
        self: &Arc<Self>,
        inner: Box<dyn Transform>,
        source: usize,
    ) -> Box<dyn Transform> {
        let decoders = self
            .readers
            .iter()
            .map(|(format, reader)| {
                Decoder::new(*format, self.schemas.clone(), reader.as_deref())
                    .expect("reader schemas parse: checked when the codecs were built")
            })
            .collect();
        Box::new(Formatted {
            codecs: self.clone(),
            inner,
            decoders,
            source,
        })
    }

    fn encoder(&self, route: Option<&str>) -> Option<&Encoder> {
        self.encoders
            .iter()
            .find(|(r, _)| r.as_deref() == route)
            .map(|(_, e)| e)
    }
}

/// Run `f` until the schema source answers, backing off, for at most
/// [`REGISTRY_PATIENCE`].
fn retrying<T>(mut f: impl FnMut() -> Result<T, FormatError>) -> Result<T, FormatError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match f() {
            Err(FormatError::Unavailable { url, message })
                if start.elapsed() + pause < REGISTRY_PATIENCE =>
            {
                tracing::warn!(
                    "schema registry {url} unavailable ({message}); retrying in {pause:?}"
                );
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

struct Formatted {
    codecs: Arc<Codecs>,
    inner: Box<dyn Transform>,
    decoders: Vec<Option<Decoder>>,
    /// The source of this instance's batches (stateless queries).
    source: usize,
}

/// A batch with its values decoded, and what did not decode.
struct Decoded {
    batch: RecordBatch,
    /// Input index of each decoded record, when some were left out.
    kept: Option<Vec<u32>>,
    faults: Vec<Rejected>,
}

impl Formatted {
    fn decode(
        &mut self,
        source: usize,
        input: &RecordBatch,
    ) -> Result<Option<Decoded>, TransformError> {
        let Some(Some(decoder)) = self.decoders.get_mut(source) else {
            return Ok(None);
        };
        let mut batch = input.empty_like(input.len(), input.byte_len());
        let mut kept = Vec::with_capacity(input.len());
        let mut faults = Vec::new();
        let mut json = Vec::new();
        for (i, r) in input.iter().enumerate() {
            let Some(value) = r.value_opt() else {
                // A tombstone has nothing to decode: it passes as it is.
                batch.push_record(&r);
                kept.push(i as u32);
                continue;
            };
            json.clear();
            let verdict = retrying(|| decoder.decode(value, &mut json)).map_err(|e| {
                TransformError::Fatal(format!(
                    "{e}; the batch is read again when the pipeline restarts"
                ))
            })?;
            match verdict {
                Ok(()) => {
                    batch.push_record(&RecordRef { value: &json, ..r });
                    kept.push(i as u32);
                }
                Err(RecordFault(reason)) => faults.push(Rejected {
                    index: i as u32,
                    kind: RejectKind::BadRecord,
                    reason: format!("value-format: {reason}"),
                }),
            }
        }
        let kept = (!faults.is_empty()).then_some(kept);
        Ok(Some(Decoded {
            batch,
            kept,
            faults,
        }))
    }

    fn call(
        &mut self,
        source: usize,
        input: &RecordBatch,
        run: impl FnOnce(&mut dyn Transform, &RecordBatch) -> Result<TransformOutput, TransformError>,
    ) -> Result<TransformOutput, TransformError> {
        let mut out = match self.decode(source, input)? {
            None => {
                let mut out = run(self.inner.as_mut(), input)?;
                encode(&self.codecs, &mut out, input, true)?;
                return Ok(out);
            }
            Some(d) => {
                let mut out = run(self.inner.as_mut(), &d.batch)?;
                encode(&self.codecs, &mut out, &d.batch, true)?;
                match &d.kept {
                    None => out,
                    Some(kept) => remap(out, kept, &d.batch),
                }
                .with_faults(d.faults)
            }
        };
        out.rejected.sort_by_key(|r| r.index);
        Ok(out)
    }
}

trait WithFaults {
    fn with_faults(self, faults: Vec<Rejected>) -> Self;
}

impl WithFaults for TransformOutput {
    fn with_faults(mut self, faults: Vec<Rejected>) -> Self {
        self.rejected.extend(faults);
        self
    }
}

/// `out`, which answers `decoded`, as the answer to the input it came
/// from: origins and rejections renumbered by `kept`.
fn remap(out: TransformOutput, kept: &[u32], decoded: &RecordBatch) -> TransformOutput {
    let mut batch = OutputBatch::default();
    let mut headers: Vec<HeaderRef<'_>> = Vec::new();
    for o in out.batch.iter(decoded) {
        headers.clear();
        headers.extend(weir_engine::HeaderIter::new(o.headers));
        batch.push(
            kept[o.origin as usize],
            o.output,
            o.key,
            o.value_opt(),
            &headers,
            o.timestamp,
        );
    }
    let rejected = out
        .rejected
        .into_iter()
        .map(|r| Rejected {
            index: kept[r.index as usize],
            ..r
        })
        .collect();
    TransformOutput { batch, rejected }
}

/// Encode every output routed to a schema'd sink. An output that does not fit
/// rejects the input it came from (all of that input's outputs are left
/// out) when `per_input`; for fired timers it stops the pipeline.
fn encode(
    codecs: &Codecs,
    out: &mut TransformOutput,
    input: &RecordBatch,
    per_input: bool,
) -> Result<(), TransformError> {
    if codecs.encoders.is_empty() || out.batch.is_empty() {
        return Ok(());
    }
    let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(out.batch.len());
    let mut faults: Vec<Rejected> = Vec::new();
    for o in out.batch.iter(input) {
        let encoded = match (codecs.encoder(o.output), o.value_opt()) {
            (Some(e), Some(v)) => {
                let mut buf = Vec::with_capacity(v.len());
                match e.encode(v, &mut buf) {
                    Ok(()) => Some(buf),
                    Err(RecordFault(reason)) => {
                        let reason = format!("sink.{}: {reason}", o.output.unwrap_or("default"));
                        if !per_input {
                            return Err(TransformError::Fatal(format!(
                                "a timer's output: {reason}"
                            )));
                        }
                        if faults.last().is_none_or(|f| f.index != o.origin) {
                            faults.push(Rejected {
                                index: o.origin,
                                kind: RejectKind::BadRecord,
                                reason,
                            });
                        }
                        None
                    }
                }
            }
            _ => None,
        };
        values.push(encoded);
    }
    let refused = |origin: u32| faults.iter().any(|f| f.index == origin);
    let mut batch = OutputBatch::default();
    let mut headers: Vec<HeaderRef<'_>> = Vec::new();
    for (i, o) in out.batch.iter(input).enumerate() {
        if refused(o.origin) {
            continue;
        }
        headers.clear();
        headers.extend(weir_engine::HeaderIter::new(o.headers));
        let value = values[i].as_deref().or(o.value_opt());
        batch.push(o.origin, o.output, o.key, value, &headers, o.timestamp);
    }
    out.batch = batch;
    out.rejected.extend(faults);
    Ok(())
}

impl Transform for Formatted {
    fn process_batch(&mut self, input: &RecordBatch) -> Result<TransformOutput, TransformError> {
        let source = self.source;
        self.call(source, input, |t, b| t.process_batch(b))
    }

    fn process_stateful(
        &mut self,
        input: &RecordBatch,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let source = ctx
            .source
            .as_deref()
            .and_then(|name| self.codecs.source_names.iter().position(|n| n == name))
            .unwrap_or(self.source);
        self.call(source, input, |t, b| t.process_stateful(b, ctx))
    }

    fn on_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let mut out = self.inner.on_timers(fired, ctx)?;
        encode(&self.codecs, &mut out, &fired.batch, false)?;
        Ok(out)
    }

    fn reported_metrics(&self) -> weir_engine::TransformMetrics {
        self.inner.reported_metrics()
    }
}
