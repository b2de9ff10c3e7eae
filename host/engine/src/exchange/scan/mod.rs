//! The exchange's fast path for the common record: a JSON object whose
//! state key is a plain string in a top-level field and whose event time is
//! integer milliseconds in another. serde_json reads such a record at a few
//! hundred MB/s, skipping long strings eight bytes at a time; this scan
//! skips them with `memchr` and checks the rest of the grammar as it goes.
//! It answers only when sure: anything else (escapes in names or in the
//! key, `\u` escapes anywhere, number keys, RFC 3339 times, deep nesting,
//! invalid UTF-8) returns `None`, and the serde path decides, with its
//! errors. So it never accepts a record the serde path refuses, and when
//! it answers, it answers the same (a differential test below holds it to
//! that).

/// The string at top-level field `key` and the integer at `time` (the
/// key's first occurrence, the time's last, as the serde path reads them),
/// or `None` when the serde path must decide.
pub(super) fn key_and_time<'a>(value: &'a [u8], key: &str, time: &str) -> Option<(&'a [u8], i64)> {
    std::str::from_utf8(value).ok()?;
    let mut s = Scan { b: value, i: 0 };
    s.ws();
    s.eat(b'{')?;
    s.ws();
    let (mut found_key, mut found_time) = (None, None);
    if s.peek()? == b'}' {
        return None;
    }
    loop {
        s.eat(b'"')?;
        let name = s.plain_string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        let start = s.i;
        let kind = s.value(0)?;
        let raw = &value[start..s.i];
        if name == key.as_bytes() && found_key.is_none() {
            found_key = Some((raw, kind));
        } else if name == time.as_bytes() {
            // Every occurrence is read as a time (the last one counts).
            if kind != Kind::Integer {
                return None;
            }
            found_time = Some(std::str::from_utf8(raw).ok()?.parse::<i64>().ok()?);
        }
        s.ws();
        match s.next()? {
            b',' => s.ws(),
            b'}' => break,
            _ => return None,
        }
    }
    s.ws();
    if s.i != value.len() {
        return None;
    }
    let key = match found_key? {
        (raw, Kind::String) if !raw.contains(&b'\\') => &raw[1..raw.len() - 1],
        _ => return None,
    };
    Some((key, found_time?))
}

/// Whether `s` holds a control character (not allowed raw in a JSON
/// string). A fold without an early exit, so it runs on vector registers.
fn has_control(s: &[u8]) -> bool {
    s.iter().fold(false, |any, &c| any | (c < 0x20))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    String,
    Integer,
    Other,
}

/// Nesting beyond this is left to serde (whose limit is 128).
const MAX_DEPTH: usize = 64;

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A string's body after its opening quote, to its closing quote;
    /// `None` for any escape (a field name is compared as written).
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        let end = start + memchr::memchr2(b'"', b'\\', &self.b[start..])?;
        if self.b[end] != b'"' || has_control(&self.b[start..end]) {
            return None;
        }
        self.i = end + 1;
        Some(&self.b[start..end])
    }

    /// Skip a string after its opening quote: simple escapes allowed,
    /// `\u` left to serde (surrogates), control characters refused.
    fn string(&mut self) -> Option<()> {
        loop {
            let start = self.i;
            let at = start + memchr::memchr2(b'"', b'\\', &self.b[start..])?;
            if has_control(&self.b[start..at]) {
                return None;
            }
            self.i = at + 1;
            if self.b[at] == b'"' {
                return Some(());
            }
            match self.next()? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                _ => return None,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    /// JSON's number grammar; `Integer` when it has no fraction or exponent.
    fn number(&mut self) -> Option<Kind> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        let mut kind = Kind::Integer;
        if self.peek() == Some(b'.') {
            self.i += 1;
            (self.digits() > 0).then_some(())?;
            kind = Kind::Other;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            (self.digits() > 0).then_some(())?;
            kind = Kind::Other;
        }
        Some(kind)
    }

    fn literal(&mut self, word: &[u8]) -> Option<Kind> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then_some(())?;
        self.i = end;
        Some(Kind::Other)
    }

    fn value(&mut self, depth: usize) -> Option<Kind> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string()?;
                Some(Kind::String)
            }
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'{' | b'[' if depth < MAX_DEPTH => {
                let close = if self.next()? == b'{' { b'}' } else { b']' };
                let object = close == b'}';
                self.ws();
                if self.peek()? == close {
                    self.i += 1;
                    return Some(Kind::Other);
                }
                loop {
                    if object {
                        self.eat(b'"')?;
                        self.string()?;
                        self.ws();
                        self.eat(b':')?;
                        self.ws();
                    }
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        c if c == close => return Some(Kind::Other),
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
