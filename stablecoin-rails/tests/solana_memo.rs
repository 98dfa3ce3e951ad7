//! Every Solana payment send carries its payment id in an SPL Memo v2 instruction, so
//! two payments alike in sender, recipient, amount and mint, signed under one recent
//! blockhash, are two transactions: the same bytes would be one signature, which the
//! node processes once (`AlreadyProcessed` for the second) while the ledger records
//! two payments. On litesvm, whose runtime runs the real Memo v2 program
//! (`MemoSq4...`, loaded with its default SPL programs), SPL Token and ATA programs.
#![cfg(feature = "solana-test")]

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, SubmissionStatus,
};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::rpc::SolanaRpc;
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_rails::solana::testkit::{LiteSvmRpc, test_config};
use stablecoin_rails::solana::{Commitment, JsonRpcClient, Pubkey, Signature, SolanaRail};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

const SOL: u64 = 1_000_000_000;

fn key(a: &ChainAddress) -> Pubkey {
    Pubkey::from_str(&a.0).unwrap()
}

fn pay(id: &str, from: &ChainAddress, to: &ChainAddress, micros: u64) -> RailPayment {
    RailPayment {
        id: id.into(),
        from: KeyPurpose::PhoneWallet("+A".into()),
        from_address: from.clone(),
        token: Token::Usdc,
        legs: vec![PaymentLeg {
            to: to.clone(),
            amount: Micros(micros),
            role: LegRole::Recipient,
        }],
        valid_until: None,
    }
}

/// A litesvm node with both mints, a rail with a funded fee payer, a sender `+A`
/// holding 5 USDC and a provisioned recipient `+B`.
async fn setup() -> (Arc<LiteSvmRpc>, SolanaRail, ChainAddress, ChainAddress) {
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    let rail = SolanaRail::new(
        kit.clone(),
        Arc::new(LocalSigner::from_seed([59; 32])),
        test_config(),
    );
    kit.airdrop(&rail.fee_payer().await.unwrap(), 10 * SOL);
    let a = rail.provision("+A").await.unwrap().address;
    let b = rail.provision("+B").await.unwrap().address;
    kit.mint_to(&key(&a), &MAINNET_USDC_MINT, 5_000_000)
        .unwrap();
    (kit, rail, a, b)
}

async fn settle(rail: &SolanaRail, id: &str) -> SubmissionStatus {
    for _ in 0..50 {
        match rail.status(id).await.unwrap() {
            SubmissionStatus::Pending { .. } => continue,
            other => return other,
        }
    }
    panic!("payment {id} did not settle");
}

/// The recent blockhash a journaled send was signed under: the wire is
/// `short_vec(signatures) || signatures || header(3) || short_vec(keys) || keys || blockhash`
/// (every count here is below 128: one length byte).
fn blockhash_of(wire_base64: &str) -> [u8; 32] {
    use base64::Engine as _;
    let wire = base64::engine::general_purpose::STANDARD
        .decode(wire_base64)
        .unwrap();
    let sigs = usize::from(wire[0]);
    let message = &wire[1 + 64 * sigs..];
    let keys = usize::from(message[3]);
    let at = 4 + 32 * keys;
    message[at..at + 32].try_into().unwrap()
}

/// The units the Memo program consumed, from the runtime's log line
/// `Program MemoSq4... consumed N of M compute units`.
fn memo_units(logs: &[String]) -> u32 {
    let prefix = format!("Program {} consumed ", codec::MEMO_PROGRAM_ID);
    let line = logs
        .iter()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("the memo program ran: {logs:#?}"));
    line.split(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn two_alike_payments_under_one_blockhash_land_as_two_transactions() {
    let (kit, rail, a, b) = setup().await;
    // Nothing moves the chain between the two sends: one recent blockhash for both.
    kit.set_auto_advance(false);
    let before = kit
        .get_latest_blockhash(Commitment::Confirmed)
        .await
        .unwrap()
        .blockhash;
    let txs = kit.transaction_count();
    let first = rail
        .submit(&pay("op_dup_1", &a, &b, 1_000_000))
        .await
        .unwrap();
    let second = rail
        .submit(&pay("op_dup_2", &a, &b, 1_000_000))
        .await
        .expect("an alike payment is its own transaction, not AlreadyProcessed");
    let (s1, s2) = (first.tx_hash.unwrap(), second.tx_hash.unwrap());
    assert_ne!(s1, s2, "two payments, two signatures");
    let r1 = rail.send_record("op_dup_1").await.unwrap().unwrap();
    let r2 = rail.send_record("op_dup_2").await.unwrap().unwrap();
    assert_eq!(blockhash_of(&r1.wire_base64), before.to_bytes());
    assert_eq!(blockhash_of(&r2.wire_base64), before.to_bytes());
    assert_eq!(r1.info.attempts, 1);
    assert_eq!(r2.info.attempts, 1);
    assert_eq!(kit.transaction_count(), txs + 2, "two sends processed");

    kit.set_auto_advance(true);
    for (id, sig) in [("op_dup_1", &s1), ("op_dup_2", &s2)] {
        match settle(&rail, id).await {
            SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(&tx_hash, sig),
            other => panic!("{id}: {other:?}"),
        }
        // The memo program ran on chain with the payment id as its text.
        let logs = kit.logs(&Signature::from_str(sig).unwrap()).unwrap();
        let text = format!("Program log: {id}");
        let at = logs
            .iter()
            .position(|l| *l == text)
            .unwrap_or_else(|| panic!("{id}: {logs:#?}"));
        assert_eq!(
            logs[at - 1],
            format!("Program log: Memo (len {})", id.len())
        );
    }
    // Both amounts moved.
    assert_eq!(
        rail.balance(&a, Token::Usdc).await.unwrap(),
        Micros(3_000_000)
    );
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(2_000_000)
    );

    // The scanner, which reads token balance deltas and ignores other programs, sees
    // two deposits of 1 USDC to b, one per transaction.
    kit.advance_slots(3);
    let batch = rail.scan("", std::slice::from_ref(&b), 100).await.unwrap();
    let mut deposits: Vec<(String, Micros)> = batch
        .inbound
        .iter()
        .filter(|i| i.to == b)
        .map(|i| (i.tx_hash.clone(), i.amount))
        .collect();
    deposits.sort();
    let mut want = vec![(s1, Micros(1_000_000)), (s2, Micros(1_000_000))];
    want.sort();
    assert_eq!(deposits, want);
    assert!(batch.inbound.iter().all(|i| i.from == a));

    // The same over JSON-RPC, where `getTransaction` carries the memo program among the
    // account keys and the memo in the log: the same two deposits.
    let server = RpcServer::start(kit.clone()).await.unwrap();
    let client = JsonRpcClient::new(server.url(), Duration::from_secs(5)).unwrap();
    let remote = SolanaRail::new(
        Arc::new(client),
        Arc::new(LocalSigner::from_seed([59; 32])),
        test_config(),
    );
    let batch = remote
        .scan("", std::slice::from_ref(&b), 100)
        .await
        .unwrap();
    let mut over_rpc: Vec<(String, Micros)> = batch
        .inbound
        .iter()
        .filter(|i| i.to == b)
        .map(|i| (i.tx_hash.clone(), i.amount))
        .collect();
    over_rpc.sort();
    assert_eq!(over_rpc, want);
}

/// The limit the rail asks covers what the Memo program really uses, for the longest
/// memo the rail writes and the texts that cost it most per byte (multi-byte
/// characters, and control characters, which its log escapes); a longer payment id is
/// refused before anything is signed.
#[tokio::test]
async fn the_memo_fits_its_compute_units_and_its_bound() {
    let (kit, rail, a, b) = setup().await;
    let max = codec::MAX_MEMO_BYTES;
    let ids = [
        "op_01JDV4Q9ZK3N7".to_string(),
        "x".repeat(max),
        "\u{e9}".repeat(max / 2),
        "\u{1F4B8}".repeat(max / 4),
        "\u{1}".repeat(max),
        "\"\\".repeat(max / 2),
    ];
    for (n, id) in ids.iter().enumerate() {
        let sub = rail.submit(&pay(id, &a, &b, 1_000 + n as u64)).await;
        let sig = sub
            .unwrap_or_else(|e| panic!("id #{n}: {e}"))
            .tx_hash
            .unwrap();
        assert!(matches!(
            settle(&rail, id).await,
            SubmissionStatus::Confirmed { .. }
        ));
        let logs = kit.logs(&Signature::from_str(&sig).unwrap()).unwrap();
        let used = memo_units(&logs);
        let budget = rail.config().fees.memo_compute_units(id.len());
        assert!(
            used <= budget,
            "id #{n} ({} bytes): the memo used {used} units, {budget} budgeted",
            id.len()
        );
    }
    let txs = kit.transaction_count();
    let long = "y".repeat(max + 1);
    let err = rail.submit(&pay(&long, &a, &b, 1)).await.unwrap_err();
    assert_eq!(err.code(), "RAIL_REJECTED");
    assert!(err.to_string().contains("memo"), "{err}");
    assert_eq!(kit.transaction_count(), txs, "nothing was sent");
}
