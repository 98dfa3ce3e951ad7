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

/// A fresh database, migrated over a direct connection, and its URL through PgBouncer in
/// transaction pooling mode (`STABLECOIN_TEST_PGBOUNCER_URL`, set with `PG_BIN` by
/// `scripts/test-postgres.sh`), with `pooler=transaction` unless the PgBouncer is 1.21
/// or later; `None` (SKIPPED) without one.
pub async fn fresh_database_behind_pgbouncer(test: &str) -> Option<String> {
    let direct = pg_url(test)?;
    let bouncer = match std::env::var("STABLECOIN_TEST_PGBOUNCER_URL") {
        Ok(url) => url,
        Err(_) if std::env::var_os("STABLECOIN_REQUIRE_PG").is_some() => {
            panic!(
                "STABLECOIN_TEST_PGBOUNCER_URL is not set: scripts/test-postgres.sh starts PgBouncer"
            )
        }
        Err(_) => {
            eprintln!("SKIPPED {test}: STABLECOIN_TEST_PGBOUNCER_URL is not set");
            return None;
        }
    };
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros();
    let db = format!("t_bouncer_{}_{micros}", std::process::id());
    let psql = std::path::Path::new(&std::env::var("PG_BIN").expect("PG_BIN")).join("psql");
    let out = std::process::Command::new(psql)
        .args([
            direct.as_str(),
            "-q",
            "-c",
            &format!("CREATE DATABASE {db}"),
        ])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let swap = |url: &str| format!("{}/{db}", url.rsplit_once('/').unwrap().0);
    // Migrations run over a direct connection, never through the pooler.
    stablecoin_store::PgStore::connect(stablecoin_store::PgConfig::new(swap(&direct)))
        .await
        .expect("migrated directly")
        .close()
        .await;
    let version = std::env::var("STABLECOIN_TEST_PGBOUNCER_VERSION").unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let new_enough = (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (1, 21);
    Some(if new_enough {
        swap(&bouncer)
    } else {
        format!("{}?pooler=transaction", swap(&bouncer))
    })
}
