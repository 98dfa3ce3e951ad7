//! Run wallets, escrow and checkout together, as the server does, with one call: the
//! kernel's `Runtime::products` gives each product's worker a loop of its own, and one
//! inbound router that scans each chain page once for every product.
//!
//! In-memory adapters and simulated chains; a checkout session is paid on chain while
//! the runtime runs, and the runtime is stopped once it is `paid`.
//!
//! Run: `cargo run --example three_products --features escrow,checkout`

use stablecoin::checkout::{CheckoutConfig, CheckoutEngine, CreateSessionRequest};
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::engine::{Engine, EngineConfig, Ports};
use stablecoin::core::kernel::{Product, Runtime};
use stablecoin::core::memory::{
    FixedRates, LocalSigner, MemoryNotifier, MemoryPayouts, MemoryStore, OsEntropy, SystemClock,
};
use stablecoin::core::ports::{ChainAddress, Rail};
use stablecoin::escrow::{EscrowConfig, EscrowEngine};
use stablecoin::rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;
use std::time::Duration;

#[allow(dead_code)] // the tests call `demo` and not `main`
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let status = demo().await?;
    println!("the session is {status}");
    Ok(())
}

/// Builds the three products on one set of adapters, runs them on one runtime, pays a
/// checkout session on chain, and answers the session's status once the runtime has
/// seen the payment (or the last status read, after 10 seconds).
pub async fn demo() -> Result<String, Box<dyn std::error::Error>> {
    // 1. One set of adapters for every product.
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([7; 32]));
    let sim = |profile| {
        let config = SimConfig {
            confirmations: 1,
            auto_mine: true,
        };
        Arc::new(SimRail::new(profile, signer.clone(), config))
    };
    let polygon = sim(SimProfile::Evm(137));
    let tron = sim(SimProfile::Tron);
    let ports = Ports {
        store: store.clone(),
        ledger: store,
        signer: signer.clone(),
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: Arc::new(SystemClock),
        entropy: Arc::new(OsEntropy),
    };

    // 2. The products: wallets, escrow (TRON) and checkout.
    let rails: Vec<Arc<dyn Rail>> = vec![polygon.clone(), tron.clone()];
    let wallets = Engine::new(ports.clone(), rails, EngineConfig::default());
    // Escrow and checkout stand on the wallet engine's kernel: its ports and rails.
    let escrow = EscrowEngine::new(wallets.kernel(), EscrowConfig::default())?;
    let checkout = Arc::new(CheckoutEngine::new(
        wallets.kernel(),
        CheckoutConfig::default(),
    )?);

    // 3. One runtime, one call: each product's worker in a loop of its own, and one
    //    inbound router scanning each chain page once for all three, until told to
    //    stop.
    let router = wallets.kernel().inbound_router(100);
    let products: Vec<Arc<dyn Product>> = vec![
        Arc::new(wallets.clone()),
        Arc::new(escrow),
        checkout.clone(),
    ];
    let runtime = Runtime::products(router, products, Duration::from_millis(20));
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(async move { runtime.run(shutdown).await });

    // 4. A business takes 10 USDC; the payer pays the session's address on chain.
    let tenant = wallets.create_tenant("Corner Shop Ltd").await?.id;
    let business = checkout.create_business(&tenant, "Corner Shop").await?;
    let live = wallets
        .authenticate(business.live_key.as_deref().unwrap_or_default())
        .await?;
    let request = CreateSessionRequest {
        amount: "10".into(),
        currency: "USDC".into(),
        reference: Some("order-1".into()),
        ..Default::default()
    };
    let session = checkout.create_session(&live, &request, None).await?;
    let address = ChainAddress(session.payment_options[0].address.clone());
    polygon.mint(&address, Token::Usdc, Micros::parse_decimal("10")?)?;
    polygon.mine(1);

    // 5. The runtime's checkout worker sees it and the session is paid.
    let mut status = session.status;
    for _ in 0..500 {
        status = checkout
            .get_session(&live, &session.session_id)
            .await?
            .status;
        if status == "paid" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(true)?;
    running.await?;
    Ok(status)
}
