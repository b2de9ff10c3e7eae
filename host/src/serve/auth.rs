//! Bearer tokens: random 256-bit values, shown once when issued and kept
//! only as SHA-256 hashes, so nothing under the data directory can be used
//! to call the API.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::AppState;
use super::error::ApiError;

/// A new token: `weir_` and 64 hex digits (32 random bytes).
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source");
    format!("weir_{}", hex::encode(bytes))
}

/// How a token is stored.
pub fn hash(token: &str) -> String {
    crate::runtime::sha256_hex(token.as_bytes())
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Admin,
    Tenant(String),
}

impl Caller {
    /// The caller as a tenant; the admin token is not one (403).
    pub fn tenant(&self) -> Result<&str, ApiError> {
        match self {
            Caller::Tenant(t) => Ok(t),
            Caller::Admin => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "this endpoint acts for a tenant: use the tenant's token",
            )),
        }
    }

    pub fn admin(&self) -> Result<(), ApiError> {
        match self {
            Caller::Admin => Ok(()),
            Caller::Tenant(_) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "this endpoint needs the admin token",
            )),
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let unauthorized = |detail: &str| {
            ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", detail.to_string())
        };
        let token = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| unauthorized("send `Authorization: Bearer <token>`"))?;
        state
            .store
            .caller(&hash(token.trim()))?
            .ok_or_else(|| unauthorized("unknown token"))
    }
}
