//! The README's curl quick start, line by line, against a real server on loopback with
//! its workers running. The `curl` lines between the `quickstart` markers are parsed
//! (method, headers, body, URL) and sent as written; only the host, `$KEY` and the
//! transfer id placeholder are substituted. If the README changes, this test follows it.

use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

struct Curl {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

/// Splits a shell line into words, honouring '...' and "..." quoting (no escapes are
/// used in the README).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "unbalanced quotes in {line}");
    if in_word {
        words.push(cur);
    }
    words
}

fn parse_curl(line: &str) -> Curl {
    let words = shell_words(line);
    assert_eq!(words[0], "curl");
    let mut c = Curl {
        method: "GET".into(),
        url: String::new(),
        headers: Vec::new(),
        body: None,
    };
    let mut it = words.into_iter().skip(1);
    while let Some(w) = it.next() {
        match w.as_str() {
            "-s" => {}
            "-X" => c.method = it.next().expect("method"),
            "-H" => {
                let h = it.next().expect("header");
                let (k, v) = h.split_once(':').expect("header name: value");
                c.headers.push((k.trim().into(), v.trim().into()));
            }
            "-d" => c.body = Some(it.next().expect("body")),
            url if url.starts_with("http://") => c.url = url.into(),
            other => panic!("the README uses a curl option this test does not know: {other}"),
        }
    }
    c
}

fn readme_curl_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let start = readme
        .find("<!-- quickstart:begin -->")
        .expect("begin marker");
    let end = readme.find("<!-- quickstart:end -->").expect("end marker");
    readme[start..end]
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("curl "))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_readme_curl_line_works_as_written() {
    let mut c = test_config();
    c.run_workers = true;
    let s = start_with(c).await;
    let t = s.tenant("Readme Co", "10000").await;
    let lines = readme_curl_lines();
    assert_eq!(lines.len(), 6, "the quick start has six curl lines");

    let mut transfer_id = String::new();
    let mut last = Value::Null;
    for (i, line) in lines.iter().enumerate() {
        let line = line
            .replace("http://127.0.0.1:8080", &s.base)
            .replace("$KEY", &t.live)
            .replace("tr_...", &transfer_id);
        let curl = parse_curl(&line);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut req = s.client.request(curl.method.parse().unwrap(), &curl.url);
            for (k, v) in &curl.headers {
                req = req.header(k, v);
            }
            if let Some(b) = &curl.body {
                req = req.body(b.clone());
            }
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let v: Value = r.json().await.unwrap();
            let done = match i {
                0 | 1 => {
                    assert_eq!(status, 200, "{line}: {v}");
                    assert_eq!(v["outcome"], "PROVISIONED");
                    true
                }
                2 => {
                    assert_eq!(status, 202, "{line}: {v}");
                    // Step 3 needs the funds: wait for the funding to settle, as a
                    // reader of the README would.
                    let loc = format!("{}/v1/fundings/{}", s.base, v["id"].as_str().unwrap());
                    wait_settled(&s, &t.live, &loc).await;
                    true
                }
                3 => {
                    assert_eq!(status, 202, "{line}: {v}");
                    transfer_id = v["id"].as_str().unwrap().to_string();
                    assert!(transfer_id.starts_with("tr_"));
                    true
                }
                4 => {
                    assert_eq!(status, 200, "{line}: {v}");
                    assert_ne!(v["status"], "FAILED", "{v}");
                    v["status"] == "SETTLED"
                }
                _ => {
                    assert_eq!(status, 200, "{line}: {v}");
                    true
                }
            };
            last = v;
            if done {
                break;
            }
            assert!(Instant::now() < deadline, "{line} never settled: {last}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(last["balance_usdc"], "24.925000", "as the README says");
}

async fn wait_settled(s: &Server, key: &str, url: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v: Value = s
            .client
            .get(url)
            .header("X-API-Key", key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["status"] == "SETTLED" {
            return;
        }
        assert_ne!(v["status"], "FAILED", "{v}");
        assert!(Instant::now() < deadline, "funding never settled: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
