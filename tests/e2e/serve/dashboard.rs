//! The dashboard in a real headless Chromium (Debian's chromium and
//! chromedriver, driven over WebDriver by fantoccini) against a spawned
//! `weir serve`: log in, see a pipeline's rate rise, open it, see its
//! charts, stop and start it, replay a candidate and see its diff, deploy
//! it, read the same totals as `/metrics`; the admin's first load with 50
//! pipelines, weighed and timed; and the message when the server is gone.
//! Screenshots go to `target/tmp/dashboard/`.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fantoccini::Locator;

use super::Server;
use super::browser::{Page, browser, chromedriver};
use super::pipelines::{append_values, append_values_at, put};
use super::replay::SHOP;

/// Logs a line for each `log` record; `bad` records become dead letters.
const NOISY: &str = r#"
[[source]]
type = "log"
path = "log"
topic = "noisy"
[transform]
component = "COMPONENT"
on-error = "dead-letter"
[sink.default]
type = "files"
path = "noisy-out"
[sink.dead-letter]
type = "log"
path = "log"
topic = "dead"
"#;

/// Continuous, 50 ms epochs.
const STREAM: &str = r#"
mode = "continuous"
checkpoint-interval = "50ms"
[[source]]
type = "log"
path = "log"
topic = "in"
[transform]
component = "COMPONENT"
[sink.default]
type = "files"
path = "out"
"#;

const IDLE: &str = r#"
[[source]]
type = "log"
path = "log"
topic = "TOPIC"
[transform]
component = "COMPONENT"
[sink.default]
type = "files"
path = "out-TOPIC"
"#;

/// Append `values` stamped with the time now, as a producer would
/// (continuous latency is measured from it).
fn append_now(log: &Path, values: &[String]) {
    append_values_at(log, values, weir_engine::now_ms());
}

fn metric(s: &Server, token: &str, series: &str) -> Option<f64> {
    let mut r = ureq::get(&format!("{}/metrics", s.base))
        .header("Authorization", &format!("Bearer {token}"))
        .call()
        .unwrap();
    let text = r.body_mut().read_to_string().unwrap();
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn the_dashboard_runs_a_pipelines_life_in_a_real_browser() {
    let (_driver, webdriver) = chromedriver();
    let shots = crate::testkit::target_tmpdir().join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);

    // 50 pipelines over five tenants: acme's `shop` has 5,000 records to
    // start with; the rest wait on empty topics.
    let tenants: Vec<(&str, String)> = ["acme", "beta", "delta", "gamma", "omega"]
        .into_iter()
        .map(|t| (t, s.tenant(t)))
        .collect();
    let acme = tenants[0].1.clone();
    let values: Vec<String> = (0..5000).map(|i| format!("record {i}")).collect();
    append_values(&data.join("tenants/acme/log"), &values);
    let upper = s.upload(&acme, "uppercase");
    let (st, v) = put(&s, &acme, "shop", &SHOP.replace("COMPONENT", &upper));
    assert_eq!(st, 201, "{v}");
    let beta_log = data.join("tenants/beta/log");
    append_now(&beta_log, &["first".to_string()]);
    for (t, token) in &tenants {
        let id = if *t == "acme" {
            upper.clone()
        } else {
            s.upload(token, "uppercase")
        };
        let log = data.join("tenants").join(t).join("log");
        if *t == "beta" {
            let (st, v) = put(&s, token, "stream", &STREAM.replace("COMPONENT", &id));
            assert_eq!(st, 201, "{v}");
        }
        let idle = match *t {
            "acme" => 8,
            "beta" => 9,
            _ => 10,
        };
        for i in 0..idle {
            let topic = format!("idle-{i}");
            weir_log::Topic::create(&log, &topic, 1).unwrap();
            let spec = IDLE.replace("TOPIC", &topic).replace("COMPONENT", &id);
            let (st, v) = put(&s, token, &topic, &spec);
            assert_eq!(st, 201, "{v}");
        }
    }
    let noisy_log = data.join("tenants/acme/log");
    let mut t = weir_log::Topic::create(&noisy_log, "noisy", 1).unwrap();
    let mut b = weir_engine::RecordBatch::new(0);
    for v in ["log", "bad", "log", "fine", "bad", "log"] {
        b.push(None, v.as_bytes(), 0, 0);
    }
    t.append(None, &[b], || {}).unwrap();
    let misbehave = s.upload(&acme, "misbehave");
    let (st, v) = put(&s, &acme, "noisy", &NOISY.replace("COMPONENT", &misbehave));
    assert_eq!(st, 201, "{v}");
    // The first five batches (the 5,000 records) committed, then a trickle
    // of new records keeps the rate above zero.
    s.wait_committed(&acme, "shop", 4);
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = {
        let (stop, log) = (stop.clone(), data.join("tenants/acme/log"));
        let beta_log = beta_log.clone();
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let more: Vec<String> = (n..n + 50).map(|i| format!("more {i}")).collect();
                append_values(&log, &more);
                append_now(&beta_log, &more);
                n += 50;
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let canary = crate::testkit::guest("uppercase-canary");
    let canary_id = weir_runtime::sha256_hex(&std::fs::read(&canary).unwrap());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = browser(&webdriver).await;
        let p = Page { c: &c, shots: &shots };
        c.goto(&s.base).await.unwrap();
        p.until("the login form", "!document.querySelector('#login-screen').hidden").await;
        p.type_into("#token", &acme).await;
        p.click("#login").await;
        p.until("who is logged in", "document.querySelector('#who').textContent === 'acme'").await;
        let row = r#"document.querySelector('tr[data-pipeline="acme/shop"]')"#;
        p.until("shop in the list", row).await;
        p.until(
            "shop's processed rate above zero",
            &format!("parseFloat({row}.querySelector('.processed-rate').textContent) > 0"),
        )
        .await;
        assert_eq!(p.js("document.querySelectorAll('table#pipelines tbody tr').length").await, 10);
        let noisy = r#"document.querySelector('tr[data-pipeline="acme/noisy"]')"#;
        p.until("noisy's rejected rows by kind", &format!("{noisy}.querySelector('.rejected').textContent === 'bad-record 2'")).await;
        p.shot("1-list").await;

        // Guest logs, followed live, and dead letters with their reasons.
        p.click(r#"tr[data-pipeline="acme/noisy"] td.name a"#).await;
        p.until("three logged lines", "(document.querySelector('#logs').textContent.match(/log record seen/g) || []).length === 3").await;
        p.until("two dead letters", "(document.querySelector('#dead-letters').textContent.match(/this record is bad on purpose/g) || []).length === 2").await;
        let mut t = weir_log::Topic::open(&noisy_log, "noisy").unwrap();
        let mut b = weir_engine::RecordBatch::new(0);
        b.push(None, b"log", 0, 0);
        t.append(None, &[b], || {}).unwrap();
        p.until("a fourth line, live", "(document.querySelector('#logs').textContent.match(/log record seen/g) || []).length === 4").await;
        p.shot("1b-logs-and-dead-letters").await;
        c.goto(&s.base).await.unwrap();
        p.until("shop in the list", row).await;

        // Its page: charts with points, the checkpoint, the component.
        p.click(r#"tr[data-pipeline="acme/shop"] td.name a"#).await;
        p.until("the rate chart's points", "Number(document.querySelector('#chart-rate').dataset.points) >= 3").await;
        p.until("the duration chart's points", "Number(document.querySelector('#chart-duration').dataset.points) >= 3").await;
        p.until("the checkpoint", "document.querySelector('#checkpoint').textContent.includes('last committed')").await;
        p.until("the component", &format!("document.querySelector('#component').innerHTML.includes('{upper}')")).await;
        p.until("progress rows", "document.querySelectorAll('#progress-table tbody tr').length >= 3").await;
        p.shot("2-pipeline").await;

        // Stop: the totals on the page then equal /metrics exactly.
        p.click("#stop").await;
        p.until("stopped", "document.querySelector('#state').textContent.includes('stopped')").await;
        let series = r#"weir_input_rows_total{tenant="acme",pipeline="shop"}"#;
        let total = metric(&s, &acme, series).expect("the input counter");
        p.until(
            "the page's input rows to equal /metrics",
            &format!("document.querySelector('#totals [data-metric=\"input-rows\"]').textContent === '{total}'"),
        )
        .await;
        assert!(total >= 5000.0, "{total}");
        p.click("#start").await;
        p.until("running again", "document.querySelector('#state').textContent.includes('running')").await;

        // Replay the candidate over the first five batches: the five
        // records it changes.
        let file = c.find(Locator::Css("#replay-file")).await.unwrap();
        file.send_keys(&canary.display().to_string()).await.unwrap();
        p.until("the uploaded candidate selected", &format!("document.querySelector('#replay-component').value === '{canary_id}'")).await;
        for (id, v) in [("#replay-from", "0"), ("#replay-to", "4")] {
            p.js(&format!("(() => {{ const e = document.querySelector('{id}'); e.value = '{v}'; e.dispatchEvent(new Event('input')); }})()")).await;
        }
        p.click("#replay-run").await;
        p.until("the replay's total", "document.querySelector('#replay-total').textContent === '5'").await;
        p.until("the differences shown", "document.querySelectorAll('#replay-result .diff').length >= 5").await;
        let shown = p.js("document.querySelector('#replay-result').textContent").await;
        assert!(shown.as_str().unwrap().contains("RECORD 999!"), "{shown}");
        // Each difference says where it is in both outputs.
        let at = p.js("document.querySelector('#replay-result .diff .idx').textContent").await;
        assert!(at.as_str().unwrap().contains('#'), "{at}");
        p.js("document.querySelector('#replay').scrollIntoView()").await;
        p.shot("3-replay").await;

        // Deploy the candidate: the pipeline runs it from its checkpoint.
        let file = c.find(Locator::Css("#deploy-file")).await.unwrap();
        file.send_keys(&canary.display().to_string()).await.unwrap();
        p.click("#deploy").await;
        p.until("deployed", "document.querySelector('#deploy-result').textContent.startsWith('deployed')").await;
        let (_, v) = s.call("GET", "/v1/pipelines/shop", Some(&acme), None);
        assert_eq!(v["component"], canary_id.as_str());
        p.until("the new component shown", &format!("document.querySelector('#component').innerHTML.includes('{canary_id}')")).await;
        p.shot("4-deployed").await;

        // The admin's first load with all 50 pipelines: weighed and timed
        // from navigation start (the token kept in the session).
        c.goto(&s.base).await.unwrap();
        p.js("sessionStorage.clear()").await;
        c.refresh().await.unwrap();
        p.until("the login form", "!document.querySelector('#login-screen').hidden").await;
        p.type_into("#token", &s.admin).await;
        p.click("#login").await;
        p.until("admin", "document.querySelector('#who').textContent === 'admin'").await;
        c.refresh().await.unwrap();
        p.until("the first render", "window.weirDashboard && window.weirDashboard.rendered > 0").await;
        assert_eq!(p.js("document.querySelectorAll('table#pipelines tbody tr').length").await, 50);
        let rendered = p.js("window.weirDashboard.rendered").await.as_f64().unwrap();
        let bytes = p
            .js("(() => { const r = window.weirDashboard.rendered; \
                 const nav = performance.getEntriesByType('navigation')[0]; \
                 return performance.getEntriesByType('resource').filter((e) => e.startTime <= r) \
                   .reduce((n, e) => n + e.transferSize, nav.transferSize); })()")
            .await
            .as_f64()
            .unwrap();
        let parts = p
            .js("(() => { const r = window.weirDashboard.rendered; \
                 const nav = performance.getEntriesByType('navigation')[0]; \
                 return [['/', nav.transferSize]].concat(performance.getEntriesByType('resource') \
                   .filter((e) => e.startTime <= r) \
                   .map((e) => [e.name.replace(location.origin, ''), e.transferSize])); })()")
            .await;
        println!("dashboard first load, 50 pipelines: {bytes} bytes transferred ({parts}), rendered in {rendered:.0} ms");
        assert!(bytes < 200.0 * 1024.0, "first load {bytes} bytes");
        assert!(rendered < 1000.0, "first render {rendered} ms");
        p.shot("5-admin-50").await;
        // The admin opens another tenant's continuous pipeline: it acts for
        // that tenant, and the duration chart shows epoch latency.
        p.click(r#"tr[data-pipeline="beta/stream"] td.name a"#).await;
        p.until("beta's pipeline page", "document.querySelector('#checkpoint').textContent.includes('epoch')").await;
        p.until("its component", "document.querySelector('#component').textContent.includes('transformer')").await;
        p.until("epoch latency", "document.querySelector('#duration-title').textContent === 'Epoch latency (ms)'").await;
        p.until("latency points", "Number(document.querySelector('#chart-duration').dataset.points) >= 3").await;
        let (_, reports) = s.call("GET", "/v1/pipelines/stream/progress", Some(&tenants[1].1), None);
        let p99 = reports.as_array().unwrap().iter().rev().find_map(|r| r["latencyMs"]["p99"].as_u64());
        assert!(p99.is_some_and(|ms| ms < 60_000), "epoch latency p99 {p99:?} ms");
        p.shot("5b-continuous").await;

        // The server gone: the page says so.
        let killed = Command::new("kill")
            .args(["-9", &s.pid().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        p.until("the unreachable banner", "!document.querySelector('#banner').hidden && document.querySelector('#banner').textContent.includes('unreachable')").await;
        p.shot("6-unreachable").await;
        c.close().await.unwrap();
    });
    stop.store(true, Ordering::Relaxed);
    trickle.join().unwrap();
}
