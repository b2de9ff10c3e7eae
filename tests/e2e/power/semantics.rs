//! The power-loss file system through real system calls: what survives a
//! cut is what was fsynced, file data and directory entries apart.

use std::fs::File;
use std::io::Write;

use super::power_mount;

fn sync_dir(path: &std::path::Path) {
    File::open(path).unwrap().sync_all().unwrap();
}

#[test]
fn only_fsynced_data_and_entries_survive_a_power_cut() {
    let (_dir, mount) = power_mount();
    let root = mount.path().to_path_buf();
    let d = root.join("d");
    std::fs::create_dir(&d).unwrap();
    sync_dir(&root);

    // Synced data, then more that is not.
    let mut f = File::create(d.join("kept")).unwrap();
    f.write_all(b"synced").unwrap();
    f.sync_all().unwrap();
    f.write_all(b" and not").unwrap();
    drop(f);
    std::fs::write(d.join("old"), b"x").unwrap();
    File::open(d.join("old")).unwrap().sync_all().unwrap();
    sync_dir(&d); // "kept" and "old" are named on disk
    // Data synced, its entry not: the file is gone after the cut.
    let mut f = File::create(d.join("lost")).unwrap();
    f.write_all(b"bytes").unwrap();
    f.sync_all().unwrap();
    drop(f);
    // Renamed, the directory not synced after: the old name comes back.
    std::fs::rename(d.join("old"), d.join("new")).unwrap();
    assert_eq!(std::fs::read(d.join("kept")).unwrap(), b"synced and not");

    mount.cut_power();
    assert!(!d.join("lost").exists());
    assert_eq!(std::fs::read(d.join("kept")).unwrap(), b"synced");
    assert_eq!(std::fs::read(d.join("old")).unwrap(), b"x");
    assert!(!d.join("new").exists());
    assert_eq!(mount.cuts(), 1);

    // Rename, then sync the directory: the new name holds.
    std::fs::rename(d.join("old"), d.join("new")).unwrap();
    sync_dir(&d);
    mount.cut_power();
    assert_eq!(std::fs::read(d.join("new")).unwrap(), b"x");
    assert!(!d.join("old").exists());
}
