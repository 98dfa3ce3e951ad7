//! Embed the engine in your own service: in-memory adapters, the simulated EVM chain,
//! one tenant, two customers, a funding and a P2P transfer with fees.
//!
//! Run: `cargo run --example embed`

use stablecoin::core::domain::fees::TenantPricing;
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::engine::{Engine, EngineConfig, FundRequest, Ports, SendRequest};
use stablecoin::core::memory::{
    FixedRates, LocalSigner, MemoryNotifier, MemoryPayouts, MemoryStore, OsEntropy, SystemClock,
};
use stablecoin::core::ports::{ChainAddress, KeyPurpose, Rail};
use stablecoin::rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Adapters. Swap any of them for your own (database, KMS, SMS gateway, FX desk).
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([7; 32]));
    let chain = Arc::new(SimRail::new(
        SimProfile::Evm(137),
        signer.clone(),
        SimConfig {
            confirmations: 1,
            auto_mine: true,
        },
    ));
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer,
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: Arc::new(SystemClock),
        entropy: Arc::new(OsEntropy),
    };
    let config = EngineConfig {
        poll_interval_ms: 0,
        ..Default::default()
    };
    let engine = Engine::new(ports, vec![chain.clone() as Arc<dyn Rail>], config);

    // 2. A tenant with a 0.5% fee of its own, and 1,000 USDC of treasury received as fiat.
    let tenant = engine.create_tenant("Example Fintech").await?.id;
    engine
        .set_pricing(
            &tenant,
            TenantPricing::Percentage {
                fee_bps: 50,
                fee_cap_micros: 0,
            },
            Some(ChainAddress(
                "0x000000000000000000000000000000000000fee5".into(),
            )),
        )
        .await?;
    let treasury = chain.address_for(&KeyPurpose::Treasury).await?;
    chain.mint(&treasury, Token::Usdc, Micros::parse_decimal("1000")?)?;
    chain.mine(1); // the simulated chain includes the mint in its next block
    engine
        .credit_treasury(
            &tenant,
            Token::Usdc,
            Micros::parse_decimal("1000")?,
            "wire-0001",
        )
        .await?;

    // 3. Two customers, a funding, and a transfer.
    let alice = Phone::parse("+225 07 00 00 00 01")?;
    let bob = Phone::parse("+234 80 0000 0002")?;
    println!("alice: {:?}", engine.provision(&tenant, &alice).await?);
    println!("bob:   {:?}", engine.provision(&tenant, &bob).await?);
    let fund = FundRequest {
        phone_number: alice.clone(),
        token: Token::Usdc,
        amount: Micros::parse_decimal("100")?,
    };
    engine.fund(&tenant, &fund, Some("fund-alice-1")).await?;
    engine.settle_all(50).await;

    let send = SendRequest {
        from_phone_number: alice.clone(),
        to_phone_number: bob.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:25".into(),
    };
    let accepted = engine
        .send(&tenant, &send, Some("send-alice-bob-1"))
        .await?;
    println!(
        "transfer {} {}: recipient {} + service fee {} + tenant fee {}",
        accepted.id,
        accepted.status,
        accepted.recipient_amount.as_deref().unwrap_or("?"),
        accepted.service_fee.as_deref().unwrap_or("?"),
        accepted.tenant_fee.as_deref().unwrap_or("?"),
    );
    engine.settle_all(50).await;
    let settled = engine.operation(&tenant, &accepted.id).await?;
    println!(
        "transfer is now {} (tx {})",
        settled.status.as_str(),
        settled.tx_hash.unwrap_or_default()
    );
    println!("alice: {:?}", engine.balance(&tenant, &alice).await?);
    println!("bob:   {:?}", engine.balance(&tenant, &bob).await?);
    assert_eq!(
        engine.balance(&tenant, &bob).await?.balance_usdc,
        "24.800000"
    );
    Ok(())
}
