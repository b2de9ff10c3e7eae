//! Per-tenant log files for `weir host`: guest log lines (whose `guest`
//! label starts with the tenant) and the host's lines about a tenant's
//! pipelines go to `<root>/tenants/<tenant>/weir.log`, so a tenant's logs
//! can be handed to that tenant alone.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use tracing_subscriber::layer::{Context, Layer};

fn files() -> &'static Mutex<HashMap<String, File>> {
    static FILES: OnceLock<Mutex<HashMap<String, File>>> = OnceLock::new();
    FILES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Send `tenant`'s log lines to `file` from now on.
pub fn register(tenant: &str, file: File) {
    files()
        .lock()
        .expect("tenant log lock")
        .insert(tenant.to_string(), file);
}

/// Write one line to `tenant`'s log, if it has one.
pub fn line(tenant: &str, text: &str) {
    if let Some(f) = files().lock().expect("tenant log lock").get_mut(tenant) {
        let ts = humantime::format_rfc3339_millis(std::time::SystemTime::now());
        let _ = writeln!(f, "{ts} {text}");
    }
}

/// Routes guest events to their tenant's log.
pub struct TenantLogLayer;

impl<S: tracing::Subscriber> Layer<S> for TenantLogLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != weir_runtime::GUEST_LOG_TARGET {
            return;
        }
        let f = weir_runtime::GuestEvent::of(event);
        let Some(guest) = f.guest else { return };
        let Some((tenant, _)) = guest.split_once('/') else {
            return;
        };
        line(
            tenant,
            &format!(
                "{} {guest}{}: {}",
                event.metadata().level(),
                f.stream.map(|s| format!(" ({s})")).unwrap_or_default(),
                f.text
            ),
        );
    }
}
