//! Stored records of the checkout: businesses, payment sessions, session deposits, the
//! scan cursor; and the ledger accounts checkout money moves through.

use crate::state::SessionStatus;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::kinds::kind;
use stablecoin_core::ports::{ChainAddress, Record};
use std::collections::BTreeMap;

/// The id of the business a business key issued before businesses existed acts for: the
/// tenant's default business.
pub const DEFAULT_BUSINESS: &str = "biz_default";

/// Live (`live_sk_`: real chains, real money) or test (`test_sk_`: sessions paid only by
/// simulated deposits). A key of one mode never sees or creates the other's sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Real deposits, credited to the ledger.
    Live,
    /// Simulated deposits only; nothing reaches the ledger.
    Test,
}

impl Mode {
    /// The key of a session's deposit addresses: `checkout/<id>` for a live session,
    /// the sandbox branch `checkout/test/<id>` for a test one (issue #48: a sandbox page
    /// never shows an address of the live branch; what reaches a test address anyway is
    /// a stray deposit, `stablecoin_core::kernel::stray`). Session ids are `cs_...`, so
    /// no live id can spell a test path.
    pub fn key_purpose(self, session: &str) -> stablecoin_core::ports::KeyPurpose {
        use stablecoin_core::ports::KeyPurpose;
        match self {
            Mode::Live => KeyPurpose::CheckoutSession(session.to_string()),
            Mode::Test => KeyPurpose::CheckoutSession(format!("test/{session}")),
        }
    }

    /// `live` or `test`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Test => "test",
        }
    }
}

/// A business: the tenant's checkout identity. Its keys see only its own sessions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Business {
    /// `biz_...`.
    pub id: String,
    /// The owning tenant.
    pub tenant: TenantId,
    /// Shown to payers on the hosted payment page.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// Opted in to automatic refunds of excess and late payments to the paying address
    /// (off by default: the paying address may be an exchange's hot wallet, which would
    /// not credit the payer; see `engine::auto_refunds`).
    #[serde(default)]
    pub auto_refunds: bool,
}

impl Record for Business {
    const KIND: &'static str = kind::CHECKOUT_BUSINESS;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// One way to pay a session: a token on a network, to the session's own address there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayOption {
    /// The rail's name (`polygon`, `tron`, `solana`, ...), the `network` of the API.
    pub network: String,
    /// The token accepted there.
    pub token: Token,
    /// The session's deposit address on that network (derived from
    /// [`Mode::key_purpose`]: `checkout/<id>` live, `checkout/test/<id>` test; this
    /// session's alone).
    pub address: String,
}

/// A payment session as stored.
///
/// Amounts are micro-units. USDC and USDT count at par toward a session in `USD`;
/// otherwise the session takes the one token its currency names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// `cs_...`: the public, unguessable id (also in the payment page's URL).
    pub id: String,
    /// The numeric `id` of the spec's list item: the first 53 bits of SHA-256 of the
    /// session id (a JSON-safe integer, the same in every process).
    pub number: i64,
    /// The owning tenant.
    pub tenant: TenantId,
    /// The owning business (`biz_...`, or [`DEFAULT_BUSINESS`]).
    pub business: String,
    /// Live or test.
    pub mode: Mode,
    /// Amount due, in micro-units of `currency`.
    pub amount: Micros,
    /// `USDC`, `USDT` or `USD` (either stablecoin at par).
    pub currency: String,
    /// The ways to pay it.
    pub options: Vec<PayOption>,
    /// The business's own reference (an order number).
    pub reference: String,
    /// What is bought, shown to the payer.
    pub description: String,
    /// The payer's name, as the business gave it.
    pub customer_name: String,
    /// The payer's e-mail, as the business gave it.
    pub customer_email: String,
    /// The business's own customer id (the `customer_id` of the deposit webhooks; the
    /// session id when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_id: Option<String>,
    /// The business's key/value metadata, echoed in `payment.*` webhooks.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// pending, paid, expired or failed.
    pub status: SessionStatus,
    /// Why it failed (`cancelled`, `underpaid: ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Until when a payment counts; later deposits are recorded as late.
    pub expires_at: Timestamp,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// When the confirmed deposits first covered the amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_at: Option<Timestamp>,
    /// The network and transaction of the deposit that completed the payment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_network: Option<String>,
    /// See `paid_network`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_tx_hash: Option<String>,
    /// Confirmed, credited deposits toward the amount (at most `amount`), by token.
    #[serde(default)]
    pub applied: BTreeMap<Token, Micros>,
    /// Every confirmed, credited micro-unit, whatever it counted for.
    #[serde(default)]
    pub received: Micros,
    /// Detected deposits not yet confirmed.
    #[serde(default)]
    pub pending: Micros,
    /// Confirmed money beyond the amount while the session was open or paid.
    #[serde(default)]
    pub excess: Micros,
    /// Confirmed money that arrived after expiry, or after the session failed.
    #[serde(default)]
    pub late: Micros,
    /// Money the business owes back to payers: `excess + late`, plus the applied part
    /// of a session that failed or expired unpaid.
    #[serde(default)]
    pub refundable: Micros,
    /// Deposits recorded (detected or confirmed).
    #[serde(default)]
    pub deposit_count: u32,
    /// What refunds not returned (awaiting a claim, sending, sent, completed) reserve,
    /// by token and source: the refund rule (`crate::refund_state`) subtracts it, and a
    /// refund changes it in the commit that creates, fails or expires the refund, under
    /// the session's version, so two refunds cannot both take the same money.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub refunded: BTreeMap<Token, crate::refund_state::RefundSources>,
    /// When the expiry worker next looks at it; `None` once nothing is left to decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<Timestamp>,
    /// The payment link (`plink_...`) a payer opened it from, if any (issue #50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_link: Option<String>,
    /// The Solana Pay `reference` of its Solana options
    /// ([`crate::wallet_links::solana_reference`]), when it has one; also a unique key
    /// ([`Session::solana_reference_key`]), so a transaction carrying it finds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solana_reference: Option<String>,
}

impl Session {
    /// The store subkind that partitions sessions by business and mode, so a list runs
    /// on one index range per (business, mode).
    pub fn scope(business: &str, mode: Mode) -> String {
        format!("{business}:{}", mode.as_str())
    }

    /// The unique key of a deposit address on a network (`addr:{network}:{address}`,
    /// the one address namespace of every product): one session per address, and no
    /// session on another product's address.
    pub fn address_key(network: &str, address: &str) -> String {
        stablecoin_core::kernel::inbound::address_key(network, address)
    }

    /// The applied amount of all tokens. Never above `amount`: a deposit applies at most
    /// what is still missing, and crediting checks the new total
    /// ([`crate::error::checked_sum`]), so the sum (taken in `u128`) always fits.
    pub fn applied_total(&self) -> Micros {
        let total: u128 = self.applied.values().map(|m| u128::from(m.get())).sum();
        Micros::new(u64::try_from(total).unwrap_or(u64::MAX))
    }

    /// The unique key of a Solana Pay reference: one session per reference.
    pub fn solana_reference_key(reference: &str) -> String {
        stablecoin_core::ports::kinds::key(
            stablecoin_core::ports::kinds::namespace::SOLANA_PAY_REFERENCE,
            reference,
        )
    }

    /// Whether `token` counts toward this session.
    pub fn accepts(&self, token: Token) -> bool {
        self.options.iter().any(|o| o.token == token)
    }
}

impl Record for Session {
    const KIND: &'static str = kind::PAYMENT_SESSION;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.as_str().into())
    }
    fn subkind(&self) -> Option<String> {
        Some(Session::scope(&self.business, self.mode))
    }
    fn due_at(&self) -> Option<Timestamp> {
        self.due_at
    }
    fn unique_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .options
            .iter()
            .map(|o| Session::address_key(&o.network, &o.address))
            .collect();
        keys.extend(
            self.solana_reference
                .as_deref()
                .map(Session::solana_reference_key),
        );
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Where a session deposit stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DepositState {
    /// Seen, not confirmed: counted as pending, credits nothing.
    Detected,
    /// Reported confirmed but not safe to credit: still credits nothing.
    ConfirmedUnsafe,
    /// Confirmed and safe to credit: credited once, in the commit that set this state.
    Credited,
}

impl DepositState {
    /// The stored status word.
    pub fn as_str(self) -> &'static str {
        match self {
            DepositState::Detected => "detected",
            DepositState::ConfirmedUnsafe => "confirmed_unsafe",
            DepositState::Credited => "credited",
        }
    }
}

/// One deposit into a session's address, recorded once per `deposit_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDeposit {
    /// The integer idempotency key of the deposit webhooks.
    pub deposit_id: u64,
    /// The session paid.
    pub session: String,
    /// Owner of the session.
    pub tenant: TenantId,
    /// The network it arrived on.
    pub network: String,
    /// The session address that received it.
    pub address: String,
    /// Which stablecoin.
    pub token: Token,
    /// Micro-units.
    pub amount: Micros,
    /// The real transaction hash, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// `pending_<unix seconds>_<address prefix>`: the `tx_hash` of the webhooks while the
    /// real hash is unknown.
    pub placeholder: String,
    /// Confirmations last reported.
    pub confirmations: u64,
    /// Where it stands.
    pub state: DepositState,
    /// The part that paid the amount (set when credited).
    #[serde(default)]
    pub applied: Micros,
    /// The part beyond the amount (set when credited, not late).
    #[serde(default)]
    pub excess: Micros,
    /// True when it arrived after expiry or after the session ended.
    #[serde(default)]
    pub late: bool,
    /// Who saw it: `checkout-scanner-<network>`, `simulator`, or the external scanner's
    /// name.
    pub detected_by: String,
    /// When first seen (links detected, confirmed and hash_resolved).
    pub detected_at: Timestamp,
    /// When credited (or reported confirmed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<Timestamp>,
    /// Set when a phone wallet of this service paid it on the ledger
    /// (`engine::phone_pay`): the money came from that wallet's custody account, not
    /// from a chain, and its sweep moves the tokens from the wallet's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_wallet: Option<WalletPayer>,
}

/// The phone wallet a deposit came from (see [`SessionDeposit::from_wallet`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletPayer {
    /// The paying wallet (`wal_...`).
    pub wallet: String,
    /// Its address on the deposit's network, where the tokens are until swept.
    pub address: String,
    /// The tenant the payment was made under (the session's when it operates the
    /// wallet, else the wallet's primary member).
    pub originator: TenantId,
    /// The one-time code's challenge that consented to it.
    pub challenge: String,
}

impl SessionDeposit {
    /// The record id: the decimal `deposit_id`.
    pub fn record_id(deposit_id: u64) -> String {
        deposit_id.to_string()
    }

    /// The `tx_hash` the webhooks carry: the real one once known, else the placeholder.
    pub fn wire_hash(&self) -> &str {
        self.tx_hash.as_deref().unwrap_or(&self.placeholder)
    }
}

impl Record for SessionDeposit {
    const KIND: &'static str = kind::CHECKOUT_DEPOSIT;
    fn id(&self) -> String {
        SessionDeposit::record_id(self.deposit_id)
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.detected_at
    }
    fn status(&self) -> Option<String> {
        Some(self.state.as_str().into())
    }
    /// Listed per session.
    fn subkind(&self) -> Option<String> {
        Some(self.session.clone())
    }
}

/// The ledger accounts checkout money moves through (live sessions only; test sessions
/// never touch the ledger).
///
/// - A credited deposit's applied part goes from `chain_in:<network>:<token>` (or, paid
///   from a phone wallet on the ledger, from that wallet's custody account) to the
///   session's **held** account; its excess or late part goes to the business's
///   **refundable** account.
/// - When the session is paid, its held balance moves to the tenant's **treasury**.
/// - When it fails or expires with something applied, its held balance moves to
///   **refundable**: the business refunds the payer from there.
pub mod accounts {
    use stablecoin_core::domain::ids::TenantId;
    use stablecoin_core::domain::money::Token;
    use stablecoin_core::ports::LedgerAccount;

    /// Money toward one session, until it is paid or ends unpaid.
    pub fn held(session: &str, token: Token) -> LedgerAccount {
        LedgerAccount {
            id: format!("checkout_held:{session}:{token}"),
            allow_negative: false,
        }
    }

    /// Money a business owes back to payers (over, late and unpaid payments).
    pub fn refundable(tenant: &TenantId, business: &str, token: Token) -> LedgerAccount {
        LedgerAccount {
            id: format!("checkout_refundable:{tenant}:{business}:{token}"),
            allow_negative: false,
        }
    }

    /// Where deposits on `network` come from (the core engine's account).
    pub fn chain_in(network: &str, token: Token) -> LedgerAccount {
        stablecoin_core::kernel::accounts::chain_in(network, token)
    }

    /// A phone wallet's custody balance on `rail` (the core engine's account), where a
    /// payment from that wallet on the ledger comes from instead of `chain_in`.
    pub fn wallet_on(
        wallet: &stablecoin_core::domain::ids::WalletId,
        rail: stablecoin_core::ports::RailId,
        token: Token,
    ) -> LedgerAccount {
        stablecoin_core::kernel::accounts::wallet_on(wallet, rail, token)
    }

    /// The tenant's treasury (the core engine's account).
    pub fn treasury(tenant: &TenantId, token: Token) -> LedgerAccount {
        stablecoin_core::kernel::accounts::treasury(tenant, token)
    }
}

pub use stablecoin_core::domain::payments_events::integer_id;

/// The placeholder hash of a deposit whose real hash is not known yet (spec 6.2 rule 4).
pub fn placeholder_hash(detected_at: Timestamp, address: &ChainAddress) -> String {
    stablecoin_core::domain::payments_events::placeholder_hash(detected_at, &address.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholder_has_the_spec_form() {
        let p = placeholder_hash(
            Timestamp::from_secs(1_700_000_000),
            &ChainAddress("0x1234567890abcdef".into()),
        );
        assert_eq!(p, "pending_1700000000_0x12345678");
    }
}
