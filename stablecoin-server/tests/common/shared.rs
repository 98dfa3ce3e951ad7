//! Several servers on one PostgreSQL database and one simulated chain: the helpers
//! `shared_chain.rs` and `concurrency.rs` share.

use stablecoin_core::memory::{LocalSigner, SystemClock};
use stablecoin_server::Config;
use std::sync::Arc;

/// The shared chain of `config`'s simulated rails, as `sim-chain` builds it (the same
/// seed, the float minted once), served by a task of this test; its URL.
pub async fn shared_chain(config: &Config) -> String {
    let seed = stablecoin_server::config::parse_seed(config.master_seed.as_ref().unwrap().expose())
        .unwrap();
    let server = stablecoin_server::rails::sim_chain_server(
        config,
        Arc::new(LocalSigner::from_seed(seed)),
        Arc::new(SystemClock),
    )
    .await
    .expect("chain builds");
    server.spawn().await.expect("chain serves")
}

pub fn pg_url(test: &str) -> Option<String> {
    match std::env::var("STABLECOIN_TEST_PG_URL") {
        Ok(url) => Some(url),
        Err(_) if std::env::var_os("STABLECOIN_REQUIRE_PG").is_some() => panic!(
            "STABLECOIN_TEST_PG_URL is not set but STABLECOIN_REQUIRE_PG is: run scripts/test-postgres.sh"
        ),
        Err(_) => {
            eprintln!(
                "SKIPPED {test}: STABLECOIN_TEST_PG_URL is not set (scripts/test-postgres.sh runs it)"
            );
            None
        }
    }
}

/// `url` with a schema of its own as the search path: the database outlives a run, and
/// a server's workers settle whatever is due in it. The schema is created (and migrated)
/// by the store, as the store's own PostgreSQL tests do.
pub async fn fresh_schema(url: &str) -> String {
    use stablecoin_store::{PgConfig, PgStore};
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros();
    let schema = format!("t_shared_chain_{}_{micros}", std::process::id());
    PgStore::connect(PgConfig::new(url).schema(schema.clone()))
        .await
        .expect("schema created");
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}
