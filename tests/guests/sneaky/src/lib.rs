//! Tries to reach outside the sandbox: reads a host file, opens a socket and
//! reads an environment variable, and reports what happened as its output.

use weir_guest::{Output, Record, RecordError};

fn probe(_: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    let fs = match std::fs::read("/etc/hostname") {
        Ok(_) => "fs: read /etc/hostname".to_string(),
        Err(e) => format!("fs: denied ({e})"),
    };
    let net = match std::net::TcpStream::connect("127.0.0.1:9") {
        Ok(_) => "net: connected".to_string(),
        Err(e) => format!("net: denied ({e})"),
    };
    let env = match std::env::var("HOME") {
        Ok(v) => format!("env: HOME={v}"),
        Err(_) => "env: empty".to_string(),
    };
    out.emit(format!("{fs}; {net}; {env}"));
    Ok(())
}

weir_guest::flat_map!(probe);
