//! Each kind of unusable binary gets its own one-line, actionable error.

use std::path::Path;

use weir_runtime::LoadError;

use crate::testkit::{guest, runtime};

fn load_err(path: &Path, bytes: &[u8]) -> LoadError {
    runtime()
        .load_bytes(path, bytes, &[])
        .err()
        .expect("must be refused")
}

fn one_line(e: &LoadError) -> String {
    let s = e.to_string();
    assert!(!s.contains('\n'), "error is not one line: {s}");
    s
}

#[test]
fn text_file_is_not_wasm() {
    let e = load_err(Path::new("notes.txt"), b"hello world\n");
    assert!(matches!(e, LoadError::NotWasm { .. }));
    assert_eq!(
        one_line(&e),
        r#"notes.txt: not a WebAssembly binary (it starts with the text "hello world\n"); build the transform with `cargo build --target wasm32-wasip2`"#
    );
    let e = load_err(Path::new("empty.wasm"), b"");
    assert!(one_line(&e).contains("the file is empty"));
}

#[test]
fn core_module_is_not_a_component() {
    let module = wat::parse_str("(module (func (export \"f\")))").unwrap();
    let e = load_err(Path::new("core.wasm"), &module);
    assert!(matches!(e, LoadError::CoreModule { .. }));
    assert!(one_line(&e).starts_with("core.wasm: is a core wasm module, not a component"));
}

#[test]
fn truncated_component_is_invalid() {
    let bytes = std::fs::read(guest("uppercase")).unwrap();
    let e = load_err(Path::new("cut.wasm"), &bytes[..bytes.len() / 2]);
    assert!(matches!(e, LoadError::Invalid { .. }), "{e}");
    assert!(one_line(&e).starts_with("cut.wasm: invalid component:"));
}

#[test]
fn wrong_world_component_names_what_it_exports() {
    let e = runtime()
        .load(&guest("not-a-transform"), &[])
        .err()
        .unwrap();
    let msg = one_line(&e);
    assert!(matches!(e, LoadError::MissingExport { .. }), "{msg}");
    assert!(
        msg.contains("does not export `weir:transform/transform@0.2.0`"),
        "{msg}"
    );
    assert!(msg.contains("wasi:cli/run@0.2"), "{msg}");
}

#[test]
fn wrong_export_types_are_refused() {
    let wat = r#"(component
        (core module $m (func (export "f")))
        (core instance $i (instantiate $m))
        (func $f (canon lift (core func $i "f")))
        (instance $t (export "init" (func $f)))
        (export "weir:transform/transform@0.2.0" (instance $t)))"#;
    let bytes = wat::parse_str(wat).unwrap();
    let e = load_err(Path::new("shape.wasm"), &bytes);
    let msg = one_line(&e);
    assert!(matches!(e, LoadError::WrongExports { .. }), "{msg}");
    assert!(
        msg.contains("does not match the transformer world"),
        "{msg}"
    );
}

#[test]
fn a_contract_0_1_component_is_refused_with_how_to_rebuild() {
    let wat = r#"(component
        (core module $m (func (export "f")))
        (core instance $i (instantiate $m))
        (func $f (canon lift (core func $i "f")))
        (instance $t (export "init" (func $f)))
        (export "weir:transform/transform@0.1.0" (instance $t)))"#;
    let e = load_err(Path::new("v1.wasm"), &wat::parse_str(wat).unwrap());
    assert_eq!(
        one_line(&e),
        "v1.wasm: exports `weir:transform/transform@0.1.0` but this weir speaks `weir:transform/transform@0.2.0` (contract 0.2 changed values, headers and errors); rebuild it against this weir's wit/ (`weir build`, or the current weir-guest SDK)"
    );
}

#[test]
fn imports_beyond_the_grants_are_refused_by_name() {
    let path = guest("sneaky");
    let e = runtime().load(&path, &[]).err().unwrap();
    let msg = one_line(&e);
    assert!(matches!(e, LoadError::NotGranted { .. }), "{msg}");
    assert!(msg.contains("imports `wasi:sockets/"), "{msg}");
    assert!(msg.ends_with("which this pipeline does not grant"), "{msg}");
}

#[test]
fn granted_imports_still_see_an_empty_sandbox() {
    use weir_engine::Transform;
    use weir_runtime::{CallMode, Limits, WasmTransform};
    let rt = runtime();
    let path = guest("sneaky");
    let ifaces: Vec<String> = [
        "wasi:sockets/tcp",
        "wasi:sockets/network",
        "wasi:sockets/instance-network",
        "wasi:sockets/tcp-create-socket",
        "wasi:sockets/udp",
        "wasi:sockets/udp-create-socket",
        "wasi:sockets/ip-name-lookup",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let c = rt.load(&path, &ifaces).expect("granted");
    let mut t =
        WasmTransform::new(&c, vec![], Limits::default(), "sneaky", CallMode::Batch).unwrap();
    let input = crate::testkit::batch(&["x"]);
    let out = t.process_batch(&input).unwrap();
    let v = crate::testkit::values(&out, &input).remove(0);
    assert!(v.starts_with("fs: denied"), "{v}");
    assert!(v.contains("net: denied"), "{v}");
    assert!(v.ends_with("env: empty"), "{v}");
}

#[test]
fn granted_capabilities_are_exactly_what_the_guest_gets() {
    use weir_engine::Transform;
    use weir_runtime::{CallMode, Limits, Sandbox, WasmTransform};
    let sockets: Vec<String> = ["wasi:sockets"].iter().map(|s| s.to_string()).collect();
    let etc = tempfile::tempdir().unwrap();
    std::fs::write(etc.path().join("hostname"), "sandboxed-host").unwrap();
    let run = |sandbox: Sandbox| {
        let c = runtime()
            .load(&guest("sneaky"), &sockets)
            .unwrap()
            .with_sandbox(sandbox);
        let mut t =
            WasmTransform::new(&c, vec![], Limits::default(), "sneaky", CallMode::Batch).unwrap();
        let input = crate::testkit::batch(&["x"]);
        let out = t.process_batch(&input).unwrap();
        crate::testkit::values(&out, &input).remove(0)
    };
    let none = run(Sandbox::default());
    assert!(none.contains("clock: frozen"), "{none}");
    assert!(none.contains("wr: denied"), "{none}");
    let granted = run(Sandbox {
        dirs: vec![(etc.path().to_path_buf(), "/etc".into())],
        env: vec![("HOME".into(), "/home/guest".into())],
        wall_clock: true,
    });
    assert!(granted.starts_with("fs: read /etc/hostname"), "{granted}");
    assert!(granted.contains("wr: denied"), "read-only: {granted}");
    assert!(granted.contains("net: denied"), "{granted}");
    assert!(!granted.contains("clock: frozen"), "{granted}");
    assert!(granted.ends_with("env: HOME=/home/guest"), "{granted}");
    assert!(!etc.path().join("weir-probe").exists());
}
