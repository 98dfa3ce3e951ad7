//! The rail conformance suite: what every [`Rail`] must do for the engine, checked
//! through the port alone, on the rail's real chain (or its test stand-in).
//!
//! [`rail_suite`] runs every `case_*` function, each on a fresh [`RailHarness`] from
//! `make`. The harness is the little a rail's own tests supply that the port cannot do:
//! fund an address from outside, add blocks, lose the answer to the next submission, and
//! put the rail in each readiness state. A third-party rail runs the suite as the
//! adapters in `stablecoin-rails` do:
//!
//! ```ignore
//! #[tokio::test]
//! async fn my_rail_conforms() {
//!     stablecoin_core::testkit::rail_suite(|| async { MyChainHarness::start().await }).await;
//! }
//! ```
//!
//! What the cases hold a rail to:
//! - [`case_tokens`]: `tokens()` lists exactly the configured tokens, once each, and
//!   every one of them can be read.
//! - [`case_addresses`]: the same purpose always gives the same address, different
//!   purposes differ, `prepare_wallet` is idempotent, and (unless the harness says
//!   otherwise) addresses are derived offline, with the node unreachable.
//! - [`case_balances`]: a fresh address holds nothing; a deposit shows as exactly its
//!   amount, once.
//! - [`case_submit`]: a payment is idempotent by its id (a second submit, before or after
//!   confirmation, sends nothing), reaches `Confirmed` by `status` with the hash
//!   `submit` reported, and moves exactly its amount.
//! - [`case_lost_response`]: a submission whose answer is lost (at the chain's transport,
//!   by the harness, and at the port, by a [`DelegatingRail`]) answers `Unknown`, resolves
//!   by `status`, and is never paid twice.
//! - [`case_scan`]: an inbound transfer is reported confirmed exactly once, never before
//!   the configured depth, with the amount and hash of the deposit; a cursor resumes
//!   without repeats (also with a limit of one), an unwatched address sees nothing, and
//!   the cursor, not the rail, holds the position (a scan from the start finds it again).
//! - [`case_readiness`]: `READY`, `INBOUND_READY` (reads still work) and `DEGRADED`, each
//!   with reasons exactly when not ready.
//!
//! Cases panic with a message naming the case and the broken rule. The chain may advance
//! by itself between calls (auto-mining, a slot per status poll): the cases only wait for
//! things to happen, bounded, and never count blocks.

use super::wrappers::{DelegatingRail, RailOverride};
use crate::domain::money::{Micros, Token};
use crate::ports::rail::{
    ChainAddress, Inbound, LegRole, PaymentLeg, Rail, RailError, RailPayment, ReadinessStatus,
    Submission, SubmissionStatus,
};
use crate::ports::signer::KeyPurpose;
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;

/// What the suite needs of a rail that the [`Rail`] port cannot do: the test controls of
/// its chain, and two facts of its configuration.
#[async_trait]
pub trait RailHarness: Send + Sync {
    /// The rail under test.
    fn rail(&self) -> Arc<dyn Rail>;

    /// The tokens the rail was configured to carry: [`Rail::tokens`] must list exactly
    /// these.
    fn configured_tokens(&self) -> Vec<Token>;

    /// The configured confirmation depth: blocks (the transaction's own included)
    /// before an inbound transfer is confirmed. 1 for a rail that reports only final
    /// transfers (Solana at `finalized`).
    fn confirmations(&self) -> u64;

    /// Whether `address_for` answers with the node unreachable (addresses derived from
    /// keys alone). `false` for a rail whose simulated outage fails every call.
    fn addresses_offline(&self) -> bool {
        true
    }

    /// An outside party pays `amount` of `token` to `to`: a deposit the scanner must
    /// report. Returns its transaction hash as the scanner reports it.
    async fn fund(&self, to: &ChainAddress, token: Token, amount: Micros) -> String;

    /// Adds `blocks` blocks (slots) to the chain.
    async fn advance(&self, blocks: u64);

    /// The chain takes the next payment submitted, but its answer to the rail is lost:
    /// the rail sees a transport failure after the node accepted it.
    async fn lose_next_response(&self);

    /// Puts the rail in `status`: `Ready`; `InboundReady` (reads work, the sponsor
    /// cannot pay for a send); `Degraded` (the node unreachable).
    async fn set_readiness(&self, status: ReadinessStatus);
}

/// Runs every case, each on a fresh harness from `make`.
pub async fn rail_suite<F, Fut, H>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = H>,
    H: RailHarness + 'static,
{
    macro_rules! run {
        ($($case:ident),* $(,)?) => {$(
            let harness = make().await;
            $case(&harness).await;
        )*};
    }
    run!(
        case_tokens,
        case_addresses,
        case_balances,
        case_submit,
        case_lost_response,
        case_scan,
        case_readiness,
    );
}

/// Bound on the polls a case waits for something to happen, on top of the depth.
const PATIENCE: u64 = 60;

/// `Rail::tokens` lists exactly the configured tokens, once each, the same on every
/// call, and a fresh address reads a zero balance of each.
pub async fn case_tokens(h: &dyn RailHarness) {
    let rail = h.rail();
    let tokens = rail.tokens();
    assert!(!tokens.is_empty(), "case_tokens: a rail carries some token");
    let distinct: BTreeSet<Token> = tokens.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        tokens.len(),
        "case_tokens: {tokens:?} lists a token twice"
    );
    let configured: BTreeSet<Token> = h.configured_tokens().into_iter().collect();
    assert_eq!(
        distinct, configured,
        "case_tokens: tokens() must be the configured tokens"
    );
    assert_eq!(rail.tokens(), tokens, "case_tokens: tokens() is stable");
    let fresh = address(&*rail, &wallet("tokens_fresh")).await;
    for token in tokens {
        let b = rail.balance(&fresh, token).await;
        assert_eq!(
            b,
            Ok(Micros::ZERO),
            "case_tokens: a carried token ({token}) reads zero on a fresh address"
        );
    }
}

/// Addresses are stable per purpose, distinct across purposes, offline where the chain
/// allows, and `prepare_wallet` is idempotent and changes no address.
pub async fn case_addresses(h: &dyn RailHarness) {
    let rail = h.rail();
    let purposes = [
        wallet("addr_a"),
        wallet("addr_b"),
        KeyPurpose::PhoneWallet("+2250700000991".into()),
        KeyPurpose::EscrowDeal("suite_deal".into()),
        KeyPurpose::Treasury,
    ];
    let mut seen = BTreeMap::new();
    for p in &purposes {
        let a = address(&*rail, p).await;
        assert_eq!(
            address(&*rail, p).await,
            a,
            "case_addresses: {p} gave two addresses"
        );
        if let Some(other) = seen.insert(a.clone(), p.clone()) {
            panic!("case_addresses: {p} and {other} share the address {a}");
        }
    }
    let a = address(&*rail, &purposes[0]).await;
    for round in 0..2 {
        rail.prepare_wallet(&purposes[0])
            .await
            .unwrap_or_else(|e| panic!("case_addresses: prepare_wallet (call {round}): {e}"));
    }
    assert_eq!(
        address(&*rail, &purposes[0]).await,
        a,
        "case_addresses: prepare_wallet changed the address"
    );
    if h.addresses_offline() {
        h.set_readiness(ReadinessStatus::Degraded).await;
        let offline = rail.address_for(&purposes[0]).await;
        let fresh = rail.address_for(&wallet("addr_offline")).await;
        h.set_readiness(ReadinessStatus::Ready).await;
        assert_eq!(
            offline,
            Ok(a),
            "case_addresses: an address is derived offline (node unreachable)"
        );
        let fresh = fresh.unwrap_or_else(|e| {
            panic!("case_addresses: a new purpose's address is derived offline: {e}")
        });
        assert_eq!(
            address(&*rail, &wallet("addr_offline")).await,
            fresh,
            "case_addresses: the offline address is the online one"
        );
    }
}

/// A fresh address holds nothing; a deposit shows as exactly its amount, and stays so
/// as blocks pass (credited once); a neighbour stays at zero.
pub async fn case_balances(h: &dyn RailHarness) {
    let rail = h.rail();
    let holder = address(&*rail, &wallet("bal_holder")).await;
    let neighbour = address(&*rail, &wallet("bal_neighbour")).await;
    for (i, token) in rail.tokens().into_iter().enumerate() {
        assert_eq!(
            balance(&*rail, &holder, token).await,
            Micros::ZERO,
            "case_balances: a fresh address holds no {token}"
        );
        let amount = Micros(1_250_000 + 250_000 * i as u64);
        h.fund(&holder, token, amount).await;
        wait_for_balance(h, &holder, token, amount, "case_balances").await;
        h.advance(h.confirmations()).await;
        assert_eq!(
            balance(&*rail, &holder, token).await,
            amount,
            "case_balances: a deposit of {amount} {token} is credited once"
        );
        assert_eq!(
            balance(&*rail, &neighbour, token).await,
            Micros::ZERO,
            "case_balances: another address's deposit is not this one's"
        );
    }
}

/// Submit is idempotent by payment id, `status` reaches `Confirmed` with the hash
/// `submit` reported, and exactly the amount moves, once.
pub async fn case_submit(h: &dyn RailHarness) {
    let rail = h.rail();
    let token = first_token(&*rail);
    let amount = Micros(2_000_000);
    let funded = Micros(3 * amount.get());
    let (from, sender) = funded_sender(h, "submit", token, funded).await;
    let to = address(&*rail, &wallet("submit_recipient")).await;
    assert_eq!(
        rail.status("suite_never_submitted").await,
        Ok(SubmissionStatus::NotFound),
        "case_submit: an unknown payment id is NotFound"
    );
    let p = payment("suite_submit_1", &from, &sender, token, &to, amount);
    let first = submit_ok(&*rail, &p, "case_submit: first submit").await;
    assert_eq!(
        first.payment_id, p.id,
        "case_submit: the submission names the payment"
    );
    let second = submit_ok(&*rail, &p, "case_submit: repeated submit").await;
    same_hash(&first, &second, "case_submit: a repeated submit");
    let tx = settle(h, &p.id, "case_submit").await;
    if let Some(reported) = &first.tx_hash {
        assert_eq!(
            &tx, reported,
            "case_submit: confirmed under the reported hash"
        );
    }
    let after = submit_ok(&*rail, &p, "case_submit: submit after confirmation").await;
    assert_eq!(
        after.tx_hash.as_deref(),
        Some(tx.as_str()),
        "case_submit: a submit after confirmation answers the landed transaction"
    );
    h.advance(h.confirmations()).await;
    let moved = Transfers {
        credited: &[(&to, amount)],
        sender: &sender,
        funded,
        debited: amount,
        token,
    };
    moved.check(h, "case_submit").await;
    match rail.status(&p.id).await {
        Ok(SubmissionStatus::Confirmed { tx_hash, .. }) => assert_eq!(
            tx_hash, tx,
            "case_submit: a confirmed payment stays confirmed under its hash"
        ),
        other => panic!("case_submit: a confirmed payment stays Confirmed, got {other:?}"),
    }
}

/// Loses the answer at the port: the rail takes the payment, the caller gets `Unknown`.
struct LoseAnswer;

#[async_trait]
impl RailOverride for LoseAnswer {
    async fn submit(
        &self,
        inner: &dyn Rail,
        payment: &RailPayment,
    ) -> Result<Submission, RailError> {
        inner.submit(payment).await?;
        Err(RailError::Unknown {
            reason: "the answer was lost on its way back (rail suite)".into(),
        })
    }
}

/// A submission whose answer is lost answers `Unknown` and resolves by `status`;
/// submitting it again sends nothing. Once lost at the chain's transport (the harness)
/// and once at the port (a [`DelegatingRail`] whose `submit` drops the answer).
pub async fn case_lost_response(h: &dyn RailHarness) {
    let rail = h.rail();
    let token = first_token(&*rail);
    let (a1, a2) = (Micros(1_500_000), Micros(700_000));
    let funded = Micros(2 * (a1.get() + a2.get()));
    let (from, sender) = funded_sender(h, "lost", token, funded).await;
    let to1 = address(&*rail, &wallet("lost_recipient_1")).await;
    let to2 = address(&*rail, &wallet("lost_recipient_2")).await;

    h.lose_next_response().await;
    let p1 = payment("suite_lost_transport", &from, &sender, token, &to1, a1);
    match rail.submit(&p1).await {
        Err(RailError::Unknown { .. }) => {}
        other => {
            panic!("case_lost_response: a payment whose answer was lost is Unknown, got {other:?}")
        }
    }
    let lossy = DelegatingRail::new(rail.clone(), LoseAnswer);
    let p2 = payment("suite_lost_port", &from, &sender, token, &to2, a2);
    match lossy.submit(&p2).await {
        Err(RailError::Unknown { .. }) => {}
        other => panic!("case_lost_response: the port-level loss is Unknown, got {other:?}"),
    }
    for p in [&p1, &p2] {
        let tx = settle(h, &p.id, "case_lost_response").await;
        let again = submit_ok(&*rail, p, "case_lost_response: submit after the loss").await;
        assert_eq!(
            again.tx_hash.as_deref(),
            Some(tx.as_str()),
            "case_lost_response: {} is resolved, not sent again",
            p.id
        );
    }
    h.advance(h.confirmations()).await;
    let moved = Transfers {
        credited: &[(&to1, a1), (&to2, a2)],
        sender: &sender,
        funded,
        debited: Micros(a1.get() + a2.get()),
        token,
    };
    moved.check(h, "case_lost_response").await;
}

/// Inbound transfers: confirmed exactly once, never before the depth, with the
/// deposit's hash and amount; the cursor resumes without repeats (limit 1 included);
/// unwatched addresses see nothing; a scan from the start finds them again.
pub async fn case_scan(h: &dyn RailHarness) {
    let rail = h.rail();
    assert!(
        rail.monitors_inbound(),
        "case_scan: the rail under test monitors inbound"
    );
    let token = first_token(&*rail);
    let depth = h.confirmations();
    let to = address(&*rail, &wallet("scan_recipient")).await;
    let unwatched = address(&*rail, &wallet("scan_unwatched")).await;
    let watched = std::slice::from_ref(&to);
    let start = scan_ok(&*rail, "", watched, 100).await.cursor;
    let mut deposits = BTreeMap::new();
    deposits.insert(
        h.fund(&to, token, Micros(3_000_000)).await,
        Micros(3_000_000),
    );
    if depth > 1 {
        // The chain has not moved on: not at the depth yet.
        for d in scan_ok(&*rail, &start, watched, 100).await.inbound {
            assert!(
                !(deposits.contains_key(&d.tx_hash) && d.confirmed),
                "case_scan: confirmed before the depth of {depth}: {d:?}"
            );
        }
    }
    h.advance(1).await;
    deposits.insert(
        h.fund(&to, token, Micros(1_100_000)).await,
        Micros(1_100_000),
    );

    let mut confirmed: BTreeMap<(String, u32), Inbound> = BTreeMap::new();
    let mut cursor = start.clone();
    let mut rounds = 0;
    while confirmed.len() < deposits.len() {
        rounds += 1;
        assert!(
            rounds <= depth + PATIENCE,
            "case_scan: {} of {} deposits confirmed after {rounds} scans",
            confirmed.len(),
            deposits.len()
        );
        let batch = scan_ok(&*rail, &cursor, watched, 1).await;
        for d in batch.inbound {
            check_inbound(&d, &to, token, depth, &deposits);
            if d.confirmed {
                let key = (d.tx_hash.clone(), d.index);
                assert!(
                    !confirmed.contains_key(&key),
                    "case_scan: a confirmed transfer came back after its cursor: {d:?}"
                );
                confirmed.insert(key, d);
            }
        }
        cursor = batch.cursor;
        h.advance(1).await;
    }
    let credited: BTreeMap<&String, Micros> =
        confirmed.values().map(|d| (&d.tx_hash, d.amount)).collect();
    assert_eq!(
        credited,
        deposits.iter().map(|(k, v)| (k, *v)).collect(),
        "case_scan: each deposit reported once with its amount"
    );
    // Resuming from the cursor: nothing reported twice, however long it runs.
    for _ in 0..3 {
        let batch = scan_ok(&*rail, &cursor, watched, 100).await;
        for d in &batch.inbound {
            assert!(
                !confirmed.contains_key(&(d.tx_hash.clone(), d.index)),
                "case_scan: the cursor resumed with a repeat: {d:?}"
            );
        }
        cursor = batch.cursor;
        h.advance(1).await;
    }
    let other = scan_ok(&*rail, &start, std::slice::from_ref(&unwatched), 100).await;
    assert!(
        other.inbound.is_empty(),
        "case_scan: an unwatched address sees nothing: {:?}",
        other.inbound
    );
    // The position is the cursor's: from the start, the deposits are found again.
    let mut again = BTreeSet::new();
    let mut cursor = start;
    for _ in 0..PATIENCE {
        let batch = scan_ok(&*rail, &cursor, watched, 100).await;
        again.extend(
            batch
                .inbound
                .iter()
                .filter(|d| d.confirmed)
                .map(|d| d.tx_hash.clone()),
        );
        if again.len() == deposits.len() || batch.cursor == cursor {
            break;
        }
        cursor = batch.cursor;
    }
    assert_eq!(
        again,
        deposits.keys().cloned().collect(),
        "case_scan: a scan from the start cursor finds the deposits again"
    );
}

/// `READY`, `INBOUND_READY` and `DEGRADED` as the harness induces them, with reasons
/// exactly when not ready; reads work while `INBOUND_READY` and again after recovery.
pub async fn case_readiness(h: &dyn RailHarness) {
    let rail = h.rail();
    let token = first_token(&*rail);
    let holder = address(&*rail, &wallet("ready_holder")).await;
    for status in [
        ReadinessStatus::Ready,
        ReadinessStatus::InboundReady,
        ReadinessStatus::Degraded,
        ReadinessStatus::Ready,
    ] {
        h.set_readiness(status).await;
        let r = rail.readiness().await;
        assert_eq!(r.status, status, "case_readiness: {r:?}");
        assert_eq!(
            r.can_send(),
            status == ReadinessStatus::Ready,
            "case_readiness: sends are offered only when READY"
        );
        assert_eq!(
            r.reasons.is_empty(),
            status == ReadinessStatus::Ready,
            "case_readiness: reasons are given exactly when not ready: {r:?}"
        );
        if status != ReadinessStatus::Degraded {
            assert_eq!(
                rail.balance(&holder, token).await,
                Ok(Micros::ZERO),
                "case_readiness: reads work while {status:?}"
            );
        }
    }
}

// ---- helpers ----------------------------------------------------------------------------

fn wallet(name: &str) -> KeyPurpose {
    KeyPurpose::Wallet(format!("suite_{name}"))
}

fn first_token(rail: &dyn Rail) -> Token {
    *rail
        .tokens()
        .first()
        .expect("a rail under the suite carries some token")
}

async fn address(rail: &dyn Rail, p: &KeyPurpose) -> ChainAddress {
    rail.address_for(p)
        .await
        .unwrap_or_else(|e| panic!("address_for({p}): {e}"))
}

async fn balance(rail: &dyn Rail, a: &ChainAddress, token: Token) -> Micros {
    rail.balance(a, token)
        .await
        .unwrap_or_else(|e| panic!("balance({a}, {token}): {e}"))
}

async fn scan_ok(
    rail: &dyn Rail,
    cursor: &str,
    watched: &[ChainAddress],
    limit: usize,
) -> crate::ports::rail::ScanBatch {
    rail.scan(cursor, watched, limit)
        .await
        .unwrap_or_else(|e| panic!("scan({cursor:?}): {e}"))
}

async fn submit_ok(rail: &dyn Rail, p: &RailPayment, what: &str) -> Submission {
    rail.submit(p)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn same_hash(a: &Submission, b: &Submission, what: &str) {
    if let (Some(x), Some(y)) = (&a.tx_hash, &b.tx_hash) {
        assert_eq!(x, y, "{what} answers the same transaction");
    }
}

fn payment(
    id: &str,
    from: &KeyPurpose,
    from_address: &ChainAddress,
    token: Token,
    to: &ChainAddress,
    amount: Micros,
) -> RailPayment {
    RailPayment {
        id: id.into(),
        from: from.clone(),
        from_address: from_address.clone(),
        token,
        legs: vec![PaymentLeg {
            to: to.clone(),
            amount,
            role: LegRole::Recipient,
        }],
        valid_until: None,
    }
}

/// Polls until `holder` reads exactly `amount` (a deposit lands in a later block).
async fn wait_for_balance(
    h: &dyn RailHarness,
    holder: &ChainAddress,
    token: Token,
    amount: Micros,
    case: &str,
) {
    let rail = h.rail();
    for _ in 0..h.confirmations() + PATIENCE {
        if balance(&*rail, holder, token).await == amount {
            return;
        }
        h.advance(1).await;
    }
    panic!(
        "{case}: {holder} never read {amount} {token} (reads {})",
        balance(&*rail, holder, token).await
    );
}

/// A wallet holding `amount` of `token`, ready to send.
async fn funded_sender(
    h: &dyn RailHarness,
    case: &str,
    token: Token,
    amount: Micros,
) -> (KeyPurpose, ChainAddress) {
    let rail = h.rail();
    let purpose = wallet(&format!("{case}_sender"));
    let a = address(&*rail, &purpose).await;
    h.fund(&a, token, amount).await;
    wait_for_balance(h, &a, token, amount, case).await;
    (purpose, a)
}

/// Polls `status` (adding a block between polls) until the payment is final; it must be
/// `Confirmed`. Returns its hash.
async fn settle(h: &dyn RailHarness, id: &str, case: &str) -> String {
    let rail = h.rail();
    for _ in 0..h.confirmations() + PATIENCE {
        match rail.status(id).await {
            Ok(SubmissionStatus::Confirmed { tx_hash, .. }) => return tx_hash,
            Ok(SubmissionStatus::Pending { .. }) | Err(RailError::Unavailable { .. }) => {
                h.advance(1).await
            }
            other => panic!("{case}: {id} must settle as Confirmed, got {other:?}"),
        }
    }
    panic!("{case}: {id} never left Pending");
}

/// What a case's payments must have moved: each recipient exactly its amount, and the
/// sender exactly `debited` of the `funded` it held (funded with more, so a second
/// payment would show).
struct Transfers<'a> {
    credited: &'a [(&'a ChainAddress, Micros)],
    sender: &'a ChainAddress,
    funded: Micros,
    debited: Micros,
    token: Token,
}

impl Transfers<'_> {
    async fn check(&self, h: &dyn RailHarness, case: &str) {
        let rail = h.rail();
        for (to, amount) in self.credited {
            assert_eq!(
                balance(&*rail, to, self.token).await,
                *amount,
                "{case}: the recipient {to} got its amount exactly once"
            );
        }
        assert_eq!(
            balance(&*rail, self.sender, self.token).await,
            Micros(self.funded.get() - self.debited.get()),
            "{case}: the sender paid exactly once"
        );
    }
}

fn check_inbound(
    d: &Inbound,
    to: &ChainAddress,
    token: Token,
    depth: u64,
    deposits: &BTreeMap<String, Micros>,
) {
    assert_eq!(&d.to, to, "case_scan: only the watched address: {d:?}");
    assert_eq!(d.token, token, "case_scan: {d:?}");
    assert!(
        deposits.contains_key(&d.tx_hash),
        "case_scan: a transfer nobody made: {d:?}"
    );
    assert!(
        d.confirmations >= 1,
        "case_scan: a reported transfer is in a block: {d:?}"
    );
    assert_eq!(
        d.confirmed,
        d.confirmations >= depth,
        "case_scan: confirmed exactly at the depth of {depth}: {d:?}"
    );
}
