//! The connect page as a person uses it: headless Debian `chromium`, driven through
//! `chromedriver` (WebDriver), against a spawned `notes-example serve --http 127.0.0.1:0`.
//!
//! The user opens the one-time link, sees the form, enters the token, submits and sees the
//! success page; then the same link is refused, another principal's token is refused, a
//! cross-site form post without the CSRF token is refused, and a post from a foreign origin is
//! refused. Attack pages are served by the test from `http://localhost:PORT` (an origin the
//! server allows, but another site than `127.0.0.1`) and `http://evil.test:PORT` (mapped to
//! 127.0.0.1 inside chromium only). Everything stays on loopback.
//!
//! Without `/usr/bin/chromedriver` or `/usr/bin/chromium` the test prints `skipped: ...` and
//! passes, unless `MCP_REQUIRE_BROWSER=1` (CI), where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
const SECRET: &str = "EXPORT-SECRET-in-the-browser";

/// Whether the browser is installed; otherwise says why the test is skipped (or fails it
/// under `MCP_REQUIRE_BROWSER=1`).
fn browser_available() -> bool {
    let missing: Vec<&str> = [CHROMEDRIVER, CHROMIUM]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!(
        "{} not installed (apt-get install chromium chromium-driver)",
        missing.join(" and ")
    );
    assert!(
        std::env::var("MCP_REQUIRE_BROWSER").as_deref() != Ok("1"),
        "MCP_REQUIRE_BROWSER=1 but {why}"
    );
    eprintln!("skipped: {why}");
    false
}

/// A `chromedriver` on a free loopback port, killed (with the browsers it started) on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Its own process group, so drop can take chromium down with it.
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let driver = Self { child, port };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "chromedriver did not listen"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        driver
    }

    async fn browser(&self) -> Client {
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--disable-extensions",
                    "--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable",
                    // The foreign site of the Origin check, on loopback.
                    "--host-resolver-rules=MAP evil.test 127.0.0.1",
                ],
            },
        });
        let serde_json::Value::Object(caps) = caps else {
            unreachable!()
        };
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("chromedriver starts a chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The process group this test created (chromedriver and its chromium), by its id,
        // through a typed call: never a `kill` command line, where `kill -KILL -1234` is read
        // by procps as `kill(-1, SIGKILL)`, every process on the machine.
        let pgid = i32::try_from(self.child.id())
            .ok()
            .filter(|&id| id > 1)
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pgid) = pgid {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tiny web server for the attack pages: path → HTML, everything else 404.
async fn attack_site(pages: Arc<Mutex<HashMap<String, String>>>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let pages = Arc::clone(&pages);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                let read = tokio::time::timeout(Duration::from_secs(5), async {
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                })
                .await;
                if read.is_err() {
                    return;
                }
                let text = String::from_utf8_lossy(&head);
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let page = pages.lock().unwrap().get(&path).cloned();
                let (status, body) = match page {
                    Some(html) => ("200 OK", html),
                    None => ("404 Not Found", String::new()),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    addr
}

/// An attack page: a form that posts `fields` to `action` when its button is clicked.
fn attack_page(action: &str, fields: &[(&str, &str)]) -> String {
    let inputs: String = fields
        .iter()
        .map(|(k, v)| format!("<input type=\"hidden\" name=\"{k}\" value=\"{v}\">"))
        .collect();
    format!(
        "<!doctype html><title>Win a prize</title><form method=\"post\" action=\"{action}\">\
         {inputs}<button id=\"go\" type=\"submit\">Claim</button></form>"
    )
}

/// Waits (at most 10 s) for an outcome page and returns its message.
async fn outcome(c: &Client) -> String {
    c.wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Id("outcome"))
        .await
        .expect("an outcome page")
        .text()
        .await
        .unwrap()
}

/// Opens `url`, checks the form is there, fills it in as a person would, and submits.
async fn fill_in(c: &Client, url: &str, mcp_token: &str) -> String {
    c.goto(url).await.unwrap();
    let token = c
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("input[name=mcp_token]"))
        .await
        .expect("the connect form");
    token.send_keys(mcp_token).await.unwrap();
    c.find(Locator::Css("input[name=export_token]"))
        .await
        .unwrap()
        .send_keys(SECRET)
        .await
        .unwrap();
    c.find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    outcome(c).await
}

async fn attack(c: &Client, url: &str) -> String {
    c.goto(url).await.unwrap();
    c.wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Id("go"))
        .await
        .expect("the attack page")
        .click()
        .await
        .unwrap();
    outcome(c).await
}

/// Retries the flow with `state`, accepting the link: whether the export is connected. A
/// retry whose page is not finished is asked again under a new `requestState` (the one sent is
/// used up), which replaces `state`.
async fn connected(addr: SocketAddr, state: &mut String) -> bool {
    match call_connect(addr, ALICE, url_caps(), Some(state)).await {
        Ok(mcp_runtime::client::Step::Complete(r)) => r.text() == "The export is connected.",
        Ok(mcp_runtime::client::Step::Pending(round)) => {
            if let Some(next) = round.request_state() {
                *state = next.to_owned();
            }
            false
        }
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connect_page_in_a_real_browser() {
    if !browser_available() {
        return;
    }
    let fx = Fixture::new();
    let served = Served::start(&fx.serve_args("127.0.0.1:0"));
    let addr = served.addr;
    let pages = Arc::new(Mutex::new(HashMap::new()));
    let attacker = attack_site(Arc::clone(&pages)).await;
    let driver = Driver::start().await;
    let c = driver.browser().await;

    let steps = async {
        // The user's first link: another principal's token is refused, then the user's own
        // completes it, and the MCP retry sees it.
        let (url, mut state) = fresh_link(addr, ALICE).await;
        let text = fill_in(&c, &url, BOB).await;
        assert!(text.contains("another user"), "{text}");
        assert!(!connected(addr, &mut state).await);
        let text = fill_in(&c, &url, ALICE).await;
        assert!(text.starts_with("Connected"), "{text}");
        assert!(connected(addr, &mut state).await);
        // The same link a second time: refused.
        c.goto(&url).await.unwrap();
        let text = outcome(&c).await;
        assert!(text.contains("unknown, used or expired"), "{text}");

        // A second link, opened by the user (the browser now holds its cookie).
        let (url, mut state) = fresh_link(addr, ALICE).await;
        c.goto(&url).await.unwrap();
        let csrf = c
            .find(Locator::Css("input[name=csrf]"))
            .await
            .unwrap()
            .attr("value")
            .await
            .unwrap()
            .unwrap();
        // A cross-site post from an origin the server allows (localhost is another site
        // than 127.0.0.1): no CSRF field, and SameSite=Strict keeps the cookie off.
        let fields = [("mcp_token", ALICE), ("export_token", "ATTACKER")];
        pages
            .lock()
            .unwrap()
            .insert("/csrf".to_owned(), attack_page(&url, &fields));
        let text = attack(&c, &format!("http://localhost:{}/csrf", attacker.port())).await;
        assert!(text.contains("did not come from this page"), "{text}");
        // A foreign origin, even holding the (stolen) CSRF token.
        let fields = [
            ("csrf", csrf.as_str()),
            ("mcp_token", ALICE),
            ("export_token", "ATTACKER"),
        ];
        pages
            .lock()
            .unwrap()
            .insert("/origin".to_owned(), attack_page(&url, &fields));
        let text = attack(&c, &format!("http://evil.test:{}/origin", attacker.port())).await;
        assert!(text.contains("Origin not allowed"), "{text}");
        assert!(!connected(addr, &mut state).await);
        // Neither attack spent the link: the user still completes it.
        let text = fill_in(&c, &url, ALICE).await;
        assert!(text.starts_with("Connected"), "{text}");
        assert!(connected(addr, &mut state).await);
    };
    let finished = tokio::time::timeout(Duration::from_secs(60), steps).await;
    let _ = c.close().await;
    assert!(finished.is_ok(), "the browser steps took over 60 s");
    let log = served.stderr();
    assert!(!log.contains(SECRET), "{log}");
}
