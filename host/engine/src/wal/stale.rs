//! Entries a stalled earlier owner wrote ahead after it lost the checkpoint.

use super::{OffsetEntry, offsets_path};
use crate::checkpoint::{CheckpointError, CheckpointStore, read_entry};

/// Whether `entry`, written ahead above the newest commit, was written by
/// a run that had not seen that commit: its ranges do not start where the
/// committed batch's ended. Continuous mode numbers epochs by the clock and
/// gives empty ones no entry, so a process that stalled past its lease and
/// woke after another had taken over can write ahead an epoch that is still
/// in the new owner's future, over records the new owner has committed
/// since. Re-running it would write them twice; its own output never
/// committed (the new owner's transactional producer fenced its sink).
pub fn stale(store: &dyn CheckpointStore, entry: &OffsetEntry) -> Result<bool, CheckpointError> {
    let Some(&last) = store.list_numbered("commits")?.last() else {
        return Ok(false);
    };
    if last >= entry.batch_id {
        return Ok(false);
    }
    let Some(done) = read_entry::<OffsetEntry>(store, &offsets_path(last))? else {
        return Ok(false);
    };
    let ends = done.sources.iter().map(|r| &r.end);
    Ok(!ends.eq(entry.sources.iter().map(|r| &r.start)))
}

/// Delete `entry` if it is [`stale`]; says whether it was.
pub fn discard_stale(
    store: &dyn CheckpointStore,
    entry: &OffsetEntry,
) -> Result<bool, CheckpointError> {
    if !stale(store, entry)? {
        return Ok(false);
    }
    let id = entry.batch_id;
    tracing::warn!(
        "checkpoint {}: offsets/{id} was written ahead by a run that had not seen the newest commit (a process that stalled past its lease); discarded",
        store.location()
    );
    store.delete(&offsets_path(id))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{commit, entry};
    use super::super::{Resume, resume};
    use super::*;
    use crate::checkpoint::LocalCheckpointStore;

    #[test]
    fn an_entry_not_starting_where_the_newest_commit_ended_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalCheckpointStore::open(dir.path()).unwrap();
        store.create("offsets/3", &entry(3, 0, 10)).unwrap();
        store.create("commits/3", &commit(3)).unwrap();
        store.create("offsets/9", &entry(9, 10, 20)).unwrap();
        let legit: OffsetEntry = read_entry(&store, "offsets/9").unwrap().unwrap();
        assert!(!stale(&store, &legit).unwrap());
        store.delete("offsets/9").unwrap();
        // Written by a run that never saw commit 3: it starts at 4.
        store.create("offsets/40", &entry(40, 4, 12)).unwrap();
        let stale_one: OffsetEntry = read_entry(&store, "offsets/40").unwrap().unwrap();
        assert!(discard_stale(&store, &stale_one).unwrap());
        assert!(store.read("offsets/40").unwrap().is_none());
        // A legitimate one above the commit stays.
        store.create("offsets/41", &entry(41, 10, 12)).unwrap();
        let legit: OffsetEntry = read_entry(&store, "offsets/41").unwrap().unwrap();
        assert!(!discard_stale(&store, &legit).unwrap());
        assert!(matches!(resume(&store).unwrap(), Resume::Rerun(e) if e.batch_id == 41));
    }
}
