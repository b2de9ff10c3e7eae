//! Readable sizes and durations in pipeline files.

use std::time::Duration;

/// Parse a human size such as `64MiB`, `512KiB`, `1GB` or a plain byte count.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size like \"64MiB\""))?;
    let mult = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "unknown size unit `{u}` in `{s}` (use B, KiB, MiB, GiB, KB, MB, GB)"
            ));
        }
    };
    Ok(n * mult)
}

/// Parse a readable duration such as `250ms` or `10s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration like \"250ms\" or \"10s\" ({e})"))
}
