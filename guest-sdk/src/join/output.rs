//! What a join's output function sees, and the output it builds when the
//! transform gives none.

/// One side's row of a joined output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<'a> {
    pub value: &'a [u8],
    /// Its event time.
    pub timestamp: i64,
}

/// What the output function sees: a matched pair, or (outer joins) one
/// side's row that matched nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Joined<'a> {
    pub key: &'a [u8],
    pub left: Option<Row<'a>>,
    pub right: Option<Row<'a>>,
}

/// `{"left":<value>,"right":<value>}`, `null` for a missing side.
pub(super) fn default_output(j: &Joined<'_>, out: &mut Vec<u8>) {
    let side = |r: Option<Row<'_>>, out: &mut Vec<u8>| match r {
        Some(r) => out.extend_from_slice(r.value),
        None => out.extend_from_slice(b"null"),
    };
    out.extend_from_slice(b"{\"left\":");
    side(j.left, out);
    out.extend_from_slice(b",\"right\":");
    side(j.right, out);
    out.push(b'}');
}
