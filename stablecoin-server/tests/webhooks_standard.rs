//! Standard Webhooks signatures, checked by an independent implementation: the
//! `standardwebhooks` verifier from PyPI (1.1.0, pinned), in a virtualenv this test
//! creates under the target directory. A receiver on loopback collects real deliveries
//! of both families from the server; the Python verifier accepts them as received and
//! refuses them altered, under another secret or with a stale timestamp. The spec's own
//! signature header is still there, exactly as the spec defines it.
//!
//! Needs `python3` with `venv` and access to PyPI (both on CI); without them the test
//! fails, saying what is missing.

use crate::common::webhook_receiver::recording_receiver;
use crate::common::*;
use axum::http::HeaderMap;
use serde_json::json;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::ports::Batch;
use stablecoin_webhooks::Family;
use stablecoin_webhooks::payments::Deposit;
use std::path::{Path, PathBuf};
use std::process::Command;

const PINNED: &str = "standardwebhooks==1.1.0";

/// The virtualenv with the pinned verifier, created once and reused.
fn venv() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("standardwebhooks-1.1.0-venv");
    let python = dir.join("bin").join("python");
    let ready = || {
        Command::new(&python)
            .args([
                "-c",
                "import importlib.metadata as m, sys; sys.exit(m.version('standardwebhooks') != '1.1.0')",
            ])
            .status()
            .is_ok_and(|s| s.success())
    };
    if ready() {
        return python;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("python3 is needed for this test (apt-get install python3): {e}")
        });
    assert!(
        made.status.success(),
        "python3 -m venv failed (apt-get install python3-venv): {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let pip = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            PINNED,
        ])
        .output()
        .expect("the virtualenv's python runs");
    assert!(
        pip.status.success(),
        "pip install {PINNED} failed (PyPI unreachable?): {}",
        String::from_utf8_lossy(&pip.stderr)
    );
    assert!(ready(), "{PINNED} is not importable after install");
    python
}

const VERIFY: &str = r#"
import json, sys
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
secret, headers_path, body_path = sys.argv[1:4]
headers = json.load(open(headers_path))
body = open(body_path, "rb").read()
try:
    Webhook(secret).verify(body, headers)
    print("verified")
except WebhookVerificationError as e:
    print("refused:", e)
"#;

/// What the Python verifier says of a delivery: `verified` or `refused: <why>`.
fn python_verdict(python: &Path, secret: &str, headers: &HeaderMap, body: &[u8]) -> String {
    let dir = temp_dir("stdwh");
    std::fs::create_dir_all(&dir).unwrap();
    let map: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap().into()))
        .collect();
    std::fs::write(dir.join("headers.json"), serde_json::to_vec(&map).unwrap()).unwrap();
    std::fs::write(dir.join("body"), body).unwrap();
    let out = Command::new(python)
        .arg("-c")
        .arg(VERIFY)
        .arg(secret)
        .arg(dir.join("headers.json"))
        .arg(dir.join("body"))
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "the script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The secret as a Standard Webhooks library takes it: `whsec_` + the part after our
/// prefix (the payments family's secrets already have that form).
fn library_secret(secret: &str) -> String {
    format!("whsec_{}", secret.split_once('_').unwrap().1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standardwebhooks_from_pypi_verifies_our_deliveries() {
    let python = tokio::task::spawn_blocking(venv).await.unwrap();
    let mut c = test_config();
    c.webhooks.allow_networks = "127.0.0.1/32".into();
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    let (url, got) = recording_receiver().await;

    let mut secrets = Vec::new();
    for body in [
        json!({"url": url, "events": ["transfer.settled"], "standard_webhooks": true}),
        json!({"family": "payments", "url": url, "events": ["wallet.deposit.confirmed"],
            "standard_webhooks": true}),
    ] {
        let r = s
            .post(&acme.live, "/v1/webhook-endpoints", &body.to_string())
            .await;
        r.expect(201);
        assert_eq!(r.json()["standard_webhooks"], true);
        secrets.push(r.json()["secret"].as_str().unwrap().to_string());
    }
    let (a, b) = ("+2250700000001", "+2250700000002");
    s.provision(&acme.live, a).await;
    s.provision(&acme.live, b).await;
    s.fund_settled(&acme.live, a, "100").await;
    s.post(
        &acme.live,
        "/v1/transfers/send",
        &json!({"from_phone_number": a, "to_phone_number": b, "token": "USDC",
            "quote_id": "DIRECT_CRYPTO:USDC:25"})
        .to_string(),
    )
    .await
    .expect(202);
    s.settle().await;
    let now = s.app.engine().ports().clock.now();
    let deposit = Deposit {
        customer_id: "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b".into(),
        deposit_id: 42,
        address: "0xe5379f28ac0404106d4cdb204a987f9429f2b566".into(),
        network: "polygon".into(),
        currency: "USDC".into(),
        amount: Micros(10_500_000),
        tx_hash: None,
        confirmations: 1,
        detected_at: now,
        detected_by: "scanner-polygon-1".into(),
    };
    let event = deposit
        .confirmed(12, true, now)
        .to_outbox("evt_dep_1", &acme.id.0, now)
        .unwrap();
    s.app
        .state()
        .storage
        .store
        .commit(Batch {
            outbox: vec![event],
            ..Default::default()
        })
        .await
        .unwrap();
    s.app.state().webhooks.round().await.unwrap();

    let received = got.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "one delivery per family");
    for (headers, body) in &received {
        let (family, secret) = if headers.contains_key("x-svc-signature") {
            (Family::Wallet, &secrets[0])
        } else {
            (Family::Payments, &secrets[1])
        };
        // The spec's header, as the spec defines it.
        let spec = headers
            .get(family.signature_header())
            .unwrap()
            .to_str()
            .ok();
        assert_eq!(family.verify(secret, body, spec), Ok(()));
        let id = headers.get("webhook-id").unwrap().to_str().unwrap();
        assert!(id.starts_with("whd_"), "{id}");

        let lib = library_secret(secret);
        assert_eq!(python_verdict(&python, &lib, headers, body), "verified");
        let mut altered = body.to_vec();
        altered.extend_from_slice(b" ");
        let verdict = python_verdict(&python, &lib, headers, &altered);
        assert!(verdict.starts_with("refused"), "altered body: {verdict}");
        let other = library_secret(&format!("svcwh_{}", "ab".repeat(32)));
        let verdict = python_verdict(&python, &other, headers, body);
        assert!(verdict.starts_with("refused"), "other secret: {verdict}");
        let mut stale = headers.clone();
        let ts: i64 = headers["webhook-timestamp"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        stale.insert("webhook-timestamp", (ts - 600).to_string().parse().unwrap());
        let verdict = python_verdict(&python, &lib, &stale, body);
        assert!(verdict.contains("too old"), "stale: {verdict}");
    }
}
