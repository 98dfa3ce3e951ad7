//! The binary's money-moving commands act only as a staff account proven by its secret
//! (issue #44): the real binary against a real SQLite database that an in-process server
//! shares.

use crate::cli::bin;
use crate::common::*;
use serde_json::Value;
use std::process::Stdio;

/// The settings both the in-process server and the binary read (the same SQLite
/// database under `dir`): both two-person thresholds at 100 tokens.
fn staff_env(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    vec![
        ("STABLECOIN_DATA_DIR", dir.display().to_string()),
        ("STABLECOIN_DEMO", "false".into()),
        ("STABLECOIN_RUN_WORKERS", "false".into()),
        ("STABLECOIN_LISTEN", "127.0.0.1:0".into()),
        ("STABLECOIN_ADMIN_TOKEN", STAFF_ADMIN_TOKEN.into()),
        ("STABLECOIN_ADMIN_TOPUP_SINGLE_APPROVAL_MAX", "100".into()),
        ("STABLECOIN_ADMIN_SECOND_APPROVAL_ABOVE", "100".into()),
    ]
}

const STAFF_ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";

async fn staff_server(dir: &std::path::Path) -> Server {
    let env = staff_env(dir);
    let c = stablecoin_server::Config::load(None, |k| {
        env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    })
    .unwrap();
    serve(stablecoin_server::App::build(c).await.expect("app builds")).await
}

/// Runs the binary on the database under `dir` with `args`; `secret` is given as the
/// environment variable (`Env`) or on standard input (`Stdin`).
enum Given<'a> {
    None,
    Env(&'a str),
    Stdin(&'a str),
}

fn run_bin(dir: &std::path::Path, secret: Given, args: &[&str]) -> (i32, Value, String) {
    use std::io::Write;
    let mut c = bin();
    c.env_remove("STABLECOIN_STAFF_SECRET");
    for (k, v) in staff_env(dir) {
        c.env(k, v);
    }
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Given::Env(s) = secret {
        c.env("STABLECOIN_STAFF_SECRET", s);
    }
    let mut child = c.spawn().unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        if let Given::Stdin(s) = secret {
            writeln!(stdin, "{s}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Issue #44: the binary's money-moving commands (`topup confirm`, `treasury credit`,
/// `escrow resolve`) act only as a staff account proven by its secret (environment or
/// standard input; never an argument, never a name), under the same two-person rule as
/// over HTTP, and every decision is in the staff audit log, read back over HTTP.
#[tokio::test]
async fn the_binary_acts_only_as_a_staff_account_proven_by_its_secret() {
    use serde_json::json;
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::ports::{ChainAddress, RailId};
    let dir = temp_dir("cli-staff");
    // The in-process server sets up: a tenant, two staff accounts, two top-up quotes
    // (200 and 50 USDC) and a disputed 150 USDT escrow deal; then it stops.
    let (tenant, ada, bo, big, small, deal) = {
        let s = staff_server(&dir).await;
        let e = s.app.engine();
        let t = s.tenant("Acme", "0").await;
        let ada = e.create_staff("Ada").await.unwrap();
        let bo = e.create_staff("Bo").await.unwrap();
        let mut ids = Vec::new();
        for fiat in [120_000, 30_000] {
            let body = json!({"currency_code": "XOF", "fiat_amount": fiat, "token": "USDC"});
            let r = s
                .post(&t.live, "/v1/treasury/topups", &body.to_string())
                .await;
            r.expect(201);
            ids.push(r.json()["id"].as_str().unwrap().to_string());
        }
        let (buyer, seller) = ("+2250700000001", "+2250700000002");
        s.provision(&t.live, buyer).await;
        s.provision(&t.live, seller).await;
        let body = json!({"buyer_phone_number": buyer, "seller_phone_number": seller,
            "amount": "150", "reference": "cli-2p"});
        let r = s.post(&t.live, "/v1/escrows", &body.to_string()).await;
        r.expect(201);
        let deal = r.json();
        s.app
            .sim_rail(RailId::Tron)
            .unwrap()
            .mint(
                &ChainAddress(deal["escrow_address"].as_str().unwrap().into()),
                Token::Usdt,
                Micros(150_000_000),
            )
            .unwrap();
        s.settle_escrows().await;
        let deal = deal["id"].as_str().unwrap().to_string();
        s.post(
            &t.live,
            &format!("/v1/escrows/{deal}/dispute"),
            r#"{"reason":"not delivered","on_behalf_of":"BUYER"}"#,
        )
        .await
        .expect(200);
        let small = ids.pop().unwrap();
        let big = ids.pop().unwrap();
        (t.id.0.clone(), ada, bo, big, small, deal)
    };
    let (a, b) = (ada.secret.as_str(), bo.secret.as_str());

    // No secret: refused, naming where it goes; nothing happens.
    let confirm = ["topup", "confirm", big.as_str(), "--reference", "BANK-1"];
    let (code, _, err) = run_bin(&dir, Given::None, &confirm);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("STABLECOIN_STAFF_SECRET"), "{err}");
    // A name is no proof: as an argument it does not exist, as the secret it is refused.
    let mut named = confirm.to_vec();
    named.extend(["--staff", "Ada"]);
    let (code, _, err) = run_bin(&dir, Given::None, &named);
    assert_eq!(code, 2, "no --staff argument: {err}");
    let (code, _, err) = run_bin(&dir, Given::Env("Ada"), &confirm);
    assert_eq!(code, 1);
    assert!(err.contains("INVALID_API_KEY"), "{err}");

    // 200 USDC is above the cap: Ada (secret on standard input) only proposes.
    let (code, out, err) = run_bin(&dir, Given::Stdin(a), &confirm);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["topup"]["status"], "AWAITING_SECOND_APPROVAL");
    assert_eq!(out["topup"]["proposed_by"], ada.account.id.as_str());
    assert_eq!(out["treasury_balance"], "0.000000");
    let (code, _, err) = run_bin(&dir, Given::Env(a), &confirm);
    assert_eq!(code, 1);
    assert!(err.contains("SECOND_APPROVER_REQUIRED"), "{err}");
    let (code, out, err) = run_bin(&dir, Given::Env(b), &confirm);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["topup"]["status"], "CREDITED");
    assert_eq!(out["topup"]["confirmed_by"], bo.account.id.as_str());
    assert_eq!(out["treasury_balance"], "200.000000");
    // 50 USDC: one staff member is enough.
    let (code, out, err) = run_bin(
        &dir,
        Given::Env(a),
        &["topup", "confirm", &small, "--reference", "BANK-2"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["treasury_balance"], "250.000000");

    // `treasury credit`: the same rules.
    let credit = |amount: &'static str, reference: &'static str| {
        [
            "treasury",
            "credit",
            "--tenant",
            tenant.as_str(),
            "--token",
            "USDC",
            "--amount",
            amount,
            "--reference",
            reference,
        ]
        .map(str::to_string)
    };
    fn args(v: &[String; 10]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let (code, _, err) = run_bin(&dir, Given::None, &args(&credit("50", "W-1")));
    assert_eq!(code, 1, "no identity, no credit: {err}");
    let (code, out, err) = run_bin(&dir, Given::Env(a), &args(&credit("50", "W-1")));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (out["status"].as_str(), out["treasury_balance"].as_str()),
        (Some("CREDITED"), Some("300.000000"))
    );
    let (code, out, err) = run_bin(&dir, Given::Env(a), &args(&credit("500", "W-2")));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["status"], "AWAITING_SECOND_APPROVAL");
    assert_eq!(out["treasury_balance"], "300.000000");
    let (code, _, err) = run_bin(&dir, Given::Env(a), &args(&credit("500", "W-2")));
    assert_eq!(code, 1);
    assert!(err.contains("SECOND_APPROVER_REQUIRED"), "{err}");
    let (code, _, err) = run_bin(&dir, Given::Env(b), &args(&credit("499", "W-2")));
    assert_eq!(code, 1);
    assert!(err.contains("APPROVAL_MISMATCH"), "{err}");
    let (code, out, err) = run_bin(&dir, Given::Env(b), &args(&credit("500", "W-2")));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["treasury_balance"], "800.000000");

    // `escrow resolve` of the 150 USDT dispute (above 100): two different accounts.
    let resolve = [
        "escrow",
        "resolve",
        "--id",
        deal.as_str(),
        "--resolution",
        "REFUND",
        "--note",
        "not delivered",
    ];
    let (code, _, err) = run_bin(&dir, Given::None, &resolve);
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = run_bin(&dir, Given::Env(b), &resolve);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["awaiting_approval"], true);
    let (code, _, err) = run_bin(&dir, Given::Env(b), &resolve);
    assert_eq!(code, 1);
    assert!(err.contains("SECOND_APPROVER_REQUIRED"), "{err}");
    let (code, out, err) = run_bin(&dir, Given::Stdin(a), &resolve);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["awaiting_approval"], false);
    assert_eq!(out["escrow"]["payout_pending"], true);

    // Back on the server: the treasury and the audit log over HTTP.
    let s = staff_server(&dir).await;
    let r = s
        .send(
            reqwest::Method::GET,
            "/admin/v1/audit?limit=100",
            None,
            None,
            &[("Authorization", &format!("Bearer {STAFF_ADMIN_TOKEN}"))],
        )
        .await;
    r.expect(200);
    let mut got: Vec<(String, String)> = r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            let action = e["action"].as_str().unwrap();
            // Account changes and the sign-in of this very read are not decisions.
            !action.starts_with("staff.") && !action.starts_with("signin.")
        })
        .map(|e| {
            (
                e["staff_id"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let (ia, ib) = (ada.account.id.as_str(), bo.account.id.as_str());
    let mut want: Vec<(String, String)> = [
        (ia, "topup.confirm.proposed"),
        (ib, "topup.confirm"),
        (ia, "topup.confirm"),
        (ia, "treasury.credit"),
        (ia, "treasury.credit.proposed"),
        (ib, "treasury.credit"),
        (ib, "escrow.resolve.proposed"),
        (ia, "escrow.resolve"),
    ]
    .iter()
    .map(|(w, a)| (w.to_string(), a.to_string()))
    .collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(
        s.app
            .engine()
            .treasury_balance(
                &stablecoin_core::domain::ids::TenantId(tenant.clone()),
                Token::Usdc
            )
            .await
            .unwrap(),
        Micros(800_000_000)
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
