//! This host's name, as gethostname(2) gives it: what checkpoint leases
//! tell this host's processes from other hosts' by, and what a Kafka group
//! member is named after.

/// The name; a host without one is refused (an empty name would make every
/// nameless host look like this one).
pub fn hostname() -> std::io::Result<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let raw = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    checked(&raw)
}

fn checked(raw: &str) -> std::io::Result<String> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(std::io::Error::other(
            "this host has no name (gethostname gave none); set one: a checkpoint lease tells this host's processes from other hosts' by it",
        ));
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_host_is_named_by_gethostname_and_a_nameless_one_is_refused() {
        let name = super::hostname().unwrap();
        let uname = std::process::Command::new("uname")
            .arg("-n")
            .output()
            .unwrap();
        assert_eq!(name, String::from_utf8_lossy(&uname.stdout).trim());
        let err = super::checked(" \n").unwrap_err().to_string();
        assert!(err.contains("this host has no name"), "{err}");
    }
}
