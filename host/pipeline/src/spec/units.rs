//! Value parsing for pipeline files: readable sizes and durations, flat
//! config pairs, and error locations.

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
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large (at most {} bytes)", usize::MAX))
}

/// Parse a readable duration such as `250ms` or `10s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration like \"250ms\" or \"10s\" ({e})"))
}

/// Where to point for an error at `offset`: for an unknown key inside a
/// tagged table (reported at the table header), the key's own line.
pub(super) fn key_location(text: &str, offset: usize, message: &str) -> (usize, usize) {
    if let Some(key) = message
        .strip_prefix("unknown field `")
        .and_then(|m| m.split('`').next())
    {
        let mut pos = offset.min(text.len());
        for line in text[pos..].split_inclusive('\n') {
            let t = line.trim_start();
            if t.starts_with(key) && t[key.len()..].trim_start().starts_with('=') {
                return line_col(text, pos + (line.len() - t.len()));
            }
            pos += line.len();
        }
    }
    line_col(text, offset)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// Config pairs are flat strings; a dotted key (`route.eu = "x"`) arrives
/// as a nested table and is flattened back to `route.eu`.
pub(super) fn flatten_config(
    key: String,
    v: toml::Value,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    match v {
        toml::Value::String(s) => out.push((key, s)),
        toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) => {
            out.push((key, v.to_string()))
        }
        toml::Value::Table(t) => {
            for (k, v) in t {
                flatten_config(format!("{key}.{k}"), v, out)?;
            }
        }
        _ => {
            return Err(format!(
                "transform.config.{key}: values must be strings, numbers or booleans"
            ));
        }
    }
    Ok(())
}
