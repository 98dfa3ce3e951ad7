//! A headless Chromium for browser tests, driven over the Chrome DevTools Protocol.
//!
//! [`Browser::launch`] starts Debian's `/usr/bin/chromium` (scripts/install-chromium.sh
//! installs it) on a fresh profile in a temporary directory, with every background
//! network feature off (without them it keeps calling out to a network the tests do
//! not have), a debugging port the OS picks, and a phone-sized window (390 x 844). It
//! reads the port from `<profile>/DevToolsActivePort`, connects to the browser's
//! WebSocket (plain `ws://127.0.0.1`), and attaches to its page with a flattened
//! session. Dropping the [`Browser`] kills Chromium's whole process group and removes
//! the directory.
//!
//! Without `/usr/bin/chromium`, `launch` prints a notice and returns None (the test
//! skips), unless `REQUIRE_CHROMIUM` is set to anything but `0` or
//! `false` (scripts/test sets it): then it panics.
//!
//! Screenshots go to `target/screenshots/<test>/NN-<state>.png` ([`Browser::shot`]).

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Where the browser is; Debian's package puts it there.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// The window (and emulated phone screen) the pages are shown in, CSS pixels.
pub const WIDTH: u32 = 390;
/// See [`WIDTH`].
pub const HEIGHT: u32 = 844;
/// How long one DevTools command may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// One headless Chromium with one page attached; see the module's docs.
pub struct Browser {
    child: Child,
    dir: PathBuf,
    ws: Ws,
    session: String,
    next_id: u64,
    events: VecDeque<Value>,
    shots: PathBuf,
    shot_count: u32,
}

static LAUNCHES: AtomicU32 = AtomicU32::new(0);

/// Whether a missing Chromium fails the test: `REQUIRE_CHROMIUM` set to anything but
/// empty, `0` or `false` (`1`, `yes`, `true`: whatever a CI script says).
pub fn chromium_required() -> bool {
    std::env::var("REQUIRE_CHROMIUM")
        .is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

impl Browser {
    /// Starts Chromium for the test `test_name` (its screenshots' folder), or None, with
    /// a notice, when Chromium is not installed and not required ([`chromium_required`]).
    pub async fn launch(test_name: &str) -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() {
            if chromium_required() {
                panic!(
                    "{CHROMIUM} is missing and REQUIRE_CHROMIUM=1: run scripts/install-chromium.sh"
                );
            }
            eprintln!(
                "NOTICE: skipping browser test {test_name}: {CHROMIUM} is missing \
                 (scripts/install-chromium.sh installs it; REQUIRE_CHROMIUM=1 makes this a failure)"
            );
            return None;
        }
        let n = LAUNCHES.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir =
            std::env::temp_dir().join(format!("chromium-test-{}-{n}-{nanos}", std::process::id()));
        let profile = dir.join("profile");
        std::fs::create_dir_all(&profile).unwrap();
        let log = std::fs::File::create(dir.join("chromium.log")).unwrap();
        let child = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--mute-audio",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--window-size={WIDTH},{HEIGHT}"))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            // Its own process group: Drop kills Chromium and every helper it started.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMIUM}: {e}"));
        let mut browser_dir_guard = DirGuard(Some(dir.clone()), child.id());
        let ws_url = wait_for_port_file(&profile, &dir).await;
        let (ws, _) = tokio_tungstenite::connect_async(ws_url.as_str())
            .await
            .unwrap_or_else(|e| panic!("cannot connect to Chromium at {ws_url}: {e}"));
        browser_dir_guard.0 = None;
        let exe = std::env::current_exe().unwrap();
        // target/debug/deps/<test binary> -> target/screenshots/<test name>
        let target = exe.ancestors().nth(3).unwrap_or(Path::new("target"));
        let shots = target.join("screenshots").join(test_name);
        // A run's screenshots replace the last run's (numbers would otherwise mix).
        let _ = std::fs::remove_dir_all(&shots);
        let mut b = Browser {
            child,
            dir,
            ws,
            session: String::new(),
            next_id: 0,
            events: VecDeque::new(),
            shots,
            shot_count: 0,
        };
        b.attach().await;
        Some(b)
    }

    /// Attaches to the page Chromium opened (or a new one), enables the Page domain,
    /// and emulates a phone screen of `WIDTH` x `HEIGHT`.
    async fn attach(&mut self) {
        let targets = self.call_browser("Target.getTargets", json!({})).await;
        let existing = targets["targetInfos"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str().map(String::from));
        let target_id = match existing {
            Some(id) => id,
            None => {
                let created = self
                    .call_browser("Target.createTarget", json!({"url": "about:blank"}))
                    .await;
                created["targetId"].as_str().unwrap().to_string()
            }
        };
        let attached = self
            .call_browser(
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
            )
            .await;
        self.session = attached["sessionId"].as_str().unwrap().to_string();
        self.call("Page.enable", json!({})).await;
        self.call("Runtime.enable", json!({})).await;
        self.set_viewport(WIDTH, HEIGHT).await;
    }

    /// Emulates a phone screen `width` x `height` CSS pixels wide (mobile, so the page's
    /// viewport meta applies).
    pub async fn set_viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": true}),
        )
        .await;
    }

    /// Sends a command to the attached page and returns its result; panics on an error
    /// answer or after 30 s.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(session)).await
    }

    /// Sends a command to the browser itself (no session).
    async fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None).await
    }

    async fn send(&mut self, method: &str, params: Value, session: Option<String>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .await
            .unwrap_or_else(|e| panic!("{method}: cannot send: {e}"));
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let m = self.next_message(deadline, method).await;
            if m["id"].as_u64() == Some(id) {
                if let Some(err) = m.get("error") {
                    panic!("{method} failed: {err}");
                }
                return m["result"].clone();
            }
            if m.get("method").is_some() {
                self.events.push_back(m);
                if self.events.len() > 1000 {
                    self.events.pop_front();
                }
            }
        }
    }

    async fn next_message(&mut self, deadline: Instant, what: &str) -> Value {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let next = tokio::time::timeout(left, self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("{what}: no answer from Chromium in time"));
            match next {
                Some(Ok(Message::Text(t))) => return serde_json::from_str(&t).unwrap(),
                Some(Ok(Message::Binary(b))) => return serde_json::from_slice(&b).unwrap(),
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!("{what}: DevTools connection failed: {e}"),
                None => panic!("{what}: Chromium closed the DevTools connection"),
            }
        }
    }

    /// Waits (at most `timeout`) for an event of the attached page named `method`,
    /// looking first at the ones already received.
    async fn wait_event(&mut self, method: &str, timeout: Duration) -> Value {
        let mine = |m: &Value, s: &str| m["method"] == method && m["sessionId"] == s;
        if let Some(i) = self.events.iter().position(|m| mine(m, &self.session)) {
            return self.events.remove(i).unwrap();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let m = self.next_message(deadline, method).await;
            if mine(&m, &self.session) {
                return m;
            }
        }
    }

    /// Opens `url` and waits (at most 30 s) for its load event.
    pub async fn navigate(&mut self, url: &str) {
        self.events.retain(|m| m["method"] != "Page.loadEventFired");
        let r = self.call("Page.navigate", json!({"url": url})).await;
        if let Some(e) = r.get("errorText").and_then(Value::as_str) {
            panic!("navigating to {url} failed: {e}");
        }
        self.wait_event("Page.loadEventFired", CALL_TIMEOUT).await;
    }

    /// Clicks the element the CSS selector `css` finds (a submit button, a link) and
    /// waits (at most 30 s) for the page it loads. `window.confirm` answers yes first:
    /// a headless browser has nobody to answer the consoles' confirmations.
    pub async fn click_and_load(&mut self, css: &str) {
        self.events.retain(|m| m["method"] != "Page.loadEventFired");
        let sel = json!(css);
        self.eval(&format!(
            "(() => {{ window.confirm = () => true; const el = document.querySelector({sel}); \
             if (!el) throw new Error('nothing matches ' + {sel}); el.click(); return true; }})()"
        ))
        .await;
        self.wait_event("Page.loadEventFired", CALL_TIMEOUT).await;
    }

    /// Sets the value of the form control `css` finds (checks a checkbox for `"on"`),
    /// as typing would, with its `input` and `change` events.
    pub async fn fill(&mut self, css: &str, value: &str) {
        let (sel, val) = (json!(css), json!(value));
        self.eval(&format!(
            "(() => {{ const el = document.querySelector({sel}); \
             if (!el) throw new Error('nothing matches ' + {sel}); \
             if (el.type === 'checkbox') {{ el.checked = {val} === 'on'; }} else {{ el.value = {val}; }} \
             el.dispatchEvent(new Event('input', {{bubbles: true}})); \
             el.dispatchEvent(new Event('change', {{bubbles: true}})); return true; }})()"
        ))
        .await;
    }

    /// The page's whole HTML as the browser holds it now.
    pub async fn html(&mut self) -> String {
        self.eval("document.documentElement.outerHTML")
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Evaluates `js` in the page (awaiting a promise it returns) and returns its value
    /// as JSON (`null` for `undefined`); panics when it throws.
    pub async fn eval(&mut self, js: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        if let Some(ex) = r.get("exceptionDetails") {
            panic!("`{js}` threw: {ex}");
        }
        r["result"].get("value").cloned().unwrap_or(Value::Null)
    }

    /// Polls `condition` (a JS expression) every 100 ms until it is truthy; panics,
    /// with the page's text, when it still is not after `timeout`.
    pub async fn wait_for(&mut self, condition: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let check = format!("!!({condition})");
        loop {
            if self.eval(&check).await == Value::Bool(true) {
                return;
            }
            if Instant::now() >= deadline {
                let text = self
                    .eval("document.body ? document.body.innerText : ''")
                    .await;
                panic!(
                    "timed out after {timeout:?} waiting for `{condition}`; the page says:\n{text}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Presses and releases Tab (keyboard focus moves on).
    pub async fn press_tab(&mut self) {
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "Tab", "code": "Tab",
                       "windowsVirtualKeyCode": 9, "nativeVirtualKeyCode": 9}),
            )
            .await;
        }
    }

    /// A PNG of the whole page (beyond the viewport too), written to `path` (its
    /// folders created).
    pub async fn screenshot(&mut self, path: &Path) {
        let metrics = self.call("Page.getLayoutMetrics", json!({})).await;
        let size = &metrics["cssContentSize"];
        let width = size["width"].as_f64().unwrap_or(WIDTH as f64);
        let height = size["height"].as_f64().unwrap_or(HEIGHT as f64);
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true,
                       "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}),
            )
            .await;
        let png = base64_decode(shot["data"].as_str().expect("screenshot data"));
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }

    /// The next numbered screenshot of this test, `target/screenshots/<test>/NN-<state>.png`;
    /// returns its path.
    pub async fn shot(&mut self, state: &str) -> PathBuf {
        self.shot_count += 1;
        let path = self
            .shots
            .join(format!("{:02}-{state}.png", self.shot_count));
        self.screenshot(&path).await;
        eprintln!("screenshot: {}", path.display());
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Kills the process group `pgid` (Chromium and its helpers), by id.
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// Cleans up after a launch that failed half-way (the group, then the directory).
struct DirGuard(Option<PathBuf>, u32);

impl Drop for DirGuard {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            kill_group(self.1);
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Waits (at most 30 s) for Chromium to write `DevToolsActivePort` (the port, then the
/// browser's WebSocket path) and returns the browser's `ws://` address.
async fn wait_for_port_file(profile: &Path, dir: &Path) -> String {
    let file = profile.join("DevToolsActivePort");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                return format!("ws://127.0.0.1:{}{}", port.trim(), path.trim());
            }
        }
        if Instant::now() >= deadline {
            let log = std::fs::read_to_string(dir.join("chromium.log")).unwrap_or_default();
            panic!("Chromium wrote no DevToolsActivePort in 30 s; its output:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Standard base64 (the screenshots' encoding), padding and whitespace ignored.
fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for v in s.bytes().filter_map(value) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}
