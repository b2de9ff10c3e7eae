//! Tries to reach outside the sandbox: reads a host file, writes one, opens
//! a socket, reads the wall clock and an environment variable, and reports
//! what happened as its output.

use weir_guest::{Output, Record, RecordError};

fn probe(_: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    let fs = match std::fs::read("/etc/hostname") {
        Ok(_) => "fs: read /etc/hostname".to_string(),
        Err(e) => format!("fs: denied ({e})"),
    };
    let wr = match std::fs::write("/etc/weir-probe", b"x") {
        Ok(()) => "wr: wrote /etc/weir-probe".to_string(),
        Err(e) => format!("wr: denied ({e})"),
    };
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let clock = if secs == 0 {
        "clock: frozen".to_string()
    } else {
        format!("clock: {secs}")
    };
    let net = match std::net::TcpStream::connect("127.0.0.1:9") {
        Ok(_) => "net: connected".to_string(),
        Err(e) => format!("net: denied ({e})"),
    };
    let env = match std::env::var("HOME") {
        Ok(v) => format!("env: HOME={v}"),
        Err(_) => "env: empty".to_string(),
    };
    out.emit(format!("{fs}; {wr}; {net}; {clock}; {env}"));
    Ok(())
}

weir_guest::flat_map!(probe);
