//! The engine's Solana wallets on the real SPL Token and ATA programs (litesvm): what
//! `/v1/solana/users/provision`, `/balance` and `/transfers/send` run. Provisioning
//! finalizes both ATAs, receipt monitoring credits an outside deposit once, a send
//! settles on chain with the service as fee payer, opens a new recipient's ATA and says
//! so, and the scanner does not count the wallets' own transfer as a deposit.
#![cfg(feature = "solana-test")]

use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{Engine, EngineConfig, Ports, SendRequest, accounts};
use stablecoin_core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin_core::ports::{ChainAddress, Ledger, Rail, RailId};
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::testkit::{LiteSvmRpc, test_config};
use stablecoin_rails::solana::{Pubkey, SolanaConfig, SolanaRail};
use std::str::FromStr;
use std::sync::Arc;

const SOL: u64 = 1_000_000_000;

struct H {
    engine: Engine,
    store: Arc<MemoryStore>,
    rpc: Arc<LiteSvmRpc>,
    rail: Arc<SolanaRail>,
    tenant: TenantId,
}

fn phone(s: &str) -> Phone {
    Phone::parse(s).unwrap()
}

fn m(s: &str) -> Micros {
    Micros::parse_decimal(s).unwrap()
}

fn key(a: &ChainAddress) -> Pubkey {
    Pubkey::from_str(&a.0).unwrap()
}

fn ata(owner: &Pubkey, token: Token) -> Pubkey {
    let mint = match token {
        Token::Usdc => MAINNET_USDC_MINT,
        Token::Usdt => MAINNET_USDT_MINT,
    };
    codec::associated_token_address(owner, &mint, &codec::TOKEN_PROGRAM_ID)
}

async fn harness(scan_enabled: bool) -> H {
    let signer = Arc::new(LocalSigner::from_seed([23; 32]));
    let rpc = Arc::new(LiteSvmRpc::new());
    rpc.create_mint(&MAINNET_USDC_MINT, 6);
    rpc.create_mint(&MAINNET_USDT_MINT, 6);
    let rail = Arc::new(SolanaRail::new(
        rpc.clone(),
        signer.clone(),
        SolanaConfig {
            scan_enabled,
            ..test_config()
        },
    ));
    rpc.airdrop(&rail.fee_payer().await.unwrap(), 10 * SOL);
    // Wallets are phone-keyed on the EVM rail first (simulated here: not under test).
    let evm = Arc::new(SimRail::new(
        SimProfile::Evm(137),
        signer.clone(),
        SimConfig::for_profile(SimProfile::Evm(137)),
    ));
    let store = Arc::new(MemoryStore::new());
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer,
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600))),
        entropy: Arc::new(SeededEntropy::new(7)),
    };
    let engine = Engine::new(
        ports,
        vec![evm as Arc<dyn Rail>, rail.clone()],
        EngineConfig {
            poll_interval_ms: 0,
            unknown_grace_ms: 60_000,
            ..Default::default()
        },
    );
    let tenant = engine.create_tenant("Acme").await.unwrap().id;
    H {
        engine,
        store,
        rpc,
        rail,
        tenant,
    }
}

impl H {
    async fn ledger(&self, wallet: &str, token: Token) -> i128 {
        let id = stablecoin_core::domain::ids::WalletId(wallet.to_string());
        self.store
            .balance(&accounts::wallet_on(&id, RailId::Solana, token).id)
            .await
            .map(|b| b.available())
            .unwrap_or(0)
    }

    /// Worker ticks until `done` holds, the cluster producing a slot between two ticks
    /// (the emulation advances only when told: a real cluster makes one every ~400 ms).
    async fn tick_until<F: AsyncFn(&H) -> bool>(&self, what: &str, done: F) {
        for _ in 0..60 {
            self.rpc.advance_slots(1);
            let r = self.engine.tick().await;
            assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
            if done(self).await {
                return;
            }
        }
        panic!("{what} did not happen");
    }
}

#[tokio::test]
async fn solana_wallets_provision_receive_and_send_on_real_spl_programs() {
    let h = harness(true).await;
    let a = phone("+2250700000001");
    let b = phone("+2250700000002");

    // Provisioning returns once both ATAs exist at `finalized`, rent paid by the service.
    let p = h
        .engine
        .provision_on(&h.tenant, &a, RailId::Solana)
        .await
        .unwrap();
    assert_eq!(p.outcome, "PROVISIONED");
    assert_eq!(p.rail, "solana");
    let a_key = key(&ChainAddress(p.address.clone()));
    for t in Token::ALL {
        assert_eq!(h.rpc.token_amount(&ata(&a_key, t)), Some(0), "{t} ATA");
    }
    assert_eq!(h.rpc.lamports(&a_key), 0, "the customer holds no SOL");
    // Again: the same address, nothing created (no new transaction).
    let txs = h.rpc.transaction_count();
    let again = h
        .engine
        .provision_on(&h.tenant, &a, RailId::Solana)
        .await
        .unwrap();
    assert_eq!(again.outcome, "ALREADY_EXISTS");
    assert_eq!(again.address, p.address);
    assert_eq!(h.rpc.transaction_count(), txs);

    // 25 USDC arrive from outside: credited once monitoring sees them finalized.
    h.rpc
        .mint_to(&a_key, &MAINNET_USDC_MINT, 25_000_000)
        .unwrap();
    h.tick_until("the deposit credit", async |h: &H| {
        h.ledger(&p.wallet_id, Token::Usdc).await == 25_000_000
    })
    .await;
    let (_, _, live) = h
        .engine
        .balances_on(&h.tenant, &a, RailId::Solana, &[Token::Usdc, Token::Usdt])
        .await
        .unwrap();
    assert_eq!(live, vec![m("25"), m("0")]);

    // A send to a phone never seen: a new wallet, its address derived offline; the
    // payment opens its USDC ATA (service pays the rent) and reports it.
    let fee_payer = h.rail.fee_payer().await.unwrap();
    let sol_before = h.rpc.lamports(&fee_payer);
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:10".into(),
    };
    let op = h
        .engine
        .send_on(&h.tenant, RailId::Solana, &req, Some("k1"))
        .await
        .unwrap();
    assert_eq!(op.status, "QUEUED");
    assert_eq!(op.service_fee.as_deref(), Some("0.000000"));
    assert_eq!(
        h.ledger(&p.wallet_id, Token::Usdc).await,
        15_000_000,
        "held"
    );
    h.tick_until("the send to settle", async |h: &H| {
        h.engine.operation(&h.tenant, &op.id).await.unwrap().status
            == stablecoin_core::domain::state::OpStatus::Settled
    })
    .await;
    let done = h.engine.operation(&h.tenant, &op.id).await.unwrap();
    assert!(done.created_recipient_account);
    assert_eq!(done.view().created_recipient_ata, Some(true));
    let b_wallet = done.to_wallet.clone().unwrap();
    let b_key = key(h
        .engine
        .wallet(&b_wallet)
        .await
        .unwrap()
        .address("solana")
        .unwrap());
    assert_eq!(
        h.rpc.token_amount(&ata(&b_key, Token::Usdc)),
        Some(10_000_000)
    );
    assert_eq!(h.rpc.token_amount(&ata(&b_key, Token::Usdt)), None);
    assert_eq!(
        h.rpc.token_amount(&ata(&a_key, Token::Usdc)),
        Some(15_000_000)
    );
    assert_eq!(h.rpc.lamports(&a_key), 0, "the sender needed no SOL");
    assert!(
        h.rpc.lamports(&fee_payer) < sol_before,
        "fee payer paid fee and rent"
    );
    assert_eq!(h.ledger(&b_wallet.0, Token::Usdc).await, 10_000_000);

    // The wallets' own transfer is not a deposit: more scans credit nothing twice.
    for _ in 0..5 {
        h.rpc.advance_slots(1);
        let r = h.engine.tick().await;
        assert!(r.errors.is_empty(), "{:?}", r.errors);
    }
    assert_eq!(h.ledger(&b_wallet.0, Token::Usdc).await, 10_000_000);
    assert_eq!(h.ledger(&p.wallet_id, Token::Usdc).await, 15_000_000);

    // Provisioning B completes its wallet (the USDT ATA the send did not open).
    let pb = h
        .engine
        .provision_on(&h.tenant, &b, RailId::Solana)
        .await
        .unwrap();
    assert_eq!(pb.address, b_key.to_string());
    assert_eq!(h.rpc.token_amount(&ata(&b_key, Token::Usdt)), Some(0));

    // To a recipient that holds the mint: no account opened, reported false.
    let req = SendRequest {
        quote_id: "DIRECT_CRYPTO:USDC:5".into(),
        ..req
    };
    let op = h
        .engine
        .send_on(&h.tenant, RailId::Solana, &req, Some("k2"))
        .await
        .unwrap();
    h.tick_until("the second send to settle", async |h: &H| {
        h.engine.operation(&h.tenant, &op.id).await.unwrap().status
            == stablecoin_core::domain::state::OpStatus::Settled
    })
    .await;
    let done = h.engine.operation(&h.tenant, &op.id).await.unwrap();
    assert_eq!(done.view().created_recipient_ata, Some(false));
    assert_eq!(
        h.rpc.token_amount(&ata(&b_key, Token::Usdc)),
        Some(15_000_000)
    );
    assert_eq!(h.ledger(&b_wallet.0, Token::Usdc).await, 15_000_000);
}

/// Monitoring switched off (no `SOLANA_SCAN_ENABLED`): the scanner skips the rail rather
/// than report an error every tick, and nothing is credited.
#[tokio::test]
async fn the_scanner_skips_solana_while_monitoring_is_off() {
    let h = harness(false).await;
    let a = phone("+2250700000001");
    let p = h
        .engine
        .provision_on(&h.tenant, &a, RailId::Solana)
        .await
        .unwrap();
    let a_key = key(&ChainAddress(p.address.clone()));
    h.rpc
        .mint_to(&a_key, &MAINNET_USDC_MINT, 1_000_000)
        .unwrap();
    for _ in 0..5 {
        h.rpc.advance_slots(1);
        let r = h.engine.tick().await;
        assert!(r.errors.is_empty(), "{:?}", r.errors);
    }
    assert_eq!(h.ledger(&p.wallet_id, Token::Usdc).await, 0);
    assert_eq!(h.rpc.calls("getSignaturesForAddress"), 0);
}
