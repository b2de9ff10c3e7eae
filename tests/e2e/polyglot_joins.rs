//! The orders-payments join written in each language's SDK
//! (`examples/<lang>/orders-payments`), built as a user builds it and run
//! by the real `weir run` over the join suite's fixture: a full outer join
//! in micro-batch mode straight and with SIGKILLs, and in continuous mode,
//! against the join's definition (the Rust guest passes the same checks in
//! `stateful::joins`).

use std::path::Path;

use crate::stateful::joins::{JoinFixture, expected, final_watermark, inputs, same};
use crate::stateful::{faults_at, random_kills_of};
use crate::testkit::{self, run_ok, scaffold};

fn joins_in(lang: &str) {
    let file = match lang {
        "c" => "transform.c",
        other => testkit::own_file(other),
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("join-{lang}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let component = scaffold(
        &dir,
        lang,
        "golden",
        Some(&format!("orders-payments/{file}")),
    );
    let component = component.display().to_string();
    let grants = testkit::grants_line(lang);
    let (orders, pays) = inputs(1_000, 0x1a9e);
    for continuous in [false, true] {
        let want = expected(
            "full-outer",
            &orders,
            &pays,
            final_watermark(&orders, &pays, continuous),
        );
        let f = JoinFixture::with_component(
            "full-outer",
            continuous,
            &orders,
            &pays,
            &component,
            &grants,
        );
        run_ok(f.command());
        same(
            &f.output(),
            &want,
            &format!("{lang}, continuous {continuous}"),
        );
    }
    let want = expected(
        "full-outer",
        &orders,
        &pays,
        final_watermark(&orders, &pays, false),
    );
    let f = JoinFixture::with_component("full-outer", false, &orders, &pays, &component, &grants);
    let mut kills = 0;
    for fault in faults_at(&[2]) {
        let out = f.command().env("WEIR_FAULT", &fault).output().unwrap();
        kills += usize::from(!out.status.success());
    }
    kills += random_kills_of(&|| f.command(), 0x10a1, 3);
    run_ok(f.command());
    same(
        &f.output(),
        &want,
        &format!("{lang}, after {kills} SIGKILLs"),
    );
}

#[test]
fn python_joins_equal_their_definition() {
    joins_in("python");
}

#[test]
fn js_joins_equal_their_definition() {
    joins_in("js");
}

#[test]
fn go_joins_equal_their_definition() {
    joins_in("go");
}

#[test]
fn c_joins_equal_their_definition() {
    joins_in("c");
}
