//! The CLI: admin commands (in-process against the engine, and the binary's refusal on
//! memory storage), `migrate`, and `serve` as a real process stopped by SIGTERM.

use crate::common::*;
use clap::Parser;
use stablecoin_server::cli::{Cli, run_admin};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn cmd(args: &[&str]) -> stablecoin_server::cli::Command {
    let mut all = vec!["stablecoin-server"];
    all.extend_from_slice(args);
    Cli::try_parse_from(all).unwrap().command.unwrap()
}

#[tokio::test]
async fn admin_commands_act_on_the_engine() {
    let s = start().await;
    let e = s.app.engine();
    let t = run_admin(e, &cmd(&["tenant", "create", "--name", "Cli Co"]), None)
        .await
        .unwrap();
    let tid = t["tenant_id"].as_str().unwrap().to_string();
    let k = run_admin(
        e,
        &cmd(&["key", "issue", "--tenant", &tid, "--mode", "live"]),
        None,
    )
    .await
    .unwrap();
    let secret = k["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("svc_sk_live_"));
    // A treasury credit acts as a staff account proven by its secret.
    let staff = e.create_staff("Cli Ops").await.unwrap().secret;
    let c = run_admin(
        e,
        &cmd(&[
            "treasury",
            "credit",
            "--tenant",
            &tid,
            "--token",
            "USDC",
            "--amount",
            "250",
            "--reference",
            "r-1",
        ]),
        Some(&staff),
    )
    .await
    .unwrap();
    assert_eq!(c["treasury_balance"], "250.000000");
    let p = run_admin(
        e,
        &cmd(&[
            "pricing",
            "set",
            "--tenant",
            &tid,
            "--mode",
            "PERCENTAGE",
            "--fee-bps",
            "100",
            "--fee-address",
            "0x00000000000000000000000000000000000000aa",
        ]),
        None,
    )
    .await
    .unwrap();
    assert_eq!(p["pricing"]["fee_bps"], 100);
    // The issued key works over HTTP and the pricing applies.
    s.provision(&secret, "+2250700000001").await;
    s.fund_settled(&secret, "+2250700000001", "100").await;
    let r = s
        .post(
            &secret,
            "/v1/transfers/send",
            r#"{"from_phone_number":"+2250700000001","to_phone_number":"+2250700000002","token":"USDC","quote_id":"DIRECT_CRYPTO:USDC:10"}"#,
        )
        .await;
    r.expect(202);
    assert_eq!(r.json()["tenant_fee"], "0.100000");
    let bad = run_admin(
        e,
        &cmd(&[
            "pricing",
            "set",
            "--tenant",
            &tid,
            "--mode",
            "PERCENTAGE",
            "--fee-bps",
            "5000",
        ]),
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(bad.code(), "INVALID_PRICING");
    run_admin(
        e,
        &cmd(&[
            "key",
            "revoke",
            "--tenant",
            &tid,
            "--key-id",
            k["key_id"].as_str().unwrap(),
        ]),
        None,
    )
    .await
    .unwrap();
    s.get(&secret, "/v1/transfers")
        .await
        .expect_err(401, "API_KEY_REVOKED");
    assert!(
        run_admin(e, &cmd(&["tenant", "create", "--name", " "]), None)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn staff_commands_create_list_disable_and_resolve() {
    use stablecoin_server::cli::{Command as Cmd, run_escrow_admin};
    let s = start().await;
    let e = s.app.engine();
    let c = run_admin(e, &cmd(&["staff", "create", "--name", "Ada Ops"]), None)
        .await
        .unwrap();
    let secret = c["secret"].as_str().unwrap().to_string();
    let id = c["staff_id"].as_str().unwrap().to_string();
    assert!(secret.starts_with("stf_sk_") && id.starts_with("stf_"));
    // The secret opens the staff routes (no admin token is configured here).
    let r = s
        .send(
            reqwest::Method::GET,
            "/admin/v1/escrows",
            None,
            None,
            &[("Authorization", &format!("Bearer {secret}"))],
        )
        .await;
    r.expect(200);
    let l = run_admin(e, &cmd(&["staff", "list"]), None).await.unwrap();
    assert_eq!(l["staff"][0]["staff_id"], id.as_str());
    assert!(!l.to_string().contains(&secret), "never a secret in a list");
    let dup = run_admin(e, &cmd(&["staff", "create", "--name", "ada ops"]), None)
        .await
        .unwrap_err();
    assert_eq!(dup.code(), "INVALID_PARAMETER");
    // `escrow disputes` and `escrow resolve` run against the escrow engine.
    let Cmd::Escrow(list) = cmd(&["escrow", "disputes"]) else {
        panic!("escrow command")
    };
    let out = run_escrow_admin(e, s.app.state().escrow.as_ref(), &list, None)
        .await
        .unwrap();
    assert_eq!(out["total"], 0);
    let Cmd::Escrow(resolve) = cmd(&[
        "escrow",
        "resolve",
        "--id",
        "esc_nope",
        "--resolution",
        "RELEASE",
        "--note",
        "n",
    ]) else {
        panic!("escrow command")
    };
    // Without a secret, or with a name where the secret goes, nothing is done.
    for secret in [None, Some("Ada Ops"), Some(id.as_str())] {
        let err = run_escrow_admin(e, s.app.state().escrow.as_ref(), &resolve, secret)
            .await
            .unwrap_err();
        assert!(
            matches!(err.code(), "INVALID_PARAMETER" | "INVALID_API_KEY"),
            "{secret:?}: {err}"
        );
    }
    let err = run_escrow_admin(e, s.app.state().escrow.as_ref(), &resolve, Some(&secret))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    let d = run_admin(e, &cmd(&["staff", "disable", "--id", &id]), None)
        .await
        .unwrap();
    assert_eq!(d["disabled"], true);
    let err = run_escrow_admin(e, s.app.state().escrow.as_ref(), &resolve, Some(&secret))
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        "API_KEY_REVOKED",
        "a disabled account cannot act"
    );
}

#[tokio::test]
async fn escrow_recover_and_history_from_the_command_line() {
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::ports::{ChainAddress, RailId};
    use stablecoin_server::cli::{Command as Cmd, run_escrow_admin};
    let s = start().await;
    let e = s.app.engine();
    let acme = s.tenant("Acme", "0").await;
    let (buyer, seller) = ("+2250700000001", "+2250700000002");
    s.provision(&acme.live, buyer).await;
    s.provision(&acme.live, seller).await;
    let r = s
        .post(
            &acme.live,
            "/v1/escrows",
            &serde_json::json!({"buyer_phone_number": buyer, "seller_phone_number": seller,
                "amount": "10", "reference": "cli-1"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let deal = r.json();
    let id = deal["id"].as_str().unwrap().to_string();
    // 15 USDT paid for a 10 USDT deal: 5 USDT excess, recoverable by staff.
    let tron = s.app.sim_rail(RailId::Tron).unwrap();
    tron.mint(
        &ChainAddress(deal["escrow_address"].as_str().unwrap().into()),
        Token::Usdt,
        Micros(15_000_000),
    )
    .unwrap();
    let escrow = s.app.state().escrow.as_ref().unwrap();
    for _ in 0..5 {
        tron.mine(20);
        escrow.settle_all(100).await;
    }
    let ada = run_admin(e, &cmd(&["staff", "create", "--name", "ada"]), None)
        .await
        .unwrap();
    let ada = ada["secret"].as_str().unwrap().to_string();
    let Cmd::Escrow(recover) = cmd(&[
        "escrow",
        "recover",
        "--id",
        &id,
        "--kind",
        "EXCESS",
        "--note",
        "overpaid by mistake",
    ]) else {
        panic!("escrow command")
    };
    let payout = run_escrow_admin(e, Some(escrow), &recover, Some(&ada))
        .await
        .unwrap();
    assert_eq!(payout["amount"], "5000000", "{payout}");
    assert_eq!(payout["purpose"], "RECOVERY");
    // A second recovery of the same kind has nothing left to return.
    let err = run_escrow_admin(e, Some(escrow), &recover, Some(&ada))
        .await
        .unwrap_err();
    assert_eq!(err.param(), Some("escrow"), "{err}");
    for _ in 0..5 {
        tron.mine(20);
        escrow.settle_all(100).await;
    }
    let Cmd::Escrow(history) = cmd(&["escrow", "history", "--id", &id]) else {
        panic!("escrow command")
    };
    let h = run_escrow_admin(e, Some(escrow), &history, None)
        .await
        .unwrap();
    assert_eq!(h["escrow"]["tenant_id"], acme.id.0.as_str());
    let events: Vec<&str> = h["history"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["event"].as_str().unwrap())
        .collect();
    assert_eq!(events[0], "escrow.recovered", "{events:?}");
    assert!(events.contains(&"escrow.recovery_pending"));
    let (audit, _) = e.staff_audit(10, 1).await.unwrap();
    assert!(
        audit.iter().any(|a| a.action == "escrow.recovery"
            && a.note.as_deref().unwrap_or("").contains("overpaid"))
    );
}

pub(crate) fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stablecoin-server"));
    for var in stablecoin_server::config::env_var_names().chain(["STABLECOIN_CONFIG"]) {
        c.env_remove(var);
    }
    c
}

#[test]
fn binary_admin_and_migrate_on_memory_storage() {
    let out = bin()
        .env("STABLECOIN_STORAGE", "memory")
        .args(["tenant", "create", "--name", "X"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not persist"));
    let out = bin()
        .env("STABLECOIN_STORAGE", "memory")
        .arg("migrate")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to migrate"));
    // The default storage (SQLite under the data directory) migrates and persists.
    let dir = temp_dir("cli-migrate");
    let out = bin()
        .env("STABLECOIN_DATA_DIR", &dir)
        .arg("migrate")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("storage `sqlite` is up to date"));
    let out = bin()
        .env("STABLECOIN_DATA_DIR", &dir)
        .args(["tenant", "create", "--name", "Durable Co"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ten_"));
    let _ = std::fs::remove_dir_all(&dir);
    let out = bin()
        .arg("migrate")
        .env("STABLECOIN_STORAGE", "postgres")
        .env(
            "STABLECOIN_POSTGRES_URL",
            "postgres://u:pw-secret@127.0.0.1:1/db",
        )
        .env("STABLECOIN_POSTGRES_CONNECT_TIMEOUT_SECS", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("storage"), "{err}");
    assert!(!err.contains("pw-secret"));
    let out = bin()
        .arg("serve")
        .env("STABLECOIN_LISTEN", "not-an-address")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[cfg(unix)]
#[tokio::test]
async fn serve_with_zero_configuration_then_sigterm() {
    let dir = temp_dir("cli-serve");
    let mut child = bin()
        .env("STABLECOIN_LISTEN", "127.0.0.1:0")
        .env("STABLECOIN_DATA_DIR", &dir)
        .arg("serve")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut tx = Some(tx);
        // Keep draining stdout until the process exits.
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let done = line.contains("curl ");
            out.push(line);
            if done && let Some(tx) = tx.take() {
                let _ = tx.send(out.clone());
            }
        }
    });
    let lines = rx.await.expect("banner with a curl line");
    let banner = lines.join("\n");
    let curl = lines.iter().find(|l| l.contains("curl ")).unwrap();
    let url = curl
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap();
    let parts: Vec<&str> = curl.split('\'').collect();
    let key = parts
        .iter()
        .find_map(|p| p.strip_prefix("X-API-Key: "))
        .unwrap();
    let body = parts.iter().find(|p| p.starts_with('{')).unwrap();
    assert!(banner.contains("svc_sk_test_"));
    let r = reqwest::Client::new()
        .post(url)
        .header("X-API-Key", key)
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(exit.success(), "graceful exit: {exit:?}");
}

/// Issue #44: no log line names a configured RPC URL (providers put their API keys in
/// them). The Solana node here is unreachable, so its readiness reason carries
/// `reqwest`'s "error sending request for url (...)", which used to reach the log whole.
#[cfg(unix)]
#[tokio::test]
async fn no_log_line_names_an_rpc_url() {
    let dir = temp_dir("cli-redacted-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        "[rails.solana_node]\nrpc_url = \"http://rpc-user:rpc-pass@127.0.0.1:1/v2/SECRET-RPC-KEY?api-key=SECRET-QUERY\"\nscan_start_slot = 1\n",
    )
    .unwrap();
    let stderr_path = dir.join("stderr.log");
    let mut child = bin()
        .env("STABLECOIN_LISTEN", "127.0.0.1:0")
        .env("STABLECOIN_DATA_DIR", dir.join("data"))
        .args(["--config", config.to_str().unwrap(), "serve"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("listening on")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(());
            }
        }
    });
    rx.await.expect("the server started");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // (It may stop before its signal handler is installed: only the log matters here.)
    tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    let log = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(log.contains("real Solana rail"), "{log}");
    // The node's failure names the URL by its place in the list (rpc_url is #1, issue
    // #49), never the URL: nothing of it is left to redact.
    assert!(log.contains("URL #1: connection failed"), "{log}");
    for secret in [
        "SECRET-RPC-KEY",
        "SECRET-QUERY",
        "rpc-pass",
        "127.0.0.1:1",
        "rpc-user",
    ] {
        assert!(!log.contains(secret), "{secret} in the log: {log}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check-config` validates without starting anything: a development configuration is
/// summarised (exit 0); production mode over the defaults names every refused setting
/// (exit 2) and creates no data directory.
#[test]
fn check_config_validates_without_starting_anything() {
    let dir = temp_dir("check-config");
    let run = |extra: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_stablecoin-server"));
        c.arg("check-config")
            .env_clear()
            .env("STABLECOIN_DATA_DIR", dir.join("data"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in extra {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let ok = run(&[]);
    assert_eq!(ok.status.code(), Some(0));
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(
        out.contains("configuration is valid") && out.contains("mode: development"),
        "{out}"
    );
    assert!(out.contains("evm 137 (simulated)"), "{out}");

    let refused = run(&[("STABLECOIN_MODE", "production")]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    for setting in [
        "rails.evm_chains",
        "demo.enabled",
        "sms.kind",
        "rates.kind",
        "signer.kind",
        "payouts.kind",
    ] {
        assert!(err.contains(setting), "{setting} missing from: {err}");
    }
    assert!(!err.contains("webhooks.allow_networks"), "not set: {err}");
    // Secrets that guard money or the operator's view: empty or short ones stop the
    // start, in every mode, naming the setting (an empty intake secret let anyone sign
    // a deposit report that credits a treasury).
    for (var, value, setting) in [
        (
            "STABLECOIN_CHECKOUT_INTAKE_SECRET",
            "",
            "checkout.intake_secret",
        ),
        (
            "STABLECOIN_CHECKOUT_INTAKE_SECRET",
            "whsec_short",
            "checkout.intake_secret",
        ),
        (
            "STABLECOIN_METRICS_TOKEN",
            "metrics-token-0123456789",
            "metrics_token",
        ),
    ] {
        let refused = run(&[(var, value)]);
        assert_eq!(refused.status.code(), Some(2), "{var}={value:?}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains(setting), "{var}={value:?}: {err}");
        assert!(
            value.is_empty() || !err.contains(value),
            "the secret is not echoed: {err}"
        );
    }
    // The admin token and the secrets that verify providers' callbacks (the payout
    // callbacks' token key; Twilio's auth token, which signs its status callbacks) are
    // held to the same length.
    for (vars, setting, secret) in [
        (
            vec![("STABLECOIN_ADMIN_TOKEN", "admin-token-too-short")],
            "admin.token",
            "admin-token-too-short",
        ),
        (
            vec![
                ("STABLECOIN_PAYOUTS", "mpesa"),
                ("STABLECOIN_PAYOUTS_CONSUMER_KEY", "ck"),
                ("STABLECOIN_PAYOUTS_CONSUMER_SECRET", "cs"),
                ("STABLECOIN_PAYOUTS_INITIATOR_NAME", "api-op"),
                ("STABLECOIN_PAYOUTS_SECURITY_CREDENTIAL", "c2VjcmV0"),
                ("STABLECOIN_PAYOUTS_SHORTCODE", "600000"),
                (
                    "STABLECOIN_PAYOUTS_CALLBACK_BASE_URL",
                    "https://pay.example",
                ),
                ("STABLECOIN_PAYOUTS_CALLBACK_SECRET", "cb-secret-short"),
            ],
            "payouts.callback_secret",
            "cb-secret-short",
        ),
        (
            vec![
                ("STABLECOIN_SMS", "twilio"),
                ("STABLECOIN_SMS_ACCOUNT_SID", "AC1"),
                ("STABLECOIN_SMS_FROM", "+15005550006"),
                ("STABLECOIN_SMS_AUTH_TOKEN", "tw-short-token"),
            ],
            "sms.auth_token",
            "tw-short-token",
        ),
    ] {
        let refused = run(&vars);
        assert_eq!(refused.status.code(), Some(2), "{setting}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains(setting), "{setting}: {err}");
        assert!(!err.contains(secret), "the secret is not echoed: {err}");
    }
    let long = "whsec_intake-0123456789abcdef-0123456789";
    let ok = run(&[("STABLECOIN_CHECKOUT_INTAKE_SECRET", long)]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // A rate feed over plain http (anything on the way could set the rates) is refused
    // in production (issue #44).
    let refused = run(&[
        ("STABLECOIN_MODE", "production"),
        ("STABLECOIN_RATES", "http"),
        (
            "STABLECOIN_RATES_URL",
            "http://fx.example/{currency}/{token}",
        ),
        ("STABLECOIN_RATES_RATE_POINTER", "/rate"),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("rates.url"), "{err}");
    assert!(!err.contains("fx.example"), "the URL is a secret: {err}");
    // An allow-list of internal networks for webhooks is a development aid only.
    let refused = run(&[
        ("STABLECOIN_MODE", "production"),
        ("STABLECOIN_WEBHOOKS_ALLOW_NETWORKS", "10.0.0.0/8"),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("webhooks.allow_networks"), "{err}");
    assert!(!dir.join("data").exists(), "nothing was started or created");
}
