//! How windows live in keyed state: key layouts, accumulator and session
//! encodings, and the per-call write-back cache of fixed windows.

use std::collections::HashMap;

use super::{Aggregate, FIXED, Window};
use crate::RecordError;
use crate::codec::{Codec, time_key, time_of};
use crate::state;

/// Fixed windows' accumulators read during one call and written back with
/// one `put_many` at its end: a batch costs one host call per distinct
/// window it touches plus one, instead of two per record. A call that
/// traps writes nothing, and the host's state is unchanged.
pub(super) struct Cache<Acc> {
    entries: HashMap<Vec<u8>, (Acc, bool)>,
}

impl<Acc> Default for Cache<Acc> {
    fn default() -> Self {
        Cache {
            entries: HashMap::new(),
        }
    }
}

impl<Acc: Codec + Clone> Cache<Acc> {
    pub(super) fn get<A: Aggregate<Acc = Acc>>(
        &mut self,
        k: &[u8],
    ) -> Result<Option<Acc>, RecordError> {
        if let Some((acc, _)) = self.entries.get(k) {
            return Ok(Some(acc.clone()));
        }
        match state::get(k) {
            None => Ok(None),
            Some(b) => {
                let acc = decode_acc::<A>(&b)?;
                self.entries.insert(k.to_vec(), (acc.clone(), false));
                Ok(Some(acc))
            }
        }
    }

    pub(super) fn put(&mut self, k: Vec<u8>, acc: Acc) {
        self.entries.insert(k, (acc, true));
    }

    pub(super) fn flush(&mut self) {
        let dirty: Vec<(Vec<u8>, Vec<u8>)> = self
            .entries
            .drain()
            .filter(|(_, (_, dirty))| *dirty)
            .map(|(k, (acc, _))| (k, acc.to_bytes()))
            .collect();
        let entries: Vec<(&[u8], &[u8])> = dirty.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        state::put_many(&entries);
    }
}

pub(super) fn fixed_key(start: i64, end: i64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(17 + key.len());
    k.push(FIXED);
    k.extend_from_slice(&time_key(end));
    k.extend_from_slice(&time_key(start));
    k.extend_from_slice(key);
    k
}

pub(super) fn parse_fixed(k: &[u8]) -> Option<(Window, &[u8])> {
    if k.len() < 17 || k[0] != FIXED {
        return None;
    }
    let end = time_of(&k[1..9]);
    let start = time_of(&k[9..17]);
    Some((Window { start, end }, &k[17..]))
}

pub(super) fn decode_acc<A: Aggregate>(b: &[u8]) -> Result<A::Acc, RecordError> {
    let mut s = b;
    A::Acc::decode(&mut s).ok_or_else(|| RecordError::broken("corrupt window state"))
}

pub(super) type Session<A> = (i64, i64, <A as Aggregate>::Acc);

pub(super) fn encode_sessions<A: Aggregate>(sessions: &[Session<A>]) -> Vec<u8> {
    let mut out = Vec::new();
    (sessions.len() as u64).encode(&mut out);
    for (start, end, acc) in sessions {
        start.encode(&mut out);
        end.encode(&mut out);
        acc.encode(&mut out);
    }
    out
}

pub(super) fn decode_sessions<A: Aggregate>(b: &[u8]) -> Result<Vec<Session<A>>, RecordError> {
    let corrupt = || RecordError::broken("corrupt session state");
    let mut s = b;
    let n = u64::decode(&mut s).ok_or_else(corrupt)?;
    let mut out = Vec::with_capacity(n.min(1024) as usize);
    for _ in 0..n {
        let start = i64::decode(&mut s).ok_or_else(corrupt)?;
        let end = i64::decode(&mut s).ok_or_else(corrupt)?;
        let acc = A::Acc::decode(&mut s).ok_or_else(corrupt)?;
        out.push((start, end, acc));
    }
    Ok(out)
}
