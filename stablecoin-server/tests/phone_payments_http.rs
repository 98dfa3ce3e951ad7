//! Paying a checkout session from a phone wallet of this service, over real HTTP on
//! loopback (issue #50 item 4): the code by SMS, a wrong code refused with nothing
//! moved, the right one paying the session on the ledger at once (no chain fee) exactly
//! once, then the tokens swept on chain from the wallet to the treasury; a phone with no
//! wallet answered exactly as one with a wallet; the wallet too poor; a test session;
//! the per-address limit.

use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Rail, RailId};
use std::sync::Arc;

/// The payer: a wallet of the tenant "Wallets".
const PAYER: &str = "+2250700000101";
/// A phone that keys no wallet.
const NOBODY: &str = "+2250700000199";

pub struct PhoneShop {
    pub s: Server,
    /// The tenant whose customer the payer is (it funds the wallet).
    pub wallets: Tenant,
    /// The business paid (another tenant: the payer's wallet is not its customer).
    pub shop: Tenant,
    pub clock: Arc<ShiftedClock>,
    /// The payer's wallet id and its Polygon address.
    pub wallet: String,
    pub wallet_address: String,
}

impl PhoneShop {
    /// A payer holding `funded` USDC on the simulated Polygon, and a shop.
    pub async fn open(funded: &str) -> PhoneShop {
        let (s, clock) = start_shifted(test_config()).await;
        let wallets = s.tenant("Wallets", "1000").await;
        let shop = s.tenant("Acme", "0").await;
        let p = s.provision(&wallets.live, PAYER).await;
        let wallet = p["wallet_id"].as_str().unwrap().to_string();
        let wallet_address = p["address"].as_str().unwrap().to_string();
        let f = s.fund_settled(&wallets.live, PAYER, funded).await;
        assert_eq!(f["status"], "SETTLED", "{f}");
        PhoneShop {
            s,
            wallets,
            shop,
            clock,
            wallet,
            wallet_address,
        }
    }

    pub fn chain(&self) -> &Arc<stablecoin_rails::sim::SimRail> {
        self.s.app.sim_rail(RailId::Evm(137)).unwrap()
    }

    /// A live session of `amount` USDC on polygon.
    pub async fn session(&self, amount: &str) -> String {
        let r = self
            .s
            .post(
                &self.shop.business_live,
                "/api/v1/checkout/sessions",
                &json!({"amount": amount, "currency": "USDC", "networks": ["polygon"],
                    "reference": "order-42"})
                .to_string(),
            )
            .await;
        r.expect(201);
        r.json()["session_id"].as_str().unwrap().to_string()
    }

    pub async fn read(&self, id: &str) -> Value {
        let r = self
            .s
            .get(
                &self.shop.business_live,
                &format!("/api/v1/checkout/sessions/{id}"),
            )
            .await;
        r.expect(200);
        r.json()
    }

    pub async fn ask_code(&self, id: &str, phone: &str) -> Resp {
        self.s
            .send(
                reqwest::Method::POST,
                &format!("/api/v1/pay/{id}/phone-payment/code"),
                None,
                Some(&json!({"phone_number": phone}).to_string()),
                &[],
            )
            .await
    }

    pub async fn confirm(&self, id: &str, phone: &str, code: &str) -> Resp {
        self.s
            .send(
                reqwest::Method::POST,
                &format!("/api/v1/pay/{id}/phone-payment/confirm"),
                None,
                Some(&json!({"phone_number": phone, "code": code}).to_string()),
                &[],
            )
            .await
    }

    pub fn code(&self, phone: &str) -> Option<String> {
        self.s
            .app
            .state()
            .notifier
            .last_code_to(&Phone::parse(phone).unwrap())
    }

    /// The wallet's custody balance on the ledger (available).
    pub async fn wallet_ledger(&self) -> i128 {
        self.s
            .app
            .engine()
            .ports()
            .ledger
            .balance(&format!("wallet:{}:USDC", self.wallet))
            .await
            .unwrap()
            .available()
    }

    pub async fn on_chain(&self, address: &str) -> Micros {
        self.chain()
            .balance(&ChainAddress(address.into()), Token::Usdc)
            .await
            .unwrap()
    }

    /// Mines, moves the clock past the poll pause and ticks the checkout.
    pub async fn work(&self, rounds: usize) {
        for _ in 0..rounds {
            self.chain().mine(1);
            self.clock
                .advance_ms(stablecoin_core::kernel::attempts::POLL_MS + 1);
            let r = self.s.app.state().checkout.tick().await;
            assert!(r.errors.is_empty(), "{r:?}");
        }
    }
}

/// A wrong digit of `code`.
pub fn wrong(code: &str) -> String {
    format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000)
}

#[tokio::test]
async fn a_session_is_paid_from_a_phone_wallet_after_the_code_once_and_swept() {
    let p = PhoneShop::open("40").await;
    let id = p.session("25").await;
    let treasury_before = p.s.treasury(&p.shop).await;

    let r = p.ask_code(&id, PAYER).await;
    r.expect(202);
    let sent = r.json();
    assert!(sent["sent_to"].as_str().unwrap().ends_with("01"), "{sent}");
    assert!(sent["expires_at"].as_str().is_some());
    let code = p.code(PAYER).expect("an SMS with the code");
    let sms =
        p.s.app
            .state()
            .notifier
            .last_to(
                &Phone::parse(PAYER).unwrap(),
                stablecoin_core::ports::SmsKind::PaymentCode,
            )
            .unwrap();
    assert!(
        sms.text.contains("25.000000 USDC") && sms.text.contains("Acme"),
        "the SMS names what is paid to whom: {}",
        sms.text
    );

    // A wrong code: refused, counted, nothing moved.
    p.confirm(&id, PAYER, &wrong(&code))
        .await
        .expect_err(422, "CODE_INVALID");
    assert_eq!(p.read(&id).await["status"], "pending");
    assert_eq!(p.wallet_ledger().await, 40_000_000);

    // The right one pays at once, on the ledger.
    let r = p.confirm(&id, PAYER, &code).await;
    r.expect(200);
    let paid = r.json();
    assert_eq!(paid["status"], "paid", "{paid}");
    assert_eq!(paid["amount"], "25.000000");
    assert_eq!(paid["network"], "polygon");
    let deposit_id = paid["deposit_id"].as_u64().unwrap();
    assert_eq!(paid["tx_hash"], format!("ledger:{deposit_id}"));
    let read = p.read(&id).await;
    assert_eq!(read["status"], "paid", "{read}");
    assert_eq!(
        p.wallet_ledger().await,
        15_000_000,
        "debited exactly, no fee"
    );
    assert_eq!(
        p.s.treasury(&p.shop).await,
        treasury_before.checked_add(m("25")).unwrap(),
        "the business's treasury credited like any paid session"
    );

    // The payments webhooks of any deposit: confirmed with the ledger's hash (fanned
    // out from the outbox into the events API).
    p.s.app.state().webhooks.round().await.unwrap();
    let events =
        p.s.get(&p.shop.business_live, "/api/v1/events?limit=100")
            .await;
    events.expect(200);
    let events = events.json()["events"].as_array().unwrap().clone();
    let of = |t: &str| {
        events
            .iter()
            .filter(|e| e["type"] == t)
            .map(|e| e["payload"].clone())
            .collect::<Vec<_>>()
    };
    let confirmed = of("payment.confirmed");
    assert_eq!(confirmed.len(), 1, "{events:?}");
    assert_eq!(confirmed[0]["session_id"], id.as_str());
    assert_eq!(confirmed[0]["tx_hash"], format!("ledger:{deposit_id}"));
    let deposit = of("wallet.deposit.confirmed");
    assert_eq!(deposit.len(), 1, "{events:?}");
    assert_eq!(deposit[0]["data"]["deposit_id"], deposit_id);
    assert_eq!(
        deposit[0]["data"]["tx_hash"],
        format!("ledger:{deposit_id}")
    );
    let detected = of("wallet.deposit.detected");
    assert_eq!(detected.len(), 1, "{events:?}");
    assert_eq!(detected[0]["data"]["detected_by"], "phone_wallet");

    // The code is used up; the session takes no second payment.
    p.confirm(&id, PAYER, &code)
        .await
        .expect_err(409, "INVALID_STATE");
    assert_eq!(p.wallet_ledger().await, 15_000_000);

    // The tokens follow on chain: swept from the wallet's address to the treasury.
    assert_eq!(p.on_chain(&p.wallet_address).await, m("40"));
    let treasury_address = p
        .chain()
        .address_for(&KeyPurpose::Treasury)
        .await
        .unwrap()
        .0;
    let treasury_chain_before = p.on_chain(&treasury_address).await;
    p.work(6).await;
    assert_eq!(
        p.on_chain(&p.wallet_address).await,
        m("15"),
        "ledger and chain agree"
    );
    assert_eq!(
        p.on_chain(&treasury_address).await,
        treasury_chain_before.checked_add(m("25")).unwrap()
    );
}

#[tokio::test]
async fn a_phone_without_a_wallet_is_answered_as_one_with_a_wallet() {
    let p = PhoneShop::open("40").await;
    let id = p.session("25").await;
    let before = p.s.app.state().notifier.sent().len();
    let with = p.ask_code(&id, PAYER).await;
    let without = p.ask_code(&id, NOBODY).await;
    with.expect(202);
    without.expect(202);
    let keys = |v: Value| {
        v.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<String>>()
    };
    assert_eq!(keys(with.json()), keys(without.json()));
    assert_eq!(
        p.s.app.state().notifier.sent().len() - before,
        1,
        "only the wallet's holder gets an SMS"
    );
    assert!(p.code(NOBODY).is_none());
    // Wrong codes: the same answers, to the lockout.
    let code = p.code(PAYER).unwrap();
    for i in 0..5 {
        let a = p.confirm(&id, PAYER, &wrong(&code)).await;
        let b = p.confirm(&id, NOBODY, "123456").await;
        assert_eq!((a.status, a.code()), (b.status, b.code()), "guess {i}");
        assert_eq!(a.json()["error"]["message"], b.json()["error"]["message"]);
        if i < 4 {
            a.expect_err(422, "CODE_INVALID");
        } else {
            a.expect_err(429, "TOO_MANY_ATTEMPTS");
            assert_eq!(a.header("retry-after"), b.header("retry-after"));
        }
    }
    // Locked out: even the right code is refused, and nothing moved.
    p.confirm(&id, PAYER, &code)
        .await
        .expect_err(429, "TOO_MANY_ATTEMPTS");
    assert_eq!(p.wallet_ledger().await, 40_000_000);
    assert_eq!(p.read(&id).await["status"], "pending");
}

#[tokio::test]
async fn a_wallet_that_holds_too_little_pays_nothing_and_keeps_its_code() {
    let p = PhoneShop::open("10").await;
    let id = p.session("25").await;
    p.ask_code(&id, PAYER).await.expect(202);
    let code = p.code(PAYER).unwrap();
    p.confirm(&id, PAYER, &code)
        .await
        .expect_err(422, "INSUFFICIENT_FUNDS");
    assert_eq!(p.wallet_ledger().await, 10_000_000);
    assert_eq!(p.read(&id).await["status"], "pending");
    // Funded meanwhile, the same code still pays.
    p.s.fund_settled(&p.wallets.live, PAYER, "20").await;
    p.confirm(&id, PAYER, &code).await.expect(200);
    assert_eq!(p.wallet_ledger().await, 5_000_000);
}

#[tokio::test]
async fn test_sessions_unknown_sessions_and_floods_are_refused() {
    let p = PhoneShop::open("40").await;
    let r =
        p.s.post(
            &p.shop.business_test,
            "/api/v1/checkout/sessions",
            &json!({"amount": "5", "currency": "USDC", "networks": ["polygon"]}).to_string(),
        )
        .await;
    r.expect(201);
    let test_id = r.json()["session_id"].as_str().unwrap().to_string();
    p.ask_code(&test_id, PAYER)
        .await
        .expect_err(403, "PHONE_PAYMENT_UNAVAILABLE");
    p.ask_code("cs_00000000000000000000000000", PAYER)
        .await
        .expect_err(404, "NOT_FOUND");
    let id = p.session("25").await;
    p.ask_code(&id, "0700")
        .await
        .expect_err(400, "INVALID_PHONE");
    // One address, many phones: the per-address limit (20 per 10 minutes, the three
    // requests above included) stops it before any code limit would.
    let mut limited = None;
    for i in 0..30 {
        let r = p.ask_code(&id, &format!("+22507000003{i:02}")).await;
        if r.status == 429 {
            limited = Some((i, r));
            break;
        }
        r.expect(202);
    }
    let (i, r) = limited.expect("the address is limited");
    assert_eq!(i, 17, "20 requests from one address, then 429");
    r.expect_err(429, "RATE_LIMITED");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=600).contains(&retry), "{retry}");
}
