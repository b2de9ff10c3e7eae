//! The second fence: with a confinement bug put back on purpose (a test
//! build's `WEIR_FAULT_UNCONFINED`), a pipeline that names another tenant's
//! directory gets through weir's checks, and Linux Landlock stops its
//! threads at the kernel.

use super::{Victim, put};
use crate::serve::Server;

#[test]
fn a_path_bug_is_stopped_by_the_kernel() {
    if weir_serve::kernel_abi().is_err() {
        eprintln!("no Landlock on this kernel: the second fence is absent here (weir logs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start_with(&data, &[], &[("WEIR_FAULT_UNCONFINED", "1")], None);
    let mut alice = Victim::start(&s, &data);
    let mallory = s.tenant("mallory");
    let id = s.upload(&mallory, "uppercase");
    super::append_values(&data.join("tenants/mallory/log"), &["x"]);
    let planted = alice.root.join("planted");
    let spec = format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"files\"\npath = \"{}\"\n",
        planted.display()
    );
    // weir's own check lets it through (the bug), and the kernel stops
    // the pipeline's thread where it first writes: building its sink.
    let (st, v) = put(&s, &mallory, "plant", &spec);
    assert_eq!(st, 400, "{v}");
    assert!(
        v["detail"]
            .as_str()
            .is_some_and(|e| e.contains("Permission denied")),
        "{v}"
    );
    assert!(
        !planted.exists(),
        "the kernel let a write into alice's data"
    );
    alice.send(10);
    alice.assert_flowing();
}
