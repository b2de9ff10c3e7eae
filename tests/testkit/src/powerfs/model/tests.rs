use std::ffi::OsStr;

use super::*;

fn name(s: &str) -> &OsStr {
    OsStr::new(s)
}

fn contents(m: &Model, dir: u64, file: &str) -> Option<Vec<u8>> {
    let ino = m.lookup(dir, name(file)).ok()?;
    Some(m.read(ino, 0, usize::MAX >> 1).unwrap().to_vec())
}

#[test]
fn only_what_was_synced_survives_a_cut() {
    let mut m = Model::new();
    let f = m.create(ROOT, name("a"), false, 0o644).unwrap();
    m.write(f, 0, b"hello").unwrap();
    m.fsync(f).unwrap();
    m.cut_power();
    assert_eq!(contents(&m, ROOT, "a"), None, "its entry was never synced");

    let f = m.create(ROOT, name("a"), false, 0o644).unwrap();
    m.write(f, 0, b"hello").unwrap();
    m.fsync(ROOT).unwrap();
    m.cut_power();
    assert_eq!(
        contents(&m, ROOT, "a"),
        Some(vec![]),
        "entry synced, data not"
    );

    let f = m.lookup(ROOT, name("a")).unwrap();
    m.write(f, 0, b"hello").unwrap();
    m.fsync(f).unwrap();
    m.write(f, 5, b" world").unwrap();
    m.cut_power();
    assert_eq!(contents(&m, ROOT, "a"), Some(b"hello".to_vec()));
}

#[test]
fn renames_and_unlinks_need_the_directory_synced() {
    let mut m = Model::new();
    let d = m.create(ROOT, name("d"), true, 0o755).unwrap();
    let f = m.create(d, name("tmp"), false, 0o644).unwrap();
    m.write(f, 0, b"v1").unwrap();
    m.fsync(f).unwrap();
    m.fsync(d).unwrap();
    m.fsync(ROOT).unwrap();
    m.rename(d, name("tmp"), d, name("final"), false).unwrap();
    m.cut_power();
    assert_eq!(
        contents(&m, d, "tmp"),
        Some(b"v1".to_vec()),
        "rename undone"
    );
    assert_eq!(contents(&m, d, "final"), None);

    m.rename(d, name("tmp"), d, name("final"), false).unwrap();
    m.fsync(d).unwrap();
    m.remove(d, name("final"), false).unwrap();
    m.cut_power();
    assert_eq!(
        contents(&m, d, "final"),
        Some(b"v1".to_vec()),
        "unlink undone"
    );
    assert!(m.rename(d, name("final"), d, name("final2"), true).is_ok());
    let g = m.create(d, name("other"), false, 0o644).unwrap();
    assert_eq!(
        m.rename(d, name("other"), d, name("final2"), true),
        Err(libc::EEXIST)
    );
    assert_eq!(m.nlink(g), 1);
}

#[test]
fn a_new_directory_holds_nothing_until_it_is_synced_itself() {
    let mut m = Model::new();
    let d = m.create(ROOT, name("d"), true, 0o755).unwrap();
    let f = m.create(d, name("f"), false, 0o644).unwrap();
    m.fsync(f).unwrap();
    m.fsync(ROOT).unwrap();
    m.cut_power();
    let d = m.lookup(ROOT, name("d")).unwrap();
    assert_eq!(m.list(d).unwrap(), vec![]);
    assert_eq!(m.cuts, 1);
}

#[test]
fn a_writeback_before_the_cut_keeps_whole_inodes() {
    let mut m = Model::new();
    let a = m.create(ROOT, name("a"), false, 0o644).unwrap();
    m.write(a, 0, b"aaa").unwrap();
    let mut all = || true;
    m.cut_power_after_writeback(&mut all);
    assert_eq!(contents(&m, ROOT, "a"), Some(b"aaa".to_vec()));
    let a = m.lookup(ROOT, name("a")).unwrap();
    m.write(a, 3, b"more").unwrap();
    let mut none = || false;
    m.cut_power_after_writeback(&mut none);
    assert_eq!(contents(&m, ROOT, "a"), Some(b"aaa".to_vec()));
}
