//! Every wallet-service payload against a hand-written golden file (spec 6.1's field
//! lists): exact bytes, 6-decimal amount strings, RFC 3339 UTC timestamps, omitted (never
//! null) unknown fields, `settled_at` on `transfer.received` and `updated_at` on the status
//! events. The golden files were written from the spec, not produced by this code.

use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_webhooks::WalletPayload;

const T18: Timestamp = Timestamp::from_secs(1_795_410_258);
const TR: &str = "tr_01M83CMTGWWC1YF2WCE6WEYC08";
const WALLET: &str = "0xe5379f28ac0404106d4cdb204a987f9429f2b566";
const HASH: &str = "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn golden(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/wallet/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn check(name: &str, event: DomainEvent) {
    let body = WalletPayload::from_event(&event).to_body().unwrap();
    assert_eq!(String::from_utf8(body).unwrap(), golden(name), "{name}");
}

#[test]
fn every_wallet_event_matches_its_golden_file() {
    check(
        "transfer.received",
        DomainEvent::TransferReceived {
            transfer_id: TR.into(),
            recipient_wallet: WALLET.into(),
            amount: Micros(24_925_000),
            token: Token::Usdc,
            tx_hash: HASH.into(),
            rail: "polygon".into(),
            settled_at: T18,
        },
    );
    check(
        "transfer.settled",
        DomainEvent::TransferSettled {
            transfer_id: TR.into(),
            amount: Micros(25_000_000),
            token: Token::Usdt,
            tx_hash: HASH.into(),
            updated_at: T18,
        },
    );
    check(
        "transfer.failed.pre_broadcast",
        DomainEvent::TransferFailed {
            transfer_id: TR.into(),
            reason: "rejected before broadcast: insufficient sponsor deposit".into(),
            amount: None,
            token: None,
            tx_hash: None,
            updated_at: T18.plus_secs(1),
        },
    );
    check(
        "transfer.failed.reverted",
        DomainEvent::TransferFailed {
            transfer_id: TR.into(),
            reason: "execution reverted".into(),
            amount: Some(Micros(1)),
            token: Some(Token::Usdc),
            tx_hash: Some(
                "0xabc0000000000000000000000000000000000000000000000000000000000def".into(),
            ),
            updated_at: T18.plus_secs(1),
        },
    );
    check(
        "swap.settled",
        DomainEvent::SwapSettled {
            swap_id: "sw_01M83CMTGWWC1YF2WCE6WEYC09".into(),
            token_in: Token::Usdc,
            token_out: Token::Usdt,
            amount_in: Micros(1_000_500_000),
            tx_hash: "0x01".into(),
            updated_at: T18.plus_secs(2),
        },
    );
    check(
        "swap.failed",
        DomainEvent::SwapFailed {
            swap_id: "sw_01M83CMTGWWC1YF2WCE6WEYC09".into(),
            token_in: Token::Usdt,
            token_out: Token::Usdc,
            amount_in: Micros(3_140_000),
            reason: "quote expired".into(),
            updated_at: T18.plus_secs(2),
        },
    );
    check(
        "user.linked",
        DomainEvent::UserLinked {
            wallet_address: WALLET.into(),
            new_merchant_id: "ten_01M83CMTGWWC1YF2WCE6WEYC10".into(),
            linked_at: T18.plus_secs(3),
        },
    );
    check(
        "user.phone_changed",
        DomainEvent::UserPhoneChanged {
            wallet_address: WALLET.into(),
            changed_by_merchant_id: "ten_01M83CMTGWWC1YF2WCE6WEYC10".into(),
            changed_at: T18.plus_secs(3),
        },
    );
    check(
        "treasury.topup.credited",
        DomainEvent::TreasuryTopupCredited {
            topup_id: "tu_01M83CMTGWWC1YF2WCE6WEYC11".into(),
            amount: Micros(1_000_000_000),
            token: Token::Usdc,
            fiat_amount: "600000.00".into(),
            currency_code: "XOF".into(),
            fiat_reference: "BANK-2026-0001".into(),
            credited_at: T18.plus_secs(4),
        },
    );
}

#[test]
fn an_empty_tx_hash_is_omitted_not_empty() {
    let body = WalletPayload::from_event(&DomainEvent::TransferFailed {
        transfer_id: TR.into(),
        reason: "r".into(),
        amount: None,
        token: None,
        tx_hash: Some(String::new()),
        updated_at: T18,
    })
    .to_body()
    .unwrap();
    let s = String::from_utf8(body).unwrap();
    assert!(!s.contains("tx_hash") && !s.contains("null"), "{s}");
}
