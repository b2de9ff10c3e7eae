//! Protobuf values with Confluent framing: after the schema id come the
//! message indexes (which message of the schema's `.proto` file: zigzag
//! varints, a count then a path, `[0]` written as one 0 byte), then the
//! message. Schemas are `.proto` text, as a registry holds them, compiled
//! here (imports: the well-known `google/protobuf/*` types only). The guest
//! sees the message in proto3's JSON mapping with the `.proto` field names,
//! every field present and 64-bit integers as numbers.

use std::path::Path;
use std::sync::Arc;

use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions,
};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

use crate::by_id::ById;
use crate::framing::{frame_header, unframe};
use crate::{FormatError, RecordFault, SchemaKind, SchemaSource};

/// The name the one schema file is compiled under.
const FILE: &str = "schema.proto";

struct OneFile(String);

impl FileResolver for OneFile {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        (path == Path::new(FILE)).then(|| FILE.to_string())
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if name == FILE {
            File::from_source(name, &self.0)
        } else {
            Err(protox::Error::file_not_found(name))
        }
    }
}

fn compile(text: &str, what: &str) -> Result<DescriptorPool, String> {
    let mut files = ChainFileResolver::new();
    files.add(OneFile(text.to_string()));
    files.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(files);
    compiler.include_imports(true);
    compiler
        .open_file(FILE)
        .map_err(|e| format!("{what} is not a .proto file weir can compile: {e}"))?;
    Ok(compiler.descriptor_pool())
}

/// The message at `path` (top-level index, then nested indexes).
fn message_at(pool: &DescriptorPool, path: &[i64]) -> Option<MessageDescriptor> {
    let file = pool.get_file_by_name(FILE)?;
    let (first, rest) = path.split_first()?;
    let mut m = file.messages().nth(usize::try_from(*first).ok()?)?;
    for i in rest {
        let child = m.child_messages().nth(usize::try_from(*i).ok()?)?;
        m = child;
    }
    Some(m)
}

fn varint(b: &[u8]) -> Option<(i64, &[u8])> {
    let mut n: u64 = 0;
    for (i, byte) in b.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            let zigzag = (n >> 1) as i64 ^ -((n & 1) as i64);
            return Some((zigzag, &b[i + 1..]));
        }
    }
    None
}

/// The message indexes at the start of `payload`, and the message after.
fn indexes(payload: &[u8]) -> Result<(Vec<i64>, &[u8]), RecordFault> {
    let bad = || RecordFault("protobuf message indexes after the schema id are malformed".into());
    let (count, mut rest) = varint(payload).ok_or_else(bad)?;
    if count == 0 {
        return Ok((vec![0], rest));
    }
    if !(1..=64).contains(&count) {
        return Err(bad());
    }
    let mut path = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let (i, r) = varint(rest).ok_or_else(bad)?;
        path.push(i);
        rest = r;
    }
    Ok((path, rest))
}

fn json_options() -> SerializeOptions {
    SerializeOptions::new()
        .use_proto_field_name(true)
        .skip_default_fields(false)
        .stringify_64_bit_integers(false)
}

/// Decodes framed Protobuf values of one source into JSON.
pub struct ProtobufDecoder {
    source: Arc<dyn SchemaSource>,
    writers: ById<DescriptorPool>,
}

impl ProtobufDecoder {
    pub fn new(source: Arc<dyn SchemaSource>) -> Self {
        ProtobufDecoder {
            source,
            writers: ById::new(),
        }
    }

    /// As [`crate::AvroDecoder::decode`].
    pub fn decode(
        &mut self,
        value: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Result<(), RecordFault>, FormatError> {
        let framed = match unframe(value) {
            Ok(f) => f,
            Err(fault) => return Ok(Err(fault)),
        };
        let id = framed.schema_id;
        let pool = match self.writers.get(
            self.source.as_ref(),
            id,
            SchemaKind::Protobuf,
            "protobuf",
            |t| compile(t, &format!("schema id {id}")),
        )? {
            Ok(p) => p,
            Err(fault) => return Ok(Err(fault.clone())),
        };
        Ok(read(pool, framed.payload, id, out))
    }
}

fn read(
    pool: &DescriptorPool,
    payload: &[u8],
    id: u32,
    out: &mut Vec<u8>,
) -> Result<(), RecordFault> {
    let (path, bytes) = indexes(payload)?;
    let desc = message_at(pool, &path)
        .ok_or_else(|| RecordFault(format!("schema id {id} has no message at index {path:?}")))?;
    let message = DynamicMessage::decode(desc.clone(), bytes).map_err(|e| {
        RecordFault(format!(
            "bytes do not match protobuf message {} of schema id {id}: {e}",
            desc.full_name()
        ))
    })?;
    let mut json = serde_json::Serializer::new(out);
    message
        .serialize_with_options(&mut json, &json_options())
        .map_err(|e| RecordFault(format!("protobuf message has no JSON form: {e}")))
}

/// Encodes JSON outputs as the first message of one sink's `.proto`.
pub struct ProtobufEncoder {
    message: MessageDescriptor,
    id: u32,
}

impl ProtobufEncoder {
    pub fn new(
        source: &dyn SchemaSource,
        subject: &str,
        text: &str,
    ) -> Result<ProtobufEncoder, FormatError> {
        let what = format!("sink schema for `{subject}`");
        let pool = compile(text, &what).map_err(FormatError::Invalid)?;
        let message = message_at(&pool, &[0])
            .ok_or_else(|| FormatError::Invalid(format!("{what} declares no message")))?;
        let id = source.id_for(subject, SchemaKind::Protobuf, text)?;
        Ok(ProtobufEncoder { message, id })
    }

    /// The full name of the first message of `text`.
    pub fn record_name(text: &str) -> Option<String> {
        let pool = compile(text, "schema").ok()?;
        message_at(&pool, &[0]).map(|m| m.full_name().to_string())
    }

    pub fn schema_id(&self) -> u32 {
        self.id
    }

    pub fn encode(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), RecordFault> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let message = DynamicMessage::deserialize_with_options(
            self.message.clone(),
            &mut de,
            &DeserializeOptions::new().deny_unknown_fields(true),
        )
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| {
            RecordFault(format!(
                "output does not fit the sink's protobuf message {}: {e}",
                self.message.full_name()
            ))
        })?;
        frame_header(self.id, out);
        out.push(0); // message indexes [0]: the first message
        message
            .encode(out)
            .expect("encoding into a Vec cannot run out of room");
        Ok(())
    }
}

#[cfg(test)]
mod tests;
