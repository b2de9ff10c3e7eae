//! `weir test GUEST.wasm --input FILE [--expect FILE]`: a guest over sample
//! records as a pipeline runs it, compared with an expectation, including a
//! windowed count checked against a reference the test computes.

use std::process::Output;

use crate::testkit::{self, guest, weir};

fn weir_test(args: &[&str]) -> Output {
    weir().arg("test").args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_guest_is_tested_against_an_expectation_with_rejections_shown() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "hello\nbad\nworld\n").unwrap();
    let expect = dir.path().join("expect.txt");
    std::fs::write(&expect, "WORLD\nHELLO\n").unwrap();
    let upper = guest("uppercase");
    let (input, expect) = (input.to_str().unwrap(), expect.to_str().unwrap());
    let misbehave = guest("misbehave");

    // Unordered by default: keyed guests emit in state-partition order.
    std::fs::write(dir.path().join("in2.txt"), "hello\nworld\n").unwrap();
    let in2 = dir.path().join("in2.txt");
    let o = weir_test(&[
        upper.to_str().unwrap(),
        "--input",
        in2.to_str().unwrap(),
        "--expect",
        expect,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "HELLO\nWORLD\n");
    assert!(
        stderr(&o).contains("ok: 2 output record(s) as expected"),
        "{}",
        stderr(&o)
    );
    let o = weir_test(&[
        upper.to_str().unwrap(),
        "--input",
        in2.to_str().unwrap(),
        "--expect",
        expect,
        "--ordered",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("line 1: expected \"WORLD\", got \"HELLO\""),
        "{}",
        stderr(&o)
    );

    // Rejections are printed with their line and kind, and compared output
    // shows what is missing and what is extra.
    let o = weir_test(&[
        misbehave.to_str().unwrap(),
        "--input",
        input,
        "--expect",
        expect,
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("line 2: bad-record: this record is bad on purpose"),
        "{err}"
    );
    assert!(err.contains("1 record(s) rejected"), "{err}");
    assert!(err.contains("- HELLO") && err.contains("+ hello"), "{err}");

    // Limits apply as in a pipeline: a guest past its call timeout on a
    // record has that record rejected; an unknown limit is named.
    let looping = dir.path().join("loop.txt");
    std::fs::write(&looping, "a\nloop\nb\n").unwrap();
    let o = weir_test(&[
        misbehave.to_str().unwrap(),
        "--input",
        looping.to_str().unwrap(),
        "--limit",
        "call-timeout=50ms",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "a\nb\n");
    assert!(stderr(&o).contains("line 2: deadline:"), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("WARN"),
        "the engine's warnings stay quiet: {}",
        stderr(&o)
    );
    let o = weir_test(&[
        misbehave.to_str().unwrap(),
        "--input",
        input,
        "--limit",
        "speed=11",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("speed"), "{}", stderr(&o));

    // Named outputs print with their name.
    let routed = dir.path().join("routed.jsonl");
    std::fs::write(
        &routed,
        "{\"region\":\"eu\",\"n\":1}\n{\"region\":\"us\",\"n\":2}\n",
    )
    .unwrap();
    let router = guest("router");
    let o = weir_test(&[
        router.to_str().unwrap(),
        "--input",
        routed.to_str().unwrap(),
        "-c",
        "field=region",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("eu"),
        "an unrouted output is named: {}",
        stderr(&o)
    );
    let o = weir_test(&[
        router.to_str().unwrap(),
        "--input",
        routed.to_str().unwrap(),
        "-c",
        "field=region",
        "--output",
        "eu",
        "--output",
        "us",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.lines().any(|l| l.starts_with("[eu] ")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("[us] ")), "{out}");
}

#[test]
fn windows_fire_at_the_final_watermark_and_match_a_reference() {
    let dir = tempfile::tempdir().unwrap();
    // 5 keys over about 80 s, out of order by up to 20 s (within the delay).
    let (input, expect) = crate::testkit::window_events(dir.path(), 600, 5, 100, 20_000, 10_000);
    let counts = guest("window-count");
    let args = [
        counts.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--format",
        "json",
        "--key-field",
        "key",
        "--event-time",
        "ts",
        "--delay",
        "30s",
        "-c",
        "key-field=key",
        "-c",
        "size=10s",
        "--expect",
        expect.to_str().unwrap(),
    ];
    let o = weir_test(&args);
    assert!(
        o.status.success(),
        "{}\n{}",
        stderr(&o),
        String::from_utf8_lossy(&o.stdout)
    );
    // A stateful guest needs a key, and says how to give one.
    let o = weir_test(&args[..5]);
    assert!(
        stderr(&o).contains("give --key-field FIELD"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn weir_new_build_and_test_work_from_an_empty_directory_in_rust() {
    let dir = tempfile::tempdir().unwrap();
    let in_dir = |args: &[&str], cwd: &std::path::Path| {
        testkit::rust_guest_build(weir().args(args).current_dir(cwd))
            .output()
            .unwrap()
    };
    let o = in_dir(&["new", "--lang", "rust", "shout"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let project = dir.path().join("shout");
    for f in [
        ".gitignore",
        "README.md",
        "src/lib.rs",
        "sample/input.txt",
        "sample/expected.txt",
    ] {
        assert!(project.join(f).exists(), "{f}");
    }
    let o = in_dir(&["new", "--lang", "rust", "shout"], dir.path());
    assert!(stderr(&o).contains("exists already"), "{}", stderr(&o));
    // Portable: the SDK is vendored into the project, not named by a path
    // on this machine, so the directory can be committed and cloned.
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(r#"weir-guest = { path = "weir/guest-sdk""#),
        "{manifest}"
    );
    assert!(!manifest.contains(env!("CARGO_MANIFEST_DIR")), "{manifest}");
    let moved = dir.path().join("elsewhere/shout");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&project, &moved).unwrap();
    let project = moved;
    let o = in_dir(&["build"], &project);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("built ./shout.wasm"));
    let o = in_dir(
        &[
            "test",
            "shout.wasm",
            "--input",
            "sample/input.txt",
            "--expect",
            "sample/expected.txt",
        ],
        &project,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("ok: 3 output record(s) as expected"));
    // The scaffold's own unit test passes natively.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let t = testkit::rust_guest_build(
        std::process::Command::new(cargo)
            .args(["test", "--release", "--quiet"])
            .current_dir(&project),
    )
    .output()
    .unwrap();
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    crate::scaffolds::filter_and_flag::edit_build_test_run_deploy(
        "rust",
        &project,
        "shout.wasm",
        || in_dir(&["build"], &project),
    );
    // A syntax error fails the build with the compiler's message, no
    // missing-target hint (the target is installed), and no component
    // left from the build before.
    let lib = project.join("src/lib.rs");
    let mut code = std::fs::read_to_string(&lib).unwrap();
    code.push_str("\nfn broken( {\n");
    std::fs::write(&lib, code).unwrap();
    let o = in_dir(&["build"], &project);
    assert!(!o.status.success());
    assert!(!stderr(&o).contains("rustup target add"), "{}", stderr(&o));
    assert!(
        !project.join("shout.wasm").exists(),
        "a failed build leaves no old component"
    );
}
