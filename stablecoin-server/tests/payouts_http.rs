//! Withdrawals over HTTP paid out by a real payout adapter (`[payouts] kind = "mpesa"`
//! or `"mtn_momo"`) talking to the provider's fake on loopback, whose callbacks come
//! back to this server's callback routes. Every case runs for both providers. A
//! withdrawal completes or is refunded only on the provider's status query: lost
//! answers, 5xx and callbacks that are missing, late, duplicated or forged never pay
//! twice and never move a withdrawal by themselves. A sweep the chain refuses or
//! reverts fails the withdrawal with nothing moved and nothing paid.
//!
//! The crashes between the steps are in `payouts_crash.rs`.

use crate::common;

use serde_json::{Value, json};
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{KeyPurpose, LedgerError, Rail, RailId};
use stablecoin_providers::testkit::{Behaviour, FakeMpesa, FakeMtnMomo};
use stablecoin_rails::sim::Fault;
use stablecoin_server::App;
use stablecoin_server::config::{PayoutSettings, Secret};
use std::time::Duration;

const MTN_USER: &str = "c72025f5-5cd1-4630-99e4-8ba4722fad56";
/// `payouts.callback_secret`: what the per-payout callback tokens derive from.
const CB_SECRET: &str = "callback-secret-0123456789abcdef-0123";

/// The token of payout `id`'s callback URLs, as this server derives it.
fn token(id: &str) -> String {
    stablecoin_providers::callback::CallbackKey::new(CB_SECRET)
        .unwrap()
        .token(id)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Mpesa,
    MtnMomo,
}

/// The provider's fake, and what a case needs of it.
enum Fake {
    Mpesa(FakeMpesa),
    MtnMomo(FakeMtnMomo),
}

impl Fake {
    /// A payee the provider pays.
    fn phone(&self) -> &'static str {
        match self {
            Fake::Mpesa(_) => "+254708374149",
            Fake::MtnMomo(_) => "+46733123453",
        }
    }

    /// A payee the provider definitively fails (M-Pesa: set up here; MTN: a sandbox
    /// failure number).
    fn failing_phone(&self) -> &'static str {
        match self {
            Fake::Mpesa(f) => {
                f.fail_party("254711000001", "2040", "The receiver is not registered");
                "+254711000001"
            }
            Fake::MtnMomo(_) => "+46733123450",
        }
    }

    fn currency(&self) -> &'static str {
        match self {
            Fake::Mpesa(_) => "KES",
            Fake::MtnMomo(_) => "EUR",
        }
    }

    fn paid_count(&self, id: &str) -> usize {
        match self {
            Fake::Mpesa(f) => f.paid_count(id),
            Fake::MtnMomo(f) => f.paid_count(id),
        }
    }

    /// Payment and status requests the provider received (any payout).
    fn requests(&self) -> usize {
        match self {
            Fake::Mpesa(f) => f.requests(),
            Fake::MtnMomo(f) => f.requests(),
        }
    }

    fn set_behaviour(&self, b: Behaviour) {
        match self {
            Fake::Mpesa(f) => f.set_behaviour(b),
            Fake::MtnMomo(f) => f.set_behaviour(b),
        }
    }

    fn set_lose_answers(&self, lose: bool) {
        match self {
            Fake::Mpesa(f) => f.set_lose_answers(lose),
            Fake::MtnMomo(f) => f.set_lose_answers(lose),
        }
    }

    /// Callbacks the provider sent and had answered so far.
    fn callbacks_answered(&self) -> usize {
        match self {
            Fake::Mpesa(f) => f.callbacks_answered(),
            Fake::MtnMomo(f) => f.callbacks_answered(),
        }
    }

    fn set_hold(&self, hold: bool) {
        match self {
            Fake::Mpesa(f) => f.set_hold(hold),
            Fake::MtnMomo(f) => f.set_hold(hold),
        }
    }

    fn complete_held(&self) {
        match self {
            Fake::Mpesa(f) => f.complete_held(),
            Fake::MtnMomo(f) => f.complete_held(),
        }
    }

    /// The payment's own callbacks: `times` (0: never), `delay` after it is final.
    fn set_callbacks(&self, times: usize, delay: Duration) {
        match self {
            Fake::Mpesa(f) => f.set_payment_callbacks(times, delay),
            Fake::MtnMomo(f) => f.set_callbacks(times, delay),
        }
    }

    /// The provider's own reference of the payout `id`, where the fake shows it.
    fn reference(&self, id: &str) -> Option<String> {
        match self {
            Fake::Mpesa(_) => None,
            Fake::MtnMomo(f) => f
                .transfers()
                .into_iter()
                .find(|(_, t)| t["externalId"] == id)
                .and_then(|(_, t)| t["financialTransactionId"].as_str().map(str::to_string)),
        }
    }

    /// The callback route, and a forged "paid" body for the payout `id`.
    fn forged_success(&self, id: &str) -> (&'static str, String) {
        match self {
            Fake::Mpesa(_) => (
                "/v1/callbacks/payouts/mpesa/result",
                json!({"Result": {"ResultType": 0, "ResultCode": 0, "ResultDesc": "ok",
                    "OriginatorConversationID": id, "ConversationID": "AG_forged",
                    "TransactionID": "FORGED1", "ResultParameters": {"ResultParameter": [
                        {"Key": "TransactionReceipt", "Value": "FORGED1"}]}}})
                .to_string(),
            ),
            Fake::MtnMomo(_) => (
                "/v1/callbacks/payouts/mtn_momo",
                json!({"amount": "9.2", "currency": "EUR", "financialTransactionId": "FORGED1",
                    "externalId": id, "status": "SUCCESSFUL"})
                .to_string(),
            ),
        }
    }
}

struct Case {
    s: common::Server,
    fake: Fake,
    key: String,
    wallet_id: String,
    phone: &'static str,
}

/// A server paying out through `kind`'s fake, and a wallet at `phone` (`None`: the
/// provider's paying number) funded with 50 USDC.
async fn setup(kind: Kind, failing: bool) -> Case {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut c = common::test_config();
    let fake = match kind {
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
                timeout_ms: 500,
                result_wait_ms: 1_000,
            };
            Fake::Mpesa(f)
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
                timeout_ms: 500,
            };
            Fake::MtnMomo(f)
        }
    };
    let s = common::serve_on(App::build(c).await.expect("app builds"), listener).await;
    assert!(s.app.state().sim_payouts.is_none(), "a real provider");
    let t = s.tenant("Acme", "100").await;
    let phone = if failing {
        fake.failing_phone()
    } else {
        fake.phone()
    };
    let wallet_id = s.provision(&t.live, phone).await["wallet_id"]
        .as_str()
        .unwrap()
        .to_string();
    let f = s.fund_settled(&t.live, phone, "50").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    Case {
        s,
        fake,
        key: t.live,
        wallet_id,
        phone,
    }
}

impl Case {
    /// Withdraws 10 USDC in the provider's currency; the withdrawal's id.
    async fn withdraw(&self) -> String {
        let body = json!({"phone_number": self.phone, "token": "USDC", "amount": "10",
            "payout_currency": self.fake.currency()});
        let r = self
            .s
            .post(&self.key, "/v1/users/withdraw", &body.to_string())
            .await;
        r.expect(202);
        r.json()["id"].as_str().unwrap().to_string()
    }

    async fn read(&self, id: &str) -> Value {
        let r = self
            .s
            .get(&self.key, &format!("/v1/withdrawals/{id}"))
            .await;
        r.expect(200);
        r.json()
    }

    /// Runs the engine's workers until the withdrawal is in one of `want` (at most
    /// ~10 s); the withdrawal as read then.
    async fn drive(&self, id: &str, want: &[&str]) -> Value {
        for _ in 0..200 {
            self.s.app.engine().tick().await;
            let w = self.read(id).await;
            if want.iter().any(|s| w["status"] == *s) {
                return w;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{id} never reached {want:?}: {}", self.read(id).await);
    }

    /// Ticks `n` times: whatever the callbacks did, the engine had its chances.
    async fn ticks(&self, n: usize) {
        for _ in 0..n {
            self.s.app.engine().tick().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn chain_balance(&self, purpose: KeyPurpose) -> u64 {
        let rail = RailId::Evm(self.s.app.config().primary_evm_chain().unwrap());
        let chain = self.s.app.sim_rail(rail).unwrap();
        let address = chain.address_for(&purpose).await.unwrap();
        chain.balance(&address, Token::Usdc).await.unwrap().0
    }

    async fn wallet_on_chain(&self) -> u64 {
        self.chain_balance(KeyPurpose::Wallet(self.wallet_id.clone()))
            .await
    }

    async fn ledger(&self, account: &str) -> i128 {
        let ledger = &self.s.app.state().storage.ledger;
        match ledger.balance(account).await {
            Ok(b) => b.posted(),
            // Never posted to (nothing was ever paid out): zero.
            Err(LedgerError::UnknownAccount { .. }) => 0,
            Err(e) => panic!("{account}: {e:?}"),
        }
    }

    async fn wallet_ledger(&self) -> i128 {
        self.ledger(&format!("wallet:{}:USDC", self.wallet_id))
            .await
    }

    /// The wallet's ledger balance net of its pending holds.
    async fn wallet_available(&self) -> i128 {
        let ledger = &self.s.app.state().storage.ledger;
        let account = format!("wallet:{}:USDC", self.wallet_id);
        ledger.balance(&account).await.unwrap().available()
    }

    /// The next submit the simulated EVM chain receives meets `fault`.
    fn inject_chain_fault(&self, fault: Fault) {
        let rail = RailId::Evm(self.s.app.config().primary_evm_chain().unwrap());
        self.s.app.sim_rail(rail).unwrap().inject(fault);
    }
}

const TEN: u64 = 10_000_000;
const FIFTY: u64 = 50_000_000;

/// COMPLETED with the provider's reference: the tokens moved to the treasury, on chain
/// and in the ledger, and the payout paid once.
async fn assert_completed(c: &Case, id: &str, w: &Value, treasury_before: u64) {
    assert_eq!(w["status"], "COMPLETED", "{w}");
    let reference = w["payout_reference"].as_str().expect("a reference");
    match &c.fake {
        Fake::Mpesa(_) => assert!(reference.starts_with("SIM"), "{reference}"),
        Fake::MtnMomo(_) => assert_eq!(Some(reference.to_string()), c.fake.reference(id)),
    }
    assert_ne!(reference, "FORGED1");
    assert_eq!(c.fake.paid_count(id), 1, "paid exactly once");
    assert_eq!(c.wallet_on_chain().await, FIFTY - TEN);
    assert_eq!(
        c.chain_balance(KeyPurpose::Treasury).await,
        treasury_before + TEN
    );
    assert_eq!(c.wallet_ledger().await, (FIFTY - TEN) as i128);
    assert_eq!(c.ledger("withdrawals:USDC").await, 0);
    assert_eq!(c.ledger("fiat_out:USDC").await, TEN as i128);
}

/// REFUNDED: the stablecoin is back in the wallet on chain and in the ledger; nothing
/// was paid.
async fn assert_refunded(c: &Case, id: &str, w: &Value, treasury_before: u64) {
    assert_eq!(w["status"], "REFUNDED", "{w}");
    assert!(w["refund_tx_hash"].as_str().is_some(), "{w}");
    assert!(w.get("payout_reference").is_none(), "{w}");
    assert_eq!(c.fake.paid_count(id), 0);
    assert_eq!(c.wallet_on_chain().await, FIFTY);
    assert_eq!(c.chain_balance(KeyPurpose::Treasury).await, treasury_before);
    assert_eq!(c.wallet_ledger().await, FIFTY as i128);
    assert_eq!(c.ledger("fiat_out:USDC").await, 0);
}

/// FAILED: the sweep never moved the tokens, so nothing left the wallet (on chain, in
/// the ledger, no hold left), nothing reached the treasury and nothing was paid out.
async fn assert_failed(c: &Case, id: &str, w: &Value, treasury_before: u64) {
    assert_eq!(w["status"], "FAILED", "{w}");
    assert!(
        w["error_reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{w}"
    );
    assert!(w.get("payout_reference").is_none(), "{w}");
    assert!(w.get("refund_tx_hash").is_none(), "{w}");
    assert_eq!(c.fake.paid_count(id), 0, "nothing paid out");
    assert_eq!(c.wallet_on_chain().await, FIFTY);
    assert_eq!(c.chain_balance(KeyPurpose::Treasury).await, treasury_before);
    assert_eq!(c.wallet_ledger().await, FIFTY as i128);
    assert_eq!(c.wallet_available().await, FIFTY as i128, "the hold voided");
    assert_eq!(c.ledger("withdrawals:USDC").await, 0);
    assert_eq!(c.ledger("fiat_out:USDC").await, 0);
}

async fn a_sweep_the_chain_rejects_or_reverts_fails_and_nothing_leaves(kind: Kind) {
    let c = setup(kind, false).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    // Refused by the node at submit, then accepted and reverted at execution.
    for fault in [Fault::Reject, Fault::Revert] {
        c.inject_chain_fault(fault);
        let id = c.withdraw().await;
        assert_eq!(
            c.wallet_available().await,
            (FIFTY - TEN) as i128,
            "held while the sweep runs"
        );
        let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
        assert_failed(&c, &id, &w, treasury).await;
        // Final: more ticks change nothing and never reach the provider.
        c.ticks(3).await;
        assert_eq!(c.read(&id).await, w, "{fault:?}");
        assert_eq!(c.fake.paid_count(&id), 0);
        assert_eq!(c.fake.requests(), 0, "the provider was never asked");
    }
}

async fn a_withdrawal_completes_with_the_providers_reference(kind: Kind) {
    let c = setup(kind, false).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    let id = c.withdraw().await;
    let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
    assert_completed(&c, &id, &w, treasury).await;
    // More ticks and the payment's own callback change nothing.
    c.ticks(5).await;
    assert_eq!(c.read(&id).await, w);
    assert_eq!(c.fake.paid_count(&id), 1);
    if let Some(results) = &c.s.app.state().mpesa_results {
        let hint = results
            .hint(&id)
            .await
            .expect("the B2C result reached the route");
        assert_eq!(hint.receipt(), w["payout_reference"].as_str());
    }
}

async fn a_definitively_failed_payout_is_refunded(kind: Kind) {
    let c = setup(kind, true).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    let id = c.withdraw().await;
    let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
    assert_refunded(&c, &id, &w, treasury).await;
    assert!(w["error_reason"].as_str().is_some(), "{w}");
}

async fn an_unknown_submit_resolved_paid_by_the_status_query_is_paid_once(kind: Kind) {
    let c = setup(kind, false).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    // The request is processed and its answer lost: the submit times out.
    c.fake.set_lose_answers(true);
    let id = c.withdraw().await;
    let w = c.drive(&id, &["PAYOUT_UNKNOWN", "COMPLETED"]).await;
    assert_eq!(w["status"], "PAYOUT_UNKNOWN", "the submit timed out: {w}");
    c.fake.set_lose_answers(false);
    assert_eq!(c.fake.paid_count(&id), 1, "processed: {w}");
    let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
    assert_completed(&c, &id, &w, treasury).await;

    // A 5xx before anything was taken: unknown; the status query (failing too while
    // the provider is down) then says "not found". MTN documents its reference id as
    // idempotent: the same id is paid, once. Daraja does not document that it refuses
    // a re-used OriginatorConversationID, and a 5xx does not prove nothing was taken:
    // the payout is never sent again and waits for staff, who refund it.
    let c = setup(kind, false).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    c.fake.set_behaviour(Behaviour::Status(503));
    let id = c.withdraw().await;
    c.drive(&id, &["PAYOUT_UNKNOWN"]).await;
    c.ticks(3).await;
    assert_eq!(c.read(&id).await["status"], "PAYOUT_UNKNOWN");
    assert_eq!(c.fake.paid_count(&id), 0);
    c.fake.set_behaviour(Behaviour::Normal);
    if kind == Kind::Mpesa {
        c.ticks(5).await;
        assert_eq!(c.read(&id).await["status"], "PAYOUT_UNKNOWN", "waits");
        assert_eq!(c.fake.paid_count(&id), 0, "never sent again");
        let e = c.s.app.engine();
        let ada = e.create_staff("ada").await.unwrap();
        let req = stablecoin_core::engine::ResolvePayoutRequest {
            decision: stablecoin_core::engine::PayoutDecision::Refunded,
            reason: "Daraja portal: nothing under this id".into(),
        };
        e.resolve_payout(&ada.account.id, &id, &req).await.unwrap();
        let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
        assert_refunded(&c, &id, &w, treasury).await;
        return;
    }
    let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
    assert_completed(&c, &id, &w, treasury).await;
}

async fn an_unknown_submit_then_definitively_failed_is_refunded(kind: Kind) {
    let c = setup(kind, true).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    c.fake.set_lose_answers(true);
    let id = c.withdraw().await;
    let w = c.drive(&id, &["PAYOUT_UNKNOWN", "REFUNDED"]).await;
    assert_eq!(w["status"], "PAYOUT_UNKNOWN", "the submit timed out: {w}");
    c.fake.set_lose_answers(false);
    let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
    assert_refunded(&c, &id, &w, treasury).await;
}

async fn callbacks_missing_late_duplicated_or_forged_change_nothing(kind: Kind) {
    let c = setup(kind, false).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    // Held by the provider; its callbacks will come twice, late.
    c.fake.set_hold(true);
    c.fake.set_callbacks(2, Duration::from_millis(1_500));
    let id = c.withdraw().await;
    let held = c.drive(&id, &["PAYOUT_SUBMITTING"]).await;
    c.ticks(3).await;
    // A forged "paid" callback: without the payout's token the route does not exist
    // or refuses it (403); with the token (had it leaked), a body naming another
    // request, amount or payee is refused (409). Nothing changes.
    let (path, body) = c.fake.forged_success(&id);
    let post = |url: String, body: String| {
        let s = &c.s;
        async move {
            s.send(
                reqwest::Method::POST,
                &url,
                None,
                Some(&body),
                &[("Content-Type", "application/json")],
            )
            .await
        }
    };
    post(path.to_string(), body.clone())
        .await
        .expect_err(404, "ROUTE_NOT_FOUND");
    let wrong = token("wd_other");
    post(format!("{path}/{id}/{wrong}"), body.clone())
        .await
        .expect_err(403, "INVALID_SIGNATURE");
    let url = format!("{path}/{id}/{}", token(&id));
    post(url.clone(), body.clone())
        .await
        .expect_err(409, "CALLBACK_MISMATCH");
    // Another payout's result at this payout's URL, and a payout that does not exist
    // at its own (valid) URL: refused.
    let (_, other) = c.fake.forged_success("wd_unknown");
    post(url.clone(), other.clone())
        .await
        .expect_err(409, "CALLBACK_MISMATCH");
    post(
        format!("{path}/wd_unknown/{}", token("wd_unknown")),
        other.clone(),
    )
    .await
    .expect_err(409, "CALLBACK_MISMATCH");
    // Malformed at the right URL: 400.
    post(url.clone(), "{not json".into())
        .await
        .expect_err(400, "MALFORMED_CALLBACK");
    c.ticks(5).await;
    let w = c.read(&id).await;
    assert_eq!(w["status"], "PAYOUT_SUBMITTING", "{w}");
    assert_eq!(w["updated_at"], held["updated_at"], "untouched");
    assert_eq!(c.fake.paid_count(&id), 0);
    // Paid: the status query completes it before the late callbacks arrive.
    c.fake.complete_held();
    let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
    assert_completed(&c, &id, &w, treasury).await;
    // The two late callbacks arrive (the fake saw both answered): nothing changes,
    // nothing is paid again.
    let arrived = std::time::Instant::now();
    while c.fake.callbacks_answered() < 2 {
        assert!(
            arrived.elapsed() < Duration::from_secs(60),
            "the late callbacks never came"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c.ticks(3).await;
    assert_eq!(c.read(&id).await, w);
    assert_eq!(c.fake.paid_count(&id), 1);

    // Missing callbacks: the status query alone completes it.
    let c = setup(kind, false).await;
    let treasury = c.chain_balance(KeyPurpose::Treasury).await;
    c.fake.set_callbacks(0, Duration::ZERO);
    let id = c.withdraw().await;
    let w = c.drive(&id, &["COMPLETED", "REFUNDED", "FAILED"]).await;
    assert_completed(&c, &id, &w, treasury).await;
    if let Some(results) = &c.s.app.state().mpesa_results {
        assert_eq!(results.hint(&id).await, None, "no payment callback arrived");
    }
}

/// A withdrawal in a currency the provider does not pay is refused before anything is
/// held; the other provider's callback routes are not served.
async fn another_currency_is_refused_and_other_routes_are_absent(kind: Kind) {
    let c = setup(kind, false).await;
    let other = if kind == Kind::Mpesa { "EUR" } else { "KES" };
    let body = json!({"phone_number": c.phone, "token": "USDC", "amount": "10",
        "payout_currency": other});
    let r =
        c.s.post(&c.key, "/v1/users/withdraw", &body.to_string())
            .await;
    r.expect_err(400, "UNKNOWN_CURRENCY");
    assert_eq!(r.param().as_deref(), Some("payout_currency"));
    assert_eq!(c.wallet_ledger().await, FIFTY as i128);
    let absent = match kind {
        Kind::Mpesa => "/v1/callbacks/payouts/mtn_momo",
        Kind::MtnMomo => "/v1/callbacks/payouts/mpesa/result",
    };
    let absent = format!("{absent}/wd_1/{}", token("wd_1"));
    let r =
        c.s.send(reqwest::Method::POST, &absent, None, Some("{}"), &[])
            .await;
    r.expect_err(404, "ROUTE_NOT_FOUND");
}

macro_rules! both {
    ($case:ident) => {
        mod $case {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mpesa() {
                super::$case(Kind::Mpesa).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mtn_momo() {
                super::$case(Kind::MtnMomo).await
            }
        }
    };
}

both!(a_withdrawal_completes_with_the_providers_reference);
both!(a_sweep_the_chain_rejects_or_reverts_fails_and_nothing_leaves);
both!(a_definitively_failed_payout_is_refunded);
both!(an_unknown_submit_resolved_paid_by_the_status_query_is_paid_once);
both!(an_unknown_submit_then_definitively_failed_is_refunded);
both!(callbacks_missing_late_duplicated_or_forged_change_nothing);
both!(another_currency_is_refused_and_other_routes_are_absent);
