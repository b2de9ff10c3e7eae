//! The browser the dashboard test drives: Debian's chromedriver on a free
//! port and a headless Chromium session through fantoccini, with the few
//! steps the test needs (wait for a condition, click, type, screenshot).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// chromedriver on a free port, killed when dropped.
pub(crate) struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn chromedriver() -> (Driver, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect(
            "chromedriver: install Debian's chromium and chromium-driver (scripts/ensure-browser)",
        );
    let driver = Driver(child);
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while ureq::get(&format!("{url}/status"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
        .is_none_or(|v| v["value"]["ready"] != true)
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (driver, url)
}

pub(crate) async fn browser(webdriver: &str) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1100"]}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(webdriver)
        .await
        .expect("a headless chromium session")
}

pub(crate) struct Page<'a> {
    pub(crate) c: &'a Client,
    pub(crate) shots: &'a Path,
}

impl Page<'_> {
    pub(crate) async fn js(&self, expr: &str) -> Value {
        self.c
            .execute(&format!("return {expr};"), vec![])
            .await
            .unwrap()
    }

    pub(crate) async fn shot(&self, name: &str) {
        let png = self.c.screenshot().await.unwrap();
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }

    /// Wait until the JavaScript expression `expr` is true.
    pub(crate) async fn until(&self, what: &str, expr: &str) {
        let started = Instant::now();
        let script = format!("try {{ return !!({expr}); }} catch (e) {{ return false; }}");
        while self.c.execute(&script, vec![]).await.unwrap() != Value::Bool(true) {
            if started.elapsed() > Duration::from_secs(60) {
                self.shot("timed-out").await;
                panic!("timed out waiting for {what} ({expr})");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub(crate) async fn click(&self, css: &str) {
        self.c
            .find(Locator::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }

    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        let e = self.c.find(Locator::Css(css)).await.unwrap();
        e.send_keys(text).await.unwrap();
    }
}
