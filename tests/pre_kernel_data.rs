//! Data written before the kernel's inbound router (issue #45) is migrated, on SQLite and
//! on PostgreSQL, and every product goes on from where it stood.
//!
//! The databases in `tests/fixtures/pre_kernel/` were written by the code before the
//! change (its README says how): three scan cursor kinds and three address namespaces.
//! Each test opens a copy with today's store (which migrates it), checks the migrated
//! rows, then runs the three products on one runtime over fresh chains mined to the old
//! heights: new deposits into the old wallet, deal and session addresses reach the right
//! product, and the products' positions, apart in the old data, meet.
//!
//! The PostgreSQL test needs `STABLECOIN_TEST_PG_URL` and `psql` (`PG_BIN` or `PATH`);
//! without the URL it prints `SKIPPED`, unless `STABLECOIN_REQUIRE_PG` is set, when it
//! fails. `scripts/test-postgres.sh` starts a throwaway cluster and sets both.

use crate::support;
use serde_json::Value;
use stablecoin::checkout::{CheckoutConfig, CheckoutEngine};
use stablecoin::core::domain::ids::WalletId;
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{Engine, EngineConfig};
use stablecoin::core::kernel::{Product, Runtime, address_key};
use stablecoin::core::memory::LocalSigner;
use stablecoin::core::ports::{ChainAddress, Ledger, Rail, RailId, Store};
use stablecoin::escrow::{EscrowConfig, EscrowEngine};
use stablecoin::rails::sim::{SimProfile, SimRail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The fixed clock the fixtures were written at (2026-11-22T10:00:00Z).
const WRITTEN_AT: Timestamp = Timestamp::from_secs(1_795_341_600);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pre_kernel")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn text(v: &Value, field: &str) -> String {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("manifest: {field}"))
        .to_string()
}

#[tokio::test]
async fn a_sqlite_database_written_before_the_kernel_is_migrated_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pre_kernel.db");
    std::fs::copy(fixtures().join("sqlite.db"), &path).unwrap();
    let store = Arc::new(
        stablecoin::store::sqlite::SqliteStore::open_path(&path)
            .await
            .unwrap(),
    );
    goes_on(store.clone(), store).await;
}

#[tokio::test]
async fn a_postgres_database_written_before_the_kernel_is_migrated_and_goes_on() {
    let Some(url) = pg_url() else {
        return;
    };
    let schema = format!("pre_kernel_{}", std::process::id());
    let dump = std::fs::read_to_string(fixtures().join("postgres.sql"))
        .unwrap()
        .replace("pre_kernel", &schema);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dump.sql");
    std::fs::write(&file, dump).unwrap();
    let psql = std::env::var("PG_BIN")
        .map(|bin| Path::new(&bin).join("psql"))
        .unwrap_or_else(|_| PathBuf::from("psql"));
    let out = std::process::Command::new(psql)
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-d", &url, "-f"])
        .arg(&file)
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "restoring the dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = stablecoin::store::postgres::PgConfig::new(url).schema(&schema);
    let store = Arc::new(
        stablecoin::store::postgres::PgStore::connect(config)
            .await
            .unwrap(),
    );
    goes_on(store.clone(), store).await;
}

/// The database URL, or `None` (skip) when none is configured and none was promised.
fn pg_url() -> Option<String> {
    match std::env::var("STABLECOIN_TEST_PG_URL") {
        Ok(url) => Some(url),
        Err(_) if std::env::var_os("STABLECOIN_REQUIRE_PG").is_some() => {
            panic!("STABLECOIN_TEST_PG_URL is not set: run scripts/test-postgres.sh")
        }
        Err(_) => {
            eprintln!("SKIPPED: STABLECOIN_TEST_PG_URL is not set (scripts/test-postgres.sh)");
            None
        }
    }
}

/// The migrated rows, then the products running on them.
async fn goes_on(store: Arc<dyn Store>, ledger: Arc<dyn Ledger>) {
    let m = manifest();
    migrated_rows(&*store, &m).await;
    products_go_on(store, ledger, &m).await;
}

/// One cursor record per rail holding each product's old position; one address
/// namespace, base58 addresses keyed in their exact case.
async fn migrated_rows(store: &dyn Store, m: &Value) {
    let old = |k: &str| m["cursors"][k].clone();
    let positions = |rail: &'static str| async move {
        let rec = store.get("scan_cursor", rail).await.unwrap().unwrap();
        rec.body.to_value().unwrap()["positions"].clone()
    };
    assert_eq!(
        positions("polygon").await,
        serde_json::json!({
            "wallet": old("scan_cursor/polygon"),
            "checkout": old("checkout_scan_cursor/polygon"),
        }),
        "polygon: each product resumes where it stood"
    );
    assert_eq!(
        positions("tron").await,
        serde_json::json!({
            "wallet": old("scan_cursor/tron"),
            "escrow": old("escrow_scan_cursor/tron"),
            "checkout": old("checkout_scan_cursor/tron"),
        }),
        "tron: each product resumes where it stood"
    );
    for (kind, rail) in [
        ("escrow_scan_cursor", "tron"),
        ("checkout_scan_cursor", "polygon"),
        ("checkout_scan_cursor", "tron"),
    ] {
        assert!(
            store.get(kind, rail).await.unwrap().is_none(),
            "{kind} gone"
        );
    }

    let owner = |key: String| async move {
        store
            .get_by_unique(&key)
            .await
            .unwrap()
            .map(|r| (r.kind, r.id))
    };
    let wallet = text(m, "wallet_id");
    let session = m["session_options"][0].clone();
    for (key, want) in [
        (
            address_key("polygon", &text(m, "wallet_polygon")),
            ("wallet", wallet.clone()),
        ),
        (
            address_key("tron", &text(m, "wallet_tron")),
            ("wallet", wallet.clone()),
        ),
        (
            address_key("tron", &text(m, "deal_address")),
            ("escrow", text(m, "deal_id")),
        ),
        (
            address_key("polygon", &text(&session, "address")),
            ("payment_session", text(m, "session_id")),
        ),
    ] {
        let got = owner(key.clone()).await;
        assert_eq!(got, Some((want.0.to_string(), want.1)), "{key}");
    }
    let folded = format!("addr:tron:{}", text(m, "wallet_tron").to_lowercase());
    assert_eq!(owner(folded).await, None, "no case-folded TRON key is left");
    let old_key = format!("wallet_addr:polygon:{}", text(m, "wallet_polygon"));
    assert_eq!(
        owner(old_key).await,
        None,
        "no key of the old namespaces is left"
    );
}

/// Fresh chains at the old heights; new deposits to the old addresses reach the right
/// product on one runtime, and nothing credited before is credited again.
async fn products_go_on(store: Arc<dyn Store>, ledger: Arc<dyn Ledger>, m: &Value) {
    let signer = Arc::new(LocalSigner::from_seed([45; 32]));
    let polygon = support::chain(SimProfile::Evm(137), &signer);
    let tron = support::chain(SimProfile::Tron, &signer);
    let ports = support::ports(store, ledger.clone(), signer, WRITTEN_AT.plus_secs(60), 46);
    let rails: Vec<Arc<dyn Rail>> = vec![polygon.clone(), tron.clone()];
    let config = EngineConfig {
        poll_interval_ms: 0,
        ..EngineConfig::default()
    };
    let wallets = Engine::new(ports.clone(), rails, config);
    let escrow = EscrowEngine::new(wallets.kernel(), EscrowConfig::default()).unwrap();
    let checkout = CheckoutEngine::new(wallets.kernel(), CheckoutConfig::default()).unwrap();

    // The old chains stood at these heights; the new ones reach them, then carry one
    // deposit to each product's address.
    polygon.mine(6);
    tron.mine(10);
    let mint = |rail: &SimRail, address: &str, token, amount: &str| {
        let amount = Micros::parse_decimal(amount).unwrap();
        rail.mint(&ChainAddress(address.into()), token, amount)
            .unwrap();
    };
    // A simulated chain numbers its transactions from one: first a transfer to nobody,
    // so the wallet's new deposit does not reuse the hash of the one credited before
    // (which the wallet would rightly take for the same deposit, seen again).
    mint(
        &polygon,
        "0x00000000000000000000000000000000000000aa",
        Token::Usdc,
        "1",
    );
    mint(&polygon, &text(m, "wallet_polygon"), Token::Usdc, "2");
    mint(&tron, &text(m, "deal_address"), Token::Usdt, "25");
    let session = &m["session_options"][0];
    mint(&polygon, &text(session, "address"), Token::Usdc, "10");
    polygon.mine(2);
    tron.mine(2);

    let router = wallets.kernel().inbound_router(100);
    let products: Vec<Arc<dyn Product>> = vec![
        Arc::new(wallets.clone()),
        Arc::new(escrow.clone()),
        Arc::new(checkout.clone()),
    ];
    let runtime = Runtime::products(router, products, Duration::from_millis(10));
    for (worker, report) in runtime.settle(20).await {
        assert!(report.errors.is_empty(), "{worker}: {:?}", report.errors);
    }

    let wallet = WalletId(text(m, "wallet_id"));
    let account = wallets.wallet_account(&wallet, RailId::Evm(137), Token::Usdc);
    let balance = ledger.balance(&account.id).await.unwrap().posted();
    assert_eq!(balance, 7_000_000, "5 USDC from before, 2 now");
    let tenant = wallets.authenticate(&text(m, "tenant_key")).await.unwrap();
    let deal = escrow.get(&tenant, &text(m, "deal_id")).await.unwrap();
    assert_eq!(deal.state, "FUNDED");
    let business = text(m, "business_live_key");
    let live = wallets.authenticate(&business).await.unwrap();
    let paid = checkout
        .get_session(&live, &text(m, "session_id"))
        .await
        .unwrap();
    assert_eq!(paid.status, "paid");

    for rail in ["polygon", "tron"] {
        let rec = ports.store.get("scan_cursor", rail).await.unwrap().unwrap();
        let body = rec.body.to_value().unwrap();
        let at: std::collections::BTreeSet<_> = body["positions"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(at.len(), 1, "{rail}: the products' positions met: {body}");
    }
}
