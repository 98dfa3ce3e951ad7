//! Every record kind and unique-key namespace of the workspace, in one place.
//!
//! The store is generic: a record is `(kind, id)` plus indexed columns, and a unique key is
//! a string any record may claim. Two record types sharing a kind, or two key families
//! sharing a namespace, would read each other's rows or block each other's writes without
//! an error. So every crate that stores records (core, escrow, webhooks, the server) takes
//! its kinds and namespaces from here, and the tests below check that they are distinct.
//!
//! The strings are persisted: changing one orphans every stored row of it. Add, never
//! rename.

/// Record kinds (`StoredRecord::kind`), one per [`Record`](crate::ports::Record) type.
pub mod kind {
    /// Core: a tenant operation (funding, transfer, withdrawal, swap, payout, ...).
    pub const OPERATION: &str = "operation";
    /// Kernel: a rail's deposit-scan position, one per product in one record
    /// (`kernel::inbound::ScanPositions`).
    pub const SCAN_CURSOR: &str = "scan_cursor";
    /// Core: an observed inbound transfer, credited once.
    pub const DEPOSIT: &str = "deposit";
    /// Core: a tenant (fintech).
    pub const TENANT: &str = "tenant";
    /// Core: a tenant's API key (hash only).
    pub const API_KEY: &str = "api_key";
    /// Core: a rail's durable record of a broadcast, for recovery after a crash.
    pub const RAIL_JOURNAL: &str = "rail_journal";
    /// Core: an FX quote.
    pub const QUOTE: &str = "quote";
    /// Core: a phone-keyed wallet.
    pub const WALLET: &str = "wallet";
    /// Core: a one-time-code challenge (link, phone change).
    pub const CHALLENGE: &str = "challenge";
    /// Core: the attempt and issue counters that lock one-time codes out.
    pub const OTP_GUARD: &str = "otp_guard";
    /// Core: a tenant's count of rent-paying wallet preparations (`domain::limits`).
    pub const TENANT_QUOTA: &str = "tenant_quota";
    /// Core: one SMS of the durable outbox and its delivery record (`engine::sms`).
    pub const SMS: &str = "sms";
    /// Escrow: a deal.
    pub const ESCROW: &str = "escrow";
    /// Escrow: one entry of a deal's history.
    pub const ESCROW_EVENT: &str = "escrow_event";
    /// Escrow: a deposit into a deal address.
    pub const ESCROW_DEPOSIT: &str = "escrow_deposit";
    /// Escrow: a payout out of a deal.
    pub const ESCROW_PAYOUT: &str = "escrow_payout";
    /// Retired: escrow's own TRON scan position, moved into [`SCAN_CURSOR`] by the store's
    /// migration `one_inbound_router`. Kept so the name is never reused.
    pub const ESCROW_SCAN_CURSOR: &str = "escrow_scan_cursor";
    /// Webhooks: a tenant's endpoint.
    pub const WEBHOOK_ENDPOINT: &str = "webhook_endpoint";
    /// Webhooks: one event's delivery to one endpoint.
    pub const WEBHOOK_DELIVERY: &str = "webhook_delivery";
    /// Webhooks: an event as sent, for listing and replay.
    pub const WEBHOOK_EVENT: &str = "webhook_event";
    /// Webhooks: the outbox fan-out position.
    pub const WEBHOOK_CURSOR: &str = "webhook_cursor";
    /// Server: deployment facts (the readiness probe row, the seed fingerprint).
    pub const SERVER_META: &str = "server_meta";
    /// Checkout: a payment session.
    pub const PAYMENT_SESSION: &str = "payment_session";
    /// Checkout: a business, the tenant's checkout identity.
    pub const CHECKOUT_BUSINESS: &str = "checkout_business";
    /// Checkout: a deposit into a session's address, recorded once per `deposit_id`.
    pub const CHECKOUT_DEPOSIT: &str = "checkout_deposit";
    /// Retired: checkout's own scan position per rail, moved into [`SCAN_CURSOR`] by
    /// the store's migration `one_inbound_router`. Kept so the name is never reused.
    pub const CHECKOUT_SCAN_CURSOR: &str = "checkout_scan_cursor";
    /// Checkout: a deposit's move from its session address to the treasury.
    pub const CHECKOUT_SWEEP: &str = "checkout_sweep";
    /// Checkout: a refund of a session (to an address, or by a claim link).
    pub const CHECKOUT_REFUND: &str = "checkout_refund";
    /// Core: a tenant's top-up (money in: a quote, then its staff confirmation).
    pub const TOPUP: &str = "topup";
    /// Core: a service staff account (hash of its secret only, `engine::staff`).
    pub const STAFF_ACCOUNT: &str = "staff_account";
    /// Core: one entry of the staff audit log: who did what, to what, why.
    pub const STAFF_AUDIT: &str = "staff_audit";
    /// Escrow: a deal's entry in the cross-tenant staff queue (disputed or recoverable).
    pub const ESCROW_STAFF_QUEUE: &str = "escrow_staff_queue";
    /// Core: a web console's sign-in session (`engine::console_sessions`).
    pub const CONSOLE_SESSION: &str = "console_session";
    /// Core: a staff treasury credit (the CLI's `treasury credit`), proposed or made.
    pub const TREASURY_CREDIT: &str = "treasury_credit";

    /// A payout provider's results for one payout, received at its authenticated
    /// callback URL (`stablecoin_providers::mpesa::MpesaResults`): shared by every node,
    /// purged by retention.
    pub const PAYOUT_RESULT: &str = "payout_result";

    /// Kernel: the lease of one singleton job (`kernel::lease`): which node runs it, and
    /// until when. Id: the job's name.
    pub const LEASE: &str = "lease";

    /// Kernel: a sandbox deposit address that no product record holds (a simulated
    /// escrow's), reserved so the scanner owns it (`kernel::stray`). Id: `<rail>:<address>`.
    pub const SANDBOX_ADDRESS: &str = "sandbox_address";
    /// Kernel: a real deposit that reached a sandbox address, owed back (`kernel::stray`).
    pub const STRAY_DEPOSIT: &str = "stray_deposit";

    /// Checkout: a business's reusable payment link (issue #50), opening one session per
    /// payer.
    pub const PAYMENT_LINK: &str = "payment_link";
    /// Checkout: a session opened from a payment link, listed per link (subkind: the
    /// link's id; id: the session's), so the link counts its sessions and payments.
    pub const PAYMENT_LINK_SESSION: &str = "payment_link_session";

    /// Wallets: a tenant's spending policy (issue #51, `domain::policy`).
    pub const POLICY: &str = "policy";
    /// Wallets: one policy's window usage, updated with each admitted operation's holds.
    /// Id: the policy's.
    pub const POLICY_USAGE: &str = "policy_usage";
    /// Wallets: a request above a policy's approval threshold, waiting for a second
    /// approver (`apr_...`).
    pub const POLICY_APPROVAL: &str = "policy_approval";
    /// Wallets: a tenant's address-book entry (`adb_...`): a destination and its label.
    pub const ADDRESS_BOOK_ENTRY: &str = "address_book_entry";
    /// Wallets: when a tenant's requests first named a destination, for the policies'
    /// cooling-off. Id: `<tenant>:<destination key>`.
    pub const DESTINATION_SEEN: &str = "destination_seen";
    /// Wallets: a tenant's sponsorship budget on one rail and what its sponsored payments
    /// consumed this UTC day and month (issue #51 item 4). Id: `<tenant>:<rail>`.
    pub const SPONSOR_BUDGET: &str = "sponsor_budget";
    /// Wallets: the tenants staff gave a sponsorship budget, one record (id `all`), so
    /// `/metrics` finds every budget without a cross-tenant list.
    pub const SPONSORED_TENANTS: &str = "sponsored_tenants";

    /// Every kind above.
    pub const ALL: &[&str] = &[
        OPERATION,
        SCAN_CURSOR,
        DEPOSIT,
        TENANT,
        API_KEY,
        RAIL_JOURNAL,
        QUOTE,
        WALLET,
        CHALLENGE,
        OTP_GUARD,
        TENANT_QUOTA,
        SMS,
        ESCROW,
        ESCROW_EVENT,
        ESCROW_DEPOSIT,
        ESCROW_PAYOUT,
        ESCROW_SCAN_CURSOR,
        WEBHOOK_ENDPOINT,
        WEBHOOK_DELIVERY,
        WEBHOOK_EVENT,
        WEBHOOK_CURSOR,
        SERVER_META,
        PAYMENT_SESSION,
        CHECKOUT_BUSINESS,
        CHECKOUT_DEPOSIT,
        CHECKOUT_SCAN_CURSOR,
        CHECKOUT_SWEEP,
        CHECKOUT_REFUND,
        TOPUP,
        STAFF_ACCOUNT,
        STAFF_AUDIT,
        ESCROW_STAFF_QUEUE,
        CONSOLE_SESSION,
        TREASURY_CREDIT,
        PAYOUT_RESULT,
        LEASE,
        SANDBOX_ADDRESS,
        STRAY_DEPOSIT,
        PAYMENT_LINK,
        PAYMENT_LINK_SESSION,
        POLICY,
        POLICY_USAGE,
        POLICY_APPROVAL,
        ADDRESS_BOOK_ENTRY,
        DESTINATION_SEEN,
        SPONSOR_BUDGET,
        SPONSORED_TENANTS,
    ];
}

/// Unique-key namespaces: a key is `<namespace>:<rest>` (see [`key`]).
pub mod namespace {
    /// A wallet's phone number: one wallet per phone.
    pub const WALLET_PHONE: &str = "wallet_phone";
    /// A deposit address on one rail, of any product (a wallet, an escrow deal, a checkout
    /// session): `addr:{rail}:{address}`, made by `kernel::inbound::address_key`. One
    /// namespace, so the store refuses an address two products claim.
    pub const ADDRESS: &str = "addr";
    /// Retired: wallet addresses before the kernel's one namespace ([`ADDRESS`]; the store's
    /// migration `one_inbound_router` moved them). Kept so the name is never reused.
    pub const WALLET_ADDR: &str = "wallet_addr";
    /// The open one-time-code challenge of (purpose, tenant, wallet): at most one.
    pub const OTP_OPEN: &str = "otp_open";
    /// An API key's hash: finds the key by the secret presented.
    pub const API_KEY: &str = "apikey";
    /// An operation's transaction hash on one rail: one operation per transaction.
    pub const OPERATION_TX: &str = "optx";
    /// Retired: escrow deal addresses before [`ADDRESS`] (migration
    /// `one_inbound_router`). Never reuse.
    pub const ESCROW_ADDR: &str = "escrow_addr";
    /// An SMS gateway's message id: finds the delivery record its reports name.
    pub const SMS_GATEWAY_ID: &str = "sms_gateway_id";
    /// Retired: checkout session addresses before [`ADDRESS`] (migration
    /// `one_inbound_router`). Never reuse.
    pub const CHECKOUT_ADDR: &str = "checkout_addr";
    /// A fiat receipt's reference: it confirms at most one top-up.
    pub const TOPUP_REFERENCE: &str = "topup_ref";
    /// A staff account's secret hash: finds the account by the secret presented.
    pub const STAFF_SECRET: &str = "staff_secret";
    /// A staff account's name (lower-cased): one account per name.
    pub const STAFF_NAME: &str = "staff_name";
    /// A checkout session's Solana Pay `reference` (issue #50): finds the session a
    /// transaction carrying that key pays.
    pub const SOLANA_PAY_REFERENCE: &str = "solpay_ref";
    /// A tenant's address-book destination: `<tenant>:<destination key>`, one entry each.
    pub const ADDRESS_BOOK: &str = "address_book";

    /// Every namespace above.
    pub const ALL: &[&str] = &[
        WALLET_PHONE,
        ADDRESS,
        WALLET_ADDR,
        OTP_OPEN,
        API_KEY,
        OPERATION_TX,
        ESCROW_ADDR,
        SMS_GATEWAY_ID,
        CHECKOUT_ADDR,
        TOPUP_REFERENCE,
        STAFF_SECRET,
        STAFF_NAME,
        SOLANA_PAY_REFERENCE,
        ADDRESS_BOOK,
    ];
}

/// The unique key `<namespace>:<rest>`; `rest` may itself contain `:`, the namespace
/// never does, so two namespaces cannot produce the same key.
pub fn key(namespace: &str, rest: impl std::fmt::Display) -> String {
    debug_assert!(
        namespace::ALL.contains(&namespace),
        "unregistered namespace {namespace}"
    );
    format!("{namespace}:{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn assert_distinct(what: &str, all: &[&str]) {
        let set: BTreeSet<_> = all.iter().collect();
        assert_eq!(
            set.len(),
            all.len(),
            "{what}: a value is listed twice: {all:?}"
        );
        for s in all {
            assert!(
                !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{what}: {s:?} must be lower-case ASCII and underscores (no `:`)"
            );
        }
    }

    #[test]
    fn record_kinds_are_distinct() {
        assert_distinct("record kinds", kind::ALL);
    }

    #[test]
    fn key_namespaces_are_distinct_and_separate_from_each_other() {
        assert_distinct("key namespaces", namespace::ALL);
        // No namespace is a prefix of another's keys: the `:` after it forbids that.
        for a in namespace::ALL {
            for b in namespace::ALL {
                if a != b {
                    assert!(!key(a, "x").starts_with(&format!("{b}:")), "{a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn the_lists_name_every_constant() {
        // A constant added above but left out of `ALL` escapes the distinctness check:
        // count the `pub const` lines of this file against the lists.
        let src = include_str!("kinds.rs");
        let (kinds_src, rest) = src.split_once("pub mod namespace").unwrap();
        let count = |s: &str| s.matches("    pub const ").count() - 1; // minus `ALL`
        assert_eq!(
            count(kinds_src),
            kind::ALL.len(),
            "kind::ALL is missing a kind"
        );
        let ns_src = rest.split_once("pub fn key").unwrap().0;
        assert_eq!(
            count(ns_src),
            namespace::ALL.len(),
            "namespace::ALL misses one"
        );
    }
}
