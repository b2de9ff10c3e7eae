//! A client of a Confluent-compatible schema registry's REST API (the API
//! Confluent Schema Registry, Apicurio's `ccompat` and Karapace serve):
//! `GET /schemas/ids/{id}`, `POST /subjects/{subject}/versions` to register,
//! `POST /subjects/{subject}` to look a schema up without registering.

use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use super::{RegisteredSchema, SchemaKind, SchemaSource};
use crate::FormatError;

/// HTTP basic credentials (Confluent's `basic.auth.user.info`).
#[derive(Clone)]
pub struct RegistryCredentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RegistryCredentials({}, <password>)", self.username)
    }
}

/// A registry at `url` (its base, e.g. `http://host:8081` or Apicurio's
/// `http://host:8080/apis/ccompat/v7`).
#[derive(Debug, Clone)]
pub struct RegistryClient {
    url: String,
    credentials: Option<RegistryCredentials>,
    /// Register a sink's schema on first use (Confluent's
    /// `auto.register.schemas`), else only look it up.
    auto_register: bool,
    agent: ureq::Agent,
}

/// The registry's error body: `{"error_code": 40403, "message": "..."}`.
#[derive(Deserialize)]
struct ErrorBody {
    error_code: Option<i64>,
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SchemaBody {
    schema: String,
    schema_type: Option<String>,
}

#[derive(Deserialize)]
struct IdBody {
    id: u32,
}

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

impl RegistryClient {
    pub fn new(
        url: &str,
        credentials: Option<RegistryCredentials>,
        auto_register: bool,
        timeout: Duration,
    ) -> RegistryClient {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        RegistryClient {
            url: url.trim_end_matches('/').to_string(),
            credentials,
            auto_register,
            agent,
        }
    }

    fn unavailable(&self, message: impl std::fmt::Display) -> FormatError {
        FormatError::Unavailable {
            url: self.url.clone(),
            message: message.to_string(),
        }
    }

    /// One request; a transport failure or a 5xx is `Unavailable` (retried
    /// by the caller), any other status is returned with its body.
    fn request(&self, path: &str, body: Option<String>) -> Result<(u16, String), FormatError> {
        let url = format!("{}{path}", self.url);
        let auth = self.credentials.as_ref().map(|c| {
            let token = base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", c.username, c.password));
            format!("Basic {token}")
        });
        let result = match body {
            None => {
                let mut r = self.agent.get(&url).header("Accept", CONTENT_TYPE);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            Some(b) => {
                let mut r = self
                    .agent
                    .post(&url)
                    .header("Accept", CONTENT_TYPE)
                    .header("Content-Type", CONTENT_TYPE);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send(b)
            }
        };
        let mut response = result.map_err(|e| self.unavailable(e))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.unavailable(e))?;
        if status >= 500 {
            return Err(self.unavailable(format!("HTTP {status}: {}", message_of(&text))));
        }
        Ok((status, text))
    }

    fn parse<T: for<'de> Deserialize<'de>>(&self, text: &str) -> Result<T, FormatError> {
        serde_json::from_str(text).map_err(|e| {
            FormatError::Invalid(format!(
                "schema registry {}: unexpected answer: {e}",
                self.url
            ))
        })
    }
}

/// The registry's message from an error body, or the body itself.
fn message_of(text: &str) -> String {
    match serde_json::from_str::<ErrorBody>(text) {
        Ok(ErrorBody {
            message: Some(m),
            error_code,
        }) => match error_code {
            Some(c) => format!("{m} (error {c})"),
            None => m,
        },
        _ => text.chars().take(200).collect(),
    }
}

fn kind_named(name: Option<&str>) -> Result<SchemaKind, FormatError> {
    Ok(match name.unwrap_or("AVRO") {
        "AVRO" => SchemaKind::Avro,
        "PROTOBUF" => SchemaKind::Protobuf,
        "JSON" => SchemaKind::JsonSchema,
        other => {
            return Err(FormatError::Invalid(format!(
                "unknown schemaType `{other}`"
            )));
        }
    })
}

/// A subject as a URL path segment.
fn segment(subject: &str) -> String {
    subject
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl SchemaSource for RegistryClient {
    fn describe(&self) -> String {
        format!("schema registry {}", self.url)
    }

    fn by_id(&self, id: u32) -> Result<RegisteredSchema, FormatError> {
        let (status, text) = self.request(&format!("/schemas/ids/{id}"), None)?;
        match status {
            200 => {
                let body: SchemaBody = self.parse(&text)?;
                Ok(RegisteredSchema {
                    id,
                    kind: kind_named(body.schema_type.as_deref())?,
                    text: body.schema,
                })
            }
            404 => Err(FormatError::UnknownId(id, self.describe())),
            s => Err(FormatError::Invalid(format!(
                "schema registry {}: schema {id}: HTTP {s}: {}",
                self.url,
                message_of(&text)
            ))),
        }
    }

    fn id_for(&self, subject: &str, kind: SchemaKind, text: &str) -> Result<u32, FormatError> {
        let mut body = serde_json::json!({ "schema": text });
        if kind != SchemaKind::Avro {
            body["schemaType"] = kind.registry_name().into();
        }
        let path = if self.auto_register {
            format!("/subjects/{}/versions", segment(subject))
        } else {
            format!("/subjects/{}", segment(subject))
        };
        let (status, answer) = self.request(&path, Some(body.to_string()))?;
        match status {
            200 => Ok(self.parse::<IdBody>(&answer)?.id),
            404 if !self.auto_register => Err(FormatError::Refused {
                url: self.url.clone(),
                subject: subject.into(),
                message: format!(
                    "the schema is not registered under this subject and auto-register is off ({})",
                    message_of(&answer)
                ),
            }),
            _ => Err(FormatError::Refused {
                url: self.url.clone(),
                subject: subject.into(),
                message: format!("HTTP {status}: {}", message_of(&answer)),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_escaped_and_error_bodies_read() {
        assert_eq!(segment("orders-value"), "orders-value");
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
        assert_eq!(
            message_of(r#"{"error_code":40403,"message":"Schema not found"}"#),
            "Schema not found (error 40403)"
        );
        assert_eq!(message_of("plain"), "plain");
    }

    #[test]
    fn a_registry_that_is_not_there_is_unavailable_not_a_bad_record() {
        // A port nothing listens on: connection refused at once.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let c = RegistryClient::new(
            &format!("http://127.0.0.1:{port}"),
            None,
            true,
            Duration::from_secs(2),
        );
        assert!(matches!(c.by_id(1), Err(FormatError::Unavailable { .. })));
    }
}
