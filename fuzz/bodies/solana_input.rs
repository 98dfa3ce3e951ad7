//! Solana input: addresses from clients, account data (SPL token accounts and mints),
//! and a validator's JSON-RPC answers (envelopes, blockhashes, statuses, accounts,
//! balances, signature lists, transactions, transaction errors), then the scanner's
//! pure half over what parsed. Nothing panics; an accepted address prints back to
//! itself, and a 32-byte key prints to an address that parses back to it.
//!
//! The body of the fuzz target `solana_input` (fuzz/fuzz_targets/solana_input.rs), kept apart from
//! libFuzzer so the ordinary test run replays its seeds and corpus through the same code
//! (tests/fuzz_corpora.rs).
use serde_json::Value;
use stablecoin_core::domain::money::Token;
use stablecoin_rails::solana::{codec, json_rpc, scan};

fn results(result: Value) {
    let _ = json_rpc::context_value(result.clone());
    let _ = json_rpc::parse_latest_blockhash(result.clone());
    // The length the node was asked for: the list's own (so entries get parsed), and one
    // that does not match.
    let asked = json_rpc::context_value(result.clone())
        .ok()
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or(1);
    let _ = json_rpc::parse_signature_statuses(result.clone(), asked);
    let _ = json_rpc::parse_signature_statuses(result.clone(), asked + 1);
    if let Ok(Some(info)) = json_rpc::parse_account_info(result.clone()) {
        let _ = codec::parse_token_account(&info.data);
        let _ = codec::parse_mint(&info.data);
    }
    let _ = json_rpc::parse_balance(result.clone());
    let _ = json_rpc::parse_token_account_balance(Ok(result.clone()));
    let _ = json_rpc::parse_u64(result.clone());
    let _ = json_rpc::parse_send_transaction(result.clone());
    let _ = json_rpc::parse_signatures_for_address(result.clone());
    if let Ok(Some(details)) = json_rpc::parse_transaction(result) {
        let mints = [
            (Token::Usdc, codec::MAINNET_USDC_MINT),
            (Token::Usdt, codec::MAINNET_USDT_MINT),
        ];
        for credit in scan::credits_of(&details, &mints) {
            assert!(credit.amount > 0);
        }
        if let Some(err) = &details.err {
            let _ = codec::describe_transaction_error(err);
        }
    }
}

/// One input, as libFuzzer hands it; panics on a finding.
pub fn run(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(key) = codec::parse_address(s) {
            assert_eq!(key.to_string(), s);
            assert_eq!(
                codec::address_from_public_key(&key.to_bytes()).ok(),
                Some(key)
            );
            let _ = codec::check_wallet_address(&key);
        }
        let _ = scan::parse_cursor(s, 7);
    }
    if let Ok(key) = codec::address_from_public_key(data) {
        assert_eq!(codec::parse_address(&key.to_string()).ok(), Some(key));
    }
    if let Ok(acc) = codec::parse_token_account(data) {
        assert_eq!(acc.mint.to_bytes()[..], data[..32]);
        assert_eq!(acc.owner.to_bytes()[..], data[32..64]);
    }
    let _ = codec::parse_mint(data);
    // The scan step's cut over slot-sorted entries: a whole number of entries, never
    // more than there are.
    let mut slots: Vec<u64> = data.chunks(2).map(|c| u64::from(c[0] % 8)).collect();
    slots.sort_unstable();
    let limit = data.first().map_or(0, |b| usize::from(b % 16));
    let (taken, _) = scan::cut_at_limit(&slots, limit, 1_000);
    assert!(taken <= slots.len());

    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        let _ = codec::describe_transaction_error(&v);
        let envelope = json_rpc::parse_envelope(v.clone());
        let _ = json_rpc::parse_token_account_balance(envelope.clone());
        if let Ok(result) = envelope {
            results(result);
        }
        results(v);
    }
}
