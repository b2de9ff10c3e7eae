//! The `weir deploy|ls|logs|stop|start|rm|components` client against a
//! spawned `weir serve`, configured the way users do (WEIR_SERVER,
//! WEIR_TOKEN), and its one-line refusals.

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};
use std::time::Duration;

use super::Server;
use super::pipelines::append_values;
use crate::testkit::{guest, weir};

fn client(s: &Server, token: &str) -> impl Fn(&[&str]) -> Output {
    let (base, token) = (s.base.clone(), token.to_string());
    move |args: &[&str]| {
        weir()
            .args(args)
            .env("WEIR_SERVER", &base)
            .env("WEIR_TOKEN", &token)
            .output()
            .unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_client_deploys_lists_follows_stops_and_removes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let run = client(&s, &acme);
    let log = data.join("tenants/acme/log");
    weir_log::Topic::create(&log, "in", 2).unwrap();

    // A pipeline file as a user writes it: the component is a local file.
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(guest("misbehave"), project.join("guest.wasm")).unwrap();
    let file = project.join("shout.toml");
    std::fs::write(
        &file,
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"guest.wasm\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n",
    )
    .unwrap();
    let o = run(&["deploy", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).starts_with("deployed shout: component sha256:"),
        "{}",
        text(&o)
    );

    // Follow the logs while records arrive.
    let mut follow = weir()
        .args(["logs", "shout", "-f", "--tail", "0"])
        .env("WEIR_SERVER", &s.base)
        .env("WEIR_TOKEN", &acme)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The follower subscribes before the data comes.
    std::thread::sleep(Duration::from_millis(500));
    append_values(&log, &["log", "a", "b", "log"]);
    let mut seen = 0;
    while seen < 2 {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a followed line");
        if line.contains("acme/shout/") && line.ends_with(": log record seen") {
            seen += 1;
        }
    }
    let _ = follow.kill();
    let _ = follow.wait();

    let o = run(&["logs", "shout"]);
    assert_eq!(
        text(&o).matches("log record seen").count(),
        2,
        "{}",
        text(&o)
    );
    let o = run(&["ls"]);
    let listed = text(&o);
    assert!(listed.starts_with("NAME"), "{listed}");
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("shout") && l.contains("running")),
        "{listed}"
    );
    let o = run(&["components"]);
    assert!(text(&o).contains("transformer"), "{}", text(&o));
    let o = run(&["stop", "shout"]);
    assert_eq!(text(&o).trim(), "shout: stopped");
    let o = run(&["start", "shout"]);
    assert_eq!(text(&o).trim(), "shout: running");
    // Deploying the same file again replaces it (same bytes, same id).
    let o = run(&["deploy", file.to_str().unwrap()]);
    assert!(text(&o).starts_with("replaced shout:"), "{}", text(&o));
    let o = run(&["rm", "shout", "--purge"]);
    assert!(o.status.success(), "{}", text(&o));

    // Refusals are one line a user can act on.
    let o = run(&["stop", "shout"]);
    assert!(!o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        "error: the server refused (404 not-found): no pipeline `shout`"
    );
    let o = client(&s, "not-a-token")(&["ls"]);
    assert!(
        text(&o).contains("the server refused (401 unauthorized)"),
        "{}",
        text(&o)
    );
    let o = weir()
        .args(["ls", "--server", "http://127.0.0.1:9"])
        .env("WEIR_TOKEN", &acme)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot reach the weir server at http://127.0.0.1:9"),
        "{err}"
    );
    let o = weir()
        .args(["ls"])
        .env_remove("WEIR_TOKEN")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("set WEIR_TOKEN"));
}
