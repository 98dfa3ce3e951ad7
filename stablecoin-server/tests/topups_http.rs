//! Top-ups over real HTTP on loopback: a tenant asks for a quote, reads and lists it;
//! staff confirm it with the admin token; the treasury is credited once; replays and
//! expired quotes are refused and change nothing; the CLI confirms the same way.

use crate::common::*;
use clap::Parser;
use reqwest::Method;
use serde_json::Value;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::topup::TopUp;
use stablecoin_core::ports::{Batch, Record, Store, get_record};
use stablecoin_server::cli::{Cli, run_admin};
use stablecoin_server::config::Secret;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";

async fn start_admin() -> Server {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    start_with(c).await
}

async fn confirm(s: &Server, id: &str, token: Option<&str>, body: &str) -> Resp {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|b| vec![("Authorization", b)])
        .unwrap_or_default();
    s.send(
        Method::POST,
        &format!("/admin/v1/topups/{id}/confirm"),
        None,
        Some(body),
        &headers,
    )
    .await
}

async fn quote(s: &Server, key: &str, fiat: &str, token: &str) -> Value {
    let body = format!(r#"{{"currency_code":"XOF","fiat_amount":{fiat},"token":"{token}"}}"#);
    let r = s.post(key, "/v1/treasury/topups", &body).await;
    r.expect(201);
    let v = r.json();
    assert_eq!(
        r.header("location").as_deref(),
        Some(format!("/v1/treasury/topups/{}", v["id"].as_str().unwrap()).as_str())
    );
    v
}

async fn outbox_len(s: &Server) -> usize {
    s.memory().outbox_after(0, 100_000).await.unwrap().len()
}

#[tokio::test]
async fn a_topup_is_quoted_confirmed_by_staff_and_credited_once() {
    let s = start_admin().await;
    let t = s.tenant("Acme", "0").await;
    let other = s.tenant("Other", "0").await;
    let q = quote(&s, &t.live, "600000", "USDC").await;
    let id = q["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("tu_"));
    assert_eq!(q["status"], "AWAITING_FUNDS");
    assert_eq!(q["currency_code"], "XOF");
    assert_eq!(q["fiat_amount"], "600000.00");
    assert_eq!(q["rate"], "600");
    assert_eq!(q["token_amount"], "1000.000000");
    assert!(q.get("confirmed_by").is_none() && q.get("tenant_id").is_none());

    // Read and list, tenant-scoped.
    let r = s.get(&t.live, &format!("/v1/treasury/topups/{id}")).await;
    assert_eq!(r.expect(200).json(), q);
    s.get(&other.live, &format!("/v1/treasury/topups/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    let l = s.get(&t.live, "/v1/treasury/topups?limit=1").await;
    let l = l.expect(200).json();
    assert_eq!(
        (l["limit"].as_u64(), l["page"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(l["total"], 1);
    assert_eq!(l["topups"][0]["id"], id.as_str());
    let l = s.get(&other.live, "/v1/treasury/topups").await.json();
    assert_eq!(l["total"], 0);
    assert_eq!(s.treasury(&t).await.0, 0, "a quote credits nothing");

    // Staff confirm it, with the admin token only.
    let body = r#"{"fiat_reference":"BANK-2026-0001","note":"wire matched"}"#;
    let commits = s.commits();
    confirm(&s, &id, None, body)
        .await
        .expect_err(401, "ADMIN_TOKEN_REQUIRED");
    confirm(
        &s,
        &id,
        Some("wrong-token-0123456789abcdef0123456789"),
        body,
    )
    .await
    .expect_err(401, "ADMIN_TOKEN_REQUIRED");
    let with_key = s
        .send(
            Method::POST,
            &format!("/admin/v1/topups/{id}/confirm"),
            Some(&t.live),
            Some(body),
            &[],
        )
        .await;
    with_key.expect_err(403, "KEY_KIND_NOT_ALLOWED");
    // The wrong token's attempt is audited as a failed sign-in (issue #44): one commit.
    assert_eq!(
        s.commits(),
        commits + 1,
        "refused requests write nothing but that audit entry"
    );

    let events = outbox_len(&s).await;
    let c = confirm(&s, &id, Some(ADMIN), body).await;
    let c = c.expect(200).json();
    assert_eq!(c["status"], "CREDITED");
    assert_eq!(c["fiat_reference"], "BANK-2026-0001");
    assert_eq!(c["confirmed_by"], "admin-token");
    assert_eq!(c["note"], "wire matched");
    assert_eq!(c["tenant_id"], t.id.0.as_str());
    assert_eq!(s.treasury(&t).await, m("1000"));
    assert_eq!(
        outbox_len(&s).await,
        events + 1,
        "one treasury.topup.credited"
    );

    // The tenant sees it credited (without the staff fields), and can spend it.
    let r = s.get(&t.live, &format!("/v1/treasury/topups/{id}")).await;
    let r = r.expect(200).json();
    assert_eq!(r["status"], "CREDITED");
    assert!(r["confirmed_at"].is_string());
    assert!(r.get("confirmed_by").is_none() && r.get("note").is_none());

    // A replay, with the same or another reference, is refused and changes nothing.
    let (commits, events) = (s.commits(), outbox_len(&s).await);
    for b in [body, r#"{"fiat_reference":"BANK-2026-0002"}"#] {
        confirm(&s, &id, Some(ADMIN), b)
            .await
            .expect_err(409, "ALREADY_CONFIRMED");
    }
    assert_eq!(s.treasury(&t).await, m("1000"));
    assert_eq!(s.commits(), commits);
    assert_eq!(outbox_len(&s).await, events);

    // The reference funds one top-up only.
    let q2 = quote(&s, &t.live, "6000", "USDT").await;
    let r = confirm(&s, q2["id"].as_str().unwrap(), Some(ADMIN), body).await;
    r.expect_err(409, "FIAT_REFERENCE_USED");
    assert_eq!(r.param().as_deref(), Some("fiat_reference"));
    // Bad input and unknown top-ups.
    for (b, code) in [
        (r#"{"fiat_reference":"  "}"#, "INVALID_PARAMETER"),
        (r#"{"fiat_reference":"a\nb"}"#, "INVALID_PARAMETER"),
        (r#"{"fiat_reference":"R","extra":1}"#, "UNKNOWN_FIELD"),
        (r#"{}"#, "MISSING_FIELD"),
    ] {
        confirm(&s, q2["id"].as_str().unwrap(), Some(ADMIN), b)
            .await
            .expect_err(400, code);
    }
    confirm(&s, "tu_01M83CMTGWWC1YF2WCE6WEYC11", Some(ADMIN), body)
        .await
        .expect_err(404, "NOT_FOUND");
    let e = s.engine_treasury(&t, Token::Usdt).await;
    assert_eq!(e, 0, "nothing credited in USDT");
}

#[tokio::test]
async fn an_expired_topup_quote_is_refused() {
    let s = start_admin().await;
    let t = s.tenant("Acme", "0").await;
    let q = quote(&s, &t.live, "6000", "USDC").await;
    let id = q["id"].as_str().unwrap();
    let expires = q["expires_at"].as_str().unwrap();
    let created = q["created_at"].as_str().unwrap();
    assert!(expires > created);
    // Move the record's expiry to its creation (the server's clock is the real one).
    let store = &s.app.engine().ports().store;
    let v = get_record::<TopUp>(&**store, id).await.unwrap().unwrap();
    let mut rec = v.record.clone();
    rec.expires_at = rec.created_at;
    store
        .commit(Batch {
            puts: vec![rec.update(v.version).unwrap()],
            ..Default::default()
        })
        .await
        .unwrap();
    let r = s.get(&t.live, &format!("/v1/treasury/topups/{id}")).await;
    assert_eq!(r.expect(200).json()["status"], "EXPIRED");
    let (commits, events) = (s.commits(), outbox_len(&s).await);
    confirm(&s, id, Some(ADMIN), r#"{"fiat_reference":"BANK-9"}"#)
        .await
        .expect_err(410, "QUOTE_EXPIRED");
    assert_eq!(s.treasury(&t).await.0, 0);
    // Only the audit of the admin token's first sign-in (issue #44) is written.
    assert_eq!(s.commits(), commits + 1);
    assert_eq!(outbox_len(&s).await, events);
    assert_eq!(TopUp::KIND, "topup");
}

#[tokio::test]
async fn staff_routes_are_closed_without_an_admin_token() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let q = quote(&s, &t.live, "6000", "USDC").await;
    let id = q["id"].as_str().unwrap();
    for token in [None, Some(ADMIN)] {
        confirm(&s, id, token, r#"{"fiat_reference":"BANK-1"}"#)
            .await
            .expect_err(404, "ADMIN_DISABLED");
    }
    assert_eq!(s.treasury(&t).await.0, 0);
}

#[tokio::test]
async fn topup_requests_are_checked_idempotent_and_live_only() {
    let s = start_admin().await;
    let t = s.tenant("Acme", "0").await;
    for (body, code, param) in [
        (
            r#"{"currency_code":"XOF","fiat_amount":0,"token":"USDC"}"#,
            "INVALID_PARAMETER",
            "fiat_amount",
        ),
        (
            r#"{"currency_code":"ZZZ","fiat_amount":10,"token":"USDC"}"#,
            "UNKNOWN_CURRENCY",
            "currency_code",
        ),
        (
            r#"{"currency_code":"XOF","fiat_amount":10,"token":"DAI"}"#,
            "UNKNOWN_TOKEN",
            "token",
        ),
    ] {
        let r = s.post(&t.live, "/v1/treasury/topups", body).await;
        r.expect_err(400, code);
        assert_eq!(r.param().as_deref(), Some(param), "{body}");
    }
    s.post(
        &t.live,
        "/v1/treasury/topups",
        r#"{"currency_code":"XOF","fiat_amount":10}"#,
    )
    .await
    .expect_err(400, "MISSING_FIELD");
    s.post(
        &t.test,
        "/v1/treasury/topups",
        r#"{"currency_code":"XOF","fiat_amount":6000,"token":"USDC"}"#,
    )
    .await
    .expect_err(403, "SANDBOX_UNSUPPORTED");
    // Idempotency-Key: the same key replays the same quote.
    let body = r#"{"currency_code":"XOF","fiat_amount":"6000.5","token":"USDC"}"#;
    let a = s
        .post_idem(&t.live, "/v1/treasury/topups", body, "k-1")
        .await;
    let b = s
        .post_idem(&t.live, "/v1/treasury/topups", body, "k-1")
        .await;
    assert_eq!(a.expect(201).bytes, b.expect(201).bytes);
    assert_eq!(b.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(a.json()["fiat_amount"], "6000.50");
    let l = s.get(&t.live, "/v1/treasury/topups").await.json();
    assert_eq!(l["total"], 1);
    s.get(&t.live, "/v1/treasury/topups?limit=0")
        .await
        .expect_err(400, "INVALID_PARAMETER");
}

#[tokio::test]
async fn the_cli_confirms_a_topup_once() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let q = quote(&s, &t.live, "600", "USDC").await;
    let id = q["id"].as_str().unwrap();
    let cmd = |reference: &str| {
        Cli::try_parse_from([
            "stablecoin-server",
            "topup",
            "confirm",
            id,
            "--reference",
            reference,
        ])
        .unwrap()
        .command
        .unwrap()
    };
    let e = s.app.engine();
    let alice = e.create_staff("alice").await.unwrap();
    let out = run_admin(e, &cmd("BANK-CLI-1"), Some(&alice.secret))
        .await
        .unwrap();
    assert_eq!(out["topup"]["status"], "CREDITED");
    assert_eq!(out["topup"]["confirmed_by"], alice.account.id.as_str());
    assert_eq!(out["treasury_balance"], "1.000000");
    let err = run_admin(e, &cmd("BANK-CLI-1"), Some(&alice.secret))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ALREADY_CONFIRMED");
    assert_eq!(s.treasury(&t).await, m("1"));
}

trait TreasuryOf {
    async fn engine_treasury(&self, t: &Tenant, token: Token) -> u64;
}

impl TreasuryOf for Server {
    async fn engine_treasury(&self, t: &Tenant, token: Token) -> u64 {
        self.app
            .engine()
            .treasury_balance(&t.id, token)
            .await
            .unwrap()
            .0
    }
}

/// Issue #44: one staff credential must not mint money. Above
/// `[admin] topup_single_approval_max` a confirmation is a proposal that a second,
/// different staff identity must approve; the admin token is one identity; every
/// confirmation is a staff audit entry in the same commit as what it changes.
#[tokio::test]
async fn above_the_cap_a_topup_needs_two_staff_identities_and_every_confirmation_is_audited_in_its_commit()
 {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    c.admin.topup_single_approval_max = "500".into();
    let s = start_with(c).await;
    let t = s.tenant("Acme", "0").await;
    let ada = s.app.engine().create_staff("Ada").await.unwrap();
    let bo = s.app.engine().create_staff("Bo").await.unwrap();
    // 1000 USDC: above the 500 cap.
    let q = quote(&s, &t.live, "600000", "USDC").await;
    let id = q["id"].as_str().unwrap().to_string();
    let body = r#"{"fiat_reference":"BANK-BIG","note":"wire seen"}"#;

    // The admin token's confirmation is only a proposal: one commit, nothing credited.
    // (The first use of each credential, audited as a sign-in on its own, comes first.)
    for credential in [ADMIN, ada.secret.as_str(), bo.secret.as_str()] {
        s.send(
            reqwest::Method::GET,
            "/admin/v1/audit",
            None,
            None,
            &[("Authorization", &format!("Bearer {credential}"))],
        )
        .await
        .expect(200);
    }
    let before = s.commits();
    let r = confirm(&s, &id, Some(ADMIN), body).await;
    r.expect(202);
    let v = r.json();
    assert_eq!(v["status"], "AWAITING_SECOND_APPROVAL");
    assert_eq!(v["proposed_by"], "admin-token");
    assert!(v.get("confirmed_by").is_none(), "{v}");
    assert_eq!(
        s.commits(),
        before + 1,
        "the proposal and its audit entry: one commit"
    );
    assert_eq!(s.engine_treasury(&t, Token::Usdc).await, 0);
    // The tenant sees it waiting, without staff names.
    let r = s.get(&t.live, &format!("/v1/treasury/topups/{id}")).await;
    assert_eq!(r.json()["status"], "AWAITING_SECOND_APPROVAL");
    assert!(r.json().get("proposed_by").is_none());

    // The admin token is ONE identity: it cannot approve its own proposal.
    let before = s.commits();
    confirm(&s, &id, Some(ADMIN), body)
        .await
        .expect_err(409, "SECOND_APPROVER_REQUIRED");
    // Another staff member must repeat the proposal's reference.
    let r = confirm(
        &s,
        &id,
        Some(&ada.secret),
        r#"{"fiat_reference":"BANK-OTHER"}"#,
    )
    .await;
    r.expect_err(409, "APPROVAL_MISMATCH");
    assert_eq!(r.param().as_deref(), Some("fiat_reference"));
    assert_eq!(s.commits(), before, "refusals write nothing");
    assert_eq!(s.engine_treasury(&t, Token::Usdc).await, 0);

    // A different identity approves: credited once, in one commit with its audit entry.
    let before = s.commits();
    let r = confirm(
        &s,
        &id,
        Some(&ada.secret),
        r#"{"fiat_reference":"BANK-BIG"}"#,
    )
    .await;
    r.expect(200);
    let v = r.json();
    assert_eq!(v["status"], "CREDITED");
    assert_eq!(v["confirmed_by"], ada.account.id.as_str());
    assert_eq!(v["proposed_by"], "admin-token");
    assert_eq!(v["note"], "wire seen");
    assert_eq!(s.commits(), before + 1);
    assert_eq!(s.engine_treasury(&t, Token::Usdc).await, 1_000_000_000);
    confirm(&s, &id, Some(&bo.secret), body)
        .await
        .expect_err(409, "ALREADY_CONFIRMED");

    // A staff account's own proposal: it cannot approve it either.
    let q2 = quote(&s, &t.live, "360000", "USDC").await;
    let id2 = q2["id"].as_str().unwrap().to_string();
    confirm(&s, &id2, Some(&bo.secret), r#"{"fiat_reference":"BANK-2"}"#)
        .await
        .expect(202);
    confirm(&s, &id2, Some(&bo.secret), r#"{"fiat_reference":"BANK-2"}"#)
        .await
        .expect_err(409, "SECOND_APPROVER_REQUIRED");
    confirm(&s, &id2, Some(ADMIN), r#"{"fiat_reference":"BANK-2"}"#)
        .await
        .expect(200);
    assert_eq!(s.engine_treasury(&t, Token::Usdc).await, 1_600_000_000);

    // At or under the cap one staff member credits, and that is audited in its commit.
    let small = quote(&s, &t.live, "300000", "USDC").await;
    let small = small["id"].as_str().unwrap().to_string();
    let before = s.commits();
    let r = confirm(
        &s,
        &small,
        Some(&bo.secret),
        r#"{"fiat_reference":"BANK-3"}"#,
    )
    .await;
    r.expect(200);
    assert_eq!(r.json()["status"], "CREDITED");
    assert_eq!(s.commits(), before + 1);

    // The audit log: every confirmation, who made it, newest first.
    let r = s
        .send(
            Method::GET,
            "/admin/v1/audit?limit=100",
            None,
            None,
            &[("Authorization", &format!("Bearer {ADMIN}"))],
        )
        .await;
    r.expect(200);
    let got: Vec<(String, String, String)> = r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("topup."))
        .map(|e| {
            (
                e["staff_id"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let (a, b) = (ada.account.id.clone(), bo.account.id.clone());
    let row = |who: &str, what: &str, tu: &str| (who.to_string(), what.to_string(), tu.to_string());
    let mut want = vec![
        row("admin-token", "topup.confirm.proposed", &id),
        row(&a, "topup.confirm", &id),
        row(&b, "topup.confirm.proposed", &id2),
        row("admin-token", "topup.confirm", &id2),
        row(&b, "topup.confirm", &small),
    ];
    want.reverse();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    want.sort();
    assert_eq!(got_sorted, want, "{got:?}");
}
