//! Each tenant's request rate (`max-requests-per-second`), as Kafka's
//! request quotas work: a tenant over its rate is slowed down, not
//! answered at once. A request over the rate waits for its turn (at most
//! [`MAX_WAIT`]); one that would wait longer is refused with 429 only after
//! that wait, so a client that ignores `Retry-After` still makes at most one
//! request a second per connection, and the connections of one address are
//! capped at the edge. A tenant cannot turn the API, which every tenant
//! shares, into a loop that takes the cores from the others' pipelines.
//! The admin's own calls are not limited.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use governor::clock::Clock as _;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use super::error::ApiError;

/// The longest a request over its tenant's rate is held before it is
/// either let through or refused.
pub const MAX_WAIT: Duration = Duration::from_secs(1);

/// The rate a new tenant gets, and the most an admin may set: a dashboard
/// polls a few routes a second; a rate past the ceiling is no limit on a
/// machine's cores.
pub const DEFAULT_PER_SECOND: u64 = 100;
pub const MAX_PER_SECOND: u64 = 100_000;

/// A node's share of a tenant's rate in a cluster of `nodes` live nodes:
/// requests spread over the nodes (a load balancer's round robin) are held
/// to the tenant's rate in all; a client that calls one node only gets that
/// node's share. Rounded up, so no share is zero.
pub fn share(per_second: u64, nodes: usize) -> u64 {
    per_second.div_ceil(nodes.max(1) as u64)
}

/// What happened to a request over its tenant's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttle {
    /// Let through after waiting its turn.
    Delayed,
    /// Refused (429) after waiting [`MAX_WAIT`].
    Refused,
}

impl Throttle {
    pub fn label(self) -> &'static str {
        match self {
            Throttle::Delayed => "delayed",
            Throttle::Refused => "refused",
        }
    }
}

struct Limiter {
    per_second: u32,
    gcra: DefaultDirectRateLimiter,
    /// When a refusal was last logged (at most one line per 10 s).
    logged: Mutex<Option<std::time::Instant>>,
}

impl Limiter {
    fn log_refusal(&self, tenant: &str) {
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        if logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
            *logged = Some(std::time::Instant::now());
            tracing::warn!(
                "serve: tenant {tenant} is over its {} API requests per second; refusing with 429 (counted in weir_api_throttled_requests_total)",
                self.per_second
            );
        }
    }
}

/// Every tenant's limiter, made on its first request from its quota.
#[derive(Default)]
pub struct RequestRates(Mutex<HashMap<String, Arc<Limiter>>>);

impl RequestRates {
    fn made(per_second: u64) -> Arc<Limiter> {
        let per_second = per_second.clamp(1, MAX_PER_SECOND) as u32;
        let rate = NonZeroU32::new(per_second).expect("clamped to at least 1");
        // A second's worth of requests may come at once.
        Arc::new(Limiter {
            per_second,
            gcra: RateLimiter::direct(Quota::per_second(rate)),
            logged: Mutex::new(None),
        })
    }

    /// `tenant`'s limiter at `per_second`, made again when the rate
    /// changed (an admin's PATCH, on any node, or the cluster's size).
    fn limiter(&self, tenant: &str, per_second: u64) -> Arc<Limiter> {
        let per_second = per_second.clamp(1, MAX_PER_SECOND);
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match all.get(tenant) {
            Some(l) if u64::from(l.per_second) == per_second => l.clone(),
            _ => {
                let made = Self::made(per_second);
                all.insert(tenant.to_string(), made.clone());
                made
            }
        }
    }

    /// Admit one request of `tenant`, allowed `per_second` requests a
    /// second here: at once, after waiting its turn, or refused after
    /// [`MAX_WAIT`]. `Ok` says whether it was held.
    pub async fn admit(&self, tenant: &str, per_second: u64) -> Result<Option<Throttle>, ApiError> {
        let l = self.limiter(tenant, per_second);
        let mut waited = Duration::ZERO;
        loop {
            let Err(not_until) = l.gcra.check() else {
                return Ok((!waited.is_zero()).then_some(Throttle::Delayed));
            };
            let wait = not_until.wait_time_from(l.gcra.clock().now());
            if waited + wait > MAX_WAIT {
                tokio::time::sleep(MAX_WAIT.saturating_sub(waited)).await;
                let retry = wait.saturating_sub(MAX_WAIT.saturating_sub(waited));
                l.log_refusal(tenant);
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too-many-requests",
                    format!(
                        "tenant `{tenant}` is over its {} requests per second; retry after {} s",
                        l.per_second,
                        retry.as_secs().max(1)
                    ),
                )
                .retry_after(retry));
            }
            tokio::time::sleep(wait).await;
            waited += wait;
        }
    }

    /// Drop a deleted tenant's limiter.
    pub fn forget(&self, tenant: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn over_the_rate_waits_then_is_refused() {
        let rates = RequestRates::default();
        // A second's worth at once.
        for _ in 0..10 {
            assert_eq!(rates.admit("a", 10).await.unwrap(), None);
        }
        // The next waits its turn (a tenth of a second).
        let t = tokio::time::Instant::now();
        assert_eq!(rates.admit("a", 10).await.unwrap(), Some(Throttle::Delayed));
        assert!(
            t.elapsed() >= Duration::from_millis(90),
            "{:?}",
            t.elapsed()
        );
        // Another tenant is not slowed by it.
        assert_eq!(rates.admit("b", 10).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_changed_rate_applies_from_the_next_request() {
        let rates = RequestRates::default();
        assert_eq!(rates.admit("a", 1).await.unwrap(), None);
        // At 1 a second the next would wait; the rate raised, it does not.
        assert_eq!(rates.admit("a", 1000).await.unwrap(), None);
        assert_eq!(rates.admit("a", 1000).await.unwrap(), None);
    }

    #[test]
    fn a_clusters_nodes_share_a_rate_rounding_up() {
        assert_eq!(share(100, 1), 100);
        assert_eq!(share(100, 3), 34);
        assert_eq!(share(1, 4), 1);
        assert_eq!(share(100, 0), 100);
    }

    #[tokio::test]
    async fn a_queue_longer_than_the_wait_is_refused_after_it() {
        let rates = Arc::new(RequestRates::default());
        assert_eq!(rates.admit("a", 1).await.unwrap(), None);
        let t = std::time::Instant::now();
        // The next turn is a second away; the one after, two.
        let (first, second) = tokio::join!(rates.admit("a", 1), rates.admit("a", 1));
        let outcomes = [first.is_ok(), second.is_ok()];
        assert!(
            outcomes.contains(&true) && outcomes.contains(&false),
            "{outcomes:?}"
        );
        let e = first.err().or(second.err()).unwrap();
        assert_eq!(e.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(t.elapsed() >= MAX_WAIT, "refused only after the wait");
    }
}
