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
    weir_runtime::sha256_hex(token.as_bytes())
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Admin,
    Tenant(String),
    /// The admin token with a `Weir-Tenant` header: the admin acting for
    /// that tenant on its endpoints (the dashboard's admin view).
    AdminFor(String),
}

/// The header an admin names the tenant it acts for with.
pub const ACTING_FOR: &str = "weir-tenant";

impl Caller {
    /// The caller as a tenant; the admin token is not one (403).
    pub fn tenant(&self) -> Result<&str, ApiError> {
        match self {
            Caller::Tenant(t) | Caller::AdminFor(t) => Ok(t),
            Caller::Admin => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "this endpoint acts for a tenant: use the tenant's token (or, as the admin, name it in a `Weir-Tenant` header)",
            )),
        }
    }

    pub fn admin(&self) -> Result<(), ApiError> {
        match self {
            Caller::Admin | Caller::AdminFor(_) => Ok(()),
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
        let token = token_hash(&parts.headers)
            .ok_or_else(|| unauthorized("send `Authorization: Bearer <token>`"))?;
        let caller = state
            .store
            .caller(&token)?
            .ok_or_else(|| unauthorized("unknown token"))?;
        let acting_for = parts
            .headers
            .get(ACTING_FOR)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|t| !t.is_empty());
        if let Caller::Tenant(t) = &caller {
            let rate = state
                .store
                .request_rate(t)?
                .unwrap_or(super::rates::DEFAULT_PER_SECOND);
            let nodes = state.cluster.as_ref().map_or(1, |c| c.live_nodes());
            let held = state.rates.admit(t, super::rates::share(rate, nodes)).await;
            let throttle = match &held {
                Ok(Some(th)) => Some(*th),
                Err(_) => Some(super::rates::Throttle::Refused),
                Ok(None) => None,
            };
            if let Some(th) = throttle {
                state.supervisor.metrics.throttled(t, th.label());
            }
            held?;
        }
        Ok(match (caller, acting_for) {
            (Caller::Admin, Some(t)) => Caller::AdminFor(t.to_string()),
            (c, _) => c,
        })
    }
}

/// The hash of the bearer token a request carries.
pub fn token_hash(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| hash(t.trim()))
}

/// `GET /v1/whoami`: whom the token is for (the dashboard's login check).
pub async fn whoami(caller: Caller) -> axum::Json<serde_json::Value> {
    axum::Json(match caller {
        Caller::Admin => serde_json::json!({"role": "admin"}),
        Caller::AdminFor(t) => serde_json::json!({"role": "admin", "tenant": t}),
        Caller::Tenant(t) => serde_json::json!({"role": "tenant", "tenant": t}),
    })
}
