//! Payout reconciliation (issue #52 item 4) over real HTTP on loopback: withdrawals paid
//! out through the M-Pesa and MTN MoMo fakes (separate HTTP servers), then a settlement
//! report in the provider's statement format, uploaded to
//! `POST /admin/v1/payouts/reconciliation`, with a planted mismatch of each kind: one
//! payout as paid, one with another amount, one left out, one the tenant never made.
//! The report flags each, and only those. The withdrawals export shows the same
//! payout references.

use crate::common;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use stablecoin_providers::testkit::{FakeMpesa, FakeMtnMomo};
use stablecoin_server::App;
use stablecoin_server::config::{PayoutSettings, Secret};
use std::str::FromStr;
use std::time::Duration;

const MTN_USER: &str = "c72025f5-5cd1-4630-99e4-8ba4722fad56";
const CB_SECRET: &str = "callback-secret-0123456789abcdef-0123";
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Mpesa,
    MtnMomo,
}

/// The fakes stay alive for the test's length.
#[allow(dead_code)]
enum Fake {
    Mpesa(FakeMpesa),
    MtnMomo(FakeMtnMomo),
}

struct Case {
    s: common::Server,
    _fake: Fake,
    key: String,
    tenant: String,
    phone: &'static str,
    currency: &'static str,
}

/// A server paying out through `kind`'s fake. Generous HTTP timeouts: on a loaded
/// machine a 500 ms one can expire on a payout the fake took, and an M-Pesa payout whose
/// submit is unknown waits for staff, never for a test.
async fn setup(kind: Kind) -> Case {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut c = common::test_config();
    c.admin.token = Some(Secret::new(ADMIN_TOKEN));
    let (fake, phone, currency) = match kind {
        Kind::Mpesa => {
            let f = FakeMpesa::start("ck", "cs", "testapi", "ENC==")
                .await
                .unwrap();
            c.payouts = PayoutSettings::Mpesa {
                base_url: f.base_url().into(),
                consumer_key: "ck".into(),
                consumer_secret: Secret::new("cs"),
                initiator_name: "testapi".into(),
                security_credential: Secret::new("ENC=="),
                shortcode: "600000".into(),
                command_id: "BusinessPayment".into(),
                callback_base_url: format!("{base}/"),
                callback_secret: Secret::new(CB_SECRET),
                timeout_ms: 5_000,
                result_wait_ms: 3_000,
            };
            (Fake::Mpesa(f), "+254708374149", "KES")
        }
        Kind::MtnMomo => {
            let f = FakeMtnMomo::start(MTN_USER, "key", "sub").await.unwrap();
            c.payouts = PayoutSettings::MtnMomo {
                base_url: f.base_url().into(),
                api_user: MTN_USER.into(),
                api_key: Secret::new("key"),
                subscription_key: Secret::new("sub"),
                target_environment: "sandbox".into(),
                currency: "EUR".into(),
                callback_base_url: Some(base),
                callback_secret: Some(Secret::new(CB_SECRET)),
                timeout_ms: 5_000,
            };
            (Fake::MtnMomo(f), "+46733123453", "EUR")
        }
    };
    let s = common::serve_on(App::build(c).await.expect("app builds"), listener).await;
    let t = s.tenant("Acme", "200").await;
    s.provision(&t.live, phone).await;
    let f = s.fund_settled(&t.live, phone, "100").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    Case {
        s,
        _fake: fake,
        key: t.live,
        tenant: t.id.0.clone(),
        phone,
        currency,
    }
}

impl Case {
    /// Withdraws `amount` USDC and drives it to COMPLETED; the withdrawal as read.
    async fn paid_withdrawal(&self, amount: &str) -> Value {
        let body = json!({"phone_number": self.phone, "token": "USDC", "amount": amount,
            "payout_currency": self.currency});
        let r = self
            .s
            .post(&self.key, "/v1/users/withdraw", &body.to_string())
            .await;
        r.expect(202);
        let id = r.json()["id"].as_str().unwrap().to_string();
        let mut last = Value::Null;
        for _ in 0..600 {
            self.s.app.engine().tick().await;
            let w = self
                .s
                .get(&self.key, &format!("/v1/withdrawals/{id}"))
                .await;
            w.expect(200);
            let w = w.json();
            if w["status"] == "COMPLETED" {
                return w;
            }
            last = w.clone();
            assert!(w["status"] != "REFUNDED" && w["status"] != "FAILED", "{w}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{id} never completed: {last}");
    }

    async fn reconcile(&self, body: &Value) -> common::Resp {
        self.s
            .send(
                reqwest::Method::POST,
                "/admin/v1/payouts/reconciliation",
                None,
                Some(&body.to_string()),
                &[("Authorization", &format!("Bearer {ADMIN_TOKEN}"))],
            )
            .await
    }
}

/// A report row of `kind`'s statement: a payout of `amount` under `reference`.
fn row(kind: Kind, reference: &str, withdrawal: &str, amount: &str) -> String {
    match kind {
        // Withdrawn as the portal writes it: negative, thousands separated, quoted.
        Kind::Mpesa => {
            let d = Decimal::from_str(amount).unwrap();
            let whole = d.trunc().to_string();
            let mut grouped = String::new();
            for (i, c) in whole.chars().enumerate() {
                if i > 0 && (whole.len() - i) % 3 == 0 {
                    grouped.push(',');
                }
                grouped.push(c);
            }
            format!(
                "{reference},2026-11-29 09:15:07,2026-11-29 09:15:05,Business Payment to 254708374149 - JOHN DOE,Completed,,\"-{grouped}.00\",\"100,000.00\",true,Business Payment,254708374149 - JOHN DOE,,\r\n\
                 {reference}C,2026-11-29 09:15:07,2026-11-29 09:15:05,Business Payment Charge,Completed,,-22.00,\"99,978.00\",true,Business Payment Charge,,{reference},\r\n"
            )
        }
        Kind::MtnMomo => format!(
            "{reference},{withdrawal},2026-11-29 09:20:11,Successful,TRANSFER,,,Withdrawal,FRI:acme/USER,Acme,FRI:46733123453/MSISDN,\"DOE, JANE\",ID:acme/USER,,-{amount},EUR,0.00,EUR,990.80,EUR\r\n"
        ),
    }
}

fn header(kind: Kind) -> &'static str {
    match kind {
        Kind::Mpesa => {
            "Organization Name,Acme Payouts Ltd\r\nShort Code,600000\r\n\r\nReceipt No.,Completion Time,Initiation Time,Details,Transaction Status,Paid In,Withdrawn,Balance,Balance Confirmed,Reason Type,Other Party Info,Linked Transaction ID,A/C No.\r\n"
        }
        Kind::MtnMomo => {
            "Id,External Transaction Id,Date,Status,Type,Provider Category,Information,Note Message,From,From Name,To,To Name,Initiated By,On Behalf Of,Amount,Currency,Fee,Fee Currency,Balance,Balance Currency\r\n"
        }
    }
}

async fn the_report_flags_a_planted_mismatch_of_each_kind(kind: Kind) {
    let c = setup(kind).await;
    let w: Vec<Value> = vec![
        c.paid_withdrawal("10").await,
        c.paid_withdrawal("20").await,
        c.paid_withdrawal("5").await,
    ];
    let field = |w: &Value, f: &str| w[f].as_str().unwrap().to_string();
    let (ids, refs): (Vec<String>, Vec<String>) = w
        .iter()
        .map(|w| (field(w, "id"), field(w, "payout_reference")))
        .unzip();
    let paid = |i: usize| field(&w[i], "payout_amount");
    let more = (Decimal::from_str(&paid(1)).unwrap() + Decimal::ONE).to_string();
    // 0 as paid; 1 with one unit more; 2 left out; and a payment nobody here made.
    let mut report = header(kind).to_string();
    report.push_str(&row(kind, &refs[0], &ids[0], &paid(0)));
    report.push_str(&row(kind, &refs[1], &ids[1], &more));
    report.push_str(&row(kind, "ZZSTRANGER1", "", "300"));
    let provider = match kind {
        Kind::Mpesa => "mpesa",
        Kind::MtnMomo => "mtn_momo",
    };
    let now = stablecoin_core::domain::time::Timestamp::from_millis(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    let body = json!({"provider": provider, "tenant": c.tenant,
        "from": now.plus_secs(-3600).to_rfc3339(), "to": now.plus_secs(3600).to_rfc3339(),
        "report": report});
    let r = c.reconcile(&body).await;
    r.expect(200);
    let j = r.json();
    assert_eq!(j["object"], "payout_reconciliation");
    assert_eq!(
        j["report_payouts"], 3,
        "the charge rows are not payouts: {j}"
    );
    assert_eq!(
        j["counts"],
        json!({"matched": 1, "amount_differs": 1, "missing_on_our_side": 1,
            "missing_on_their_side": 1}),
        "{j}"
    );
    let lines = j["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 4);
    let of = |outcome: &str| lines.iter().find(|l| l["outcome"] == outcome).unwrap();
    assert_eq!(of("matched")["withdrawal"], ids[0].as_str());
    assert_eq!(of("matched")["reference"], refs[0].as_str());
    let differs = of("amount_differs");
    assert_eq!(differs["withdrawal"], ids[1].as_str());
    assert_eq!(
        Decimal::from_str(differs["their_amount"].as_str().unwrap()).unwrap(),
        Decimal::from_str(&more).unwrap()
    );
    assert_eq!(
        Decimal::from_str(differs["our_amount"].as_str().unwrap()).unwrap(),
        Decimal::from_str(&paid(1)).unwrap()
    );
    let theirs = of("missing_on_their_side");
    assert_eq!(theirs["withdrawal"], ids[2].as_str());
    assert_eq!(theirs["reference"], refs[2].as_str());
    assert_eq!(theirs["report_line"], Value::Null);
    let ours = of("missing_on_our_side");
    assert_eq!(ours["reference"], "ZZSTRANGER1");
    assert_eq!(ours["withdrawal"], Value::Null);
    assert!(ours["report_line"].as_u64().unwrap() > 1);

    // The report again, all as paid, among a month of rows that are no payouts (money
    // in, failed attempts): everything matches, and a file larger than an API body
    // (64 KiB) is taken.
    let mut clean = header(kind).to_string();
    for i in 0..3 {
        clean.push_str(&row(kind, &refs[i], &ids[i], &paid(i)));
    }
    for i in 0..1_000 {
        clean.push_str(&match kind {
            Kind::Mpesa => format!(
                "ZZIN{i:06},2026-11-29 07:30:00,2026-11-29 07:30:00,Funds received from Acme Bank,Completed,\"1,000.00\",,\"500,000.00\",true,Organization Settle Funds,Acme Bank,,\r\n"
            ),
            Kind::MtnMomo => format!(
                "9{i:09},wd_failed{i},2026-11-29 09:10:00,Failed,TRANSFER,,,Withdrawal,FRI:acme/USER,Acme,FRI:46733123450/MSISDN,,ID:acme/USER,,-5.00,EUR,0.00,EUR,1000.00,EUR\r\n"
            ),
        });
    }
    assert!(clean.len() > 100 * 1024, "{}", clean.len());
    let r = c.reconcile(&with(&body, "report", json!(clean))).await;
    r.expect(200);
    assert_eq!(
        r.json()["counts"],
        json!({"matched": 3, "amount_differs": 0, "missing_on_our_side": 0,
            "missing_on_their_side": 0})
    );

    // The withdrawals export carries the same references.
    let r =
        c.s.get(&c.key, "/v1/exports/withdrawals?format=jsonl")
            .await;
    r.expect(200);
    let exported: Vec<Value> = r
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(exported.len(), 3);
    for (e, i) in exported.iter().zip([2, 1, 0]) {
        assert_eq!(e["id"], ids[i].as_str(), "newest first");
        assert_eq!(e["payout_reference"], refs[i].as_str());
        assert_eq!(e["payout_amount"], paid(i).as_str());
        assert!(e["payout_provider"].as_str().unwrap().starts_with(provider));
    }

    // Refusals: the other provider's file, an unknown provider or tenant, no token.
    let other = match kind {
        Kind::Mpesa => "mtn_momo",
        Kind::MtnMomo => "mpesa",
    };
    let r = c.reconcile(&with(&body, "provider", json!(other))).await;
    r.expect_err(400, "INVALID_PARAMETER");
    assert_eq!(r.param().as_deref(), Some("report"));
    let r = c.reconcile(&with(&body, "provider", json!("paypal"))).await;
    r.expect_err(400, "INVALID_PARAMETER");
    assert_eq!(r.param().as_deref(), Some("provider"));
    c.reconcile(&with(&body, "tenant", json!("ten_nobody")))
        .await
        .expect(404);
    let r =
        c.s.send(
            reqwest::Method::POST,
            "/admin/v1/payouts/reconciliation",
            None,
            Some(&body.to_string()),
            &[],
        )
        .await;
    r.expect(401);
}

/// `body` with `field` replaced by `value`.
fn with(body: &Value, field: &str, value: Value) -> Value {
    let mut b = body.clone();
    b[field] = value;
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mpesa_statement_flags_a_planted_mismatch_of_each_kind() {
    the_report_flags_a_planted_mismatch_of_each_kind(Kind::Mpesa).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mtn_momo_statement_flags_a_planted_mismatch_of_each_kind() {
    the_report_flags_a_planted_mismatch_of_each_kind(Kind::MtnMomo).await;
}
