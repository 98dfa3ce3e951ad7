//! `signer.kind = "remote"`: the server signs through the signing service on loopback,
//! fetches its symmetric keys from it, and holds no seed (nothing in its data directory).

use crate::common::*;
use serde_json::json;
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{ChainAddress, RailId};
use stablecoin_server::config::{Secret, SignerSettings};
use stablecoin_server::custody::Custody;
use stablecoin_server::{App, Config};
use stablecoin_signer::service::{Running, SignerService, spawn_on_loopback};

const SEED: [u8; 32] = [0x42; 32];
const TOKEN: &str = "the-signer-token-shared-with-the-api-process";

/// The signing service on 127.0.0.1:<free port>; stops when the handle drops.
async fn start_signer() -> (String, Running) {
    let running = spawn_on_loopback(SignerService::new(SEED, TOKEN).unwrap())
        .await
        .unwrap();
    (running.url.clone(), running)
}

/// Durable (SQLite) storage in a fresh data directory, the remote signer at `url`.
fn remote_config(url: &str, dir: &std::path::Path) -> Config {
    let mut c = test_config();
    use_remote_signer(&mut c, url, TOKEN, dir);
    c
}

#[tokio::test]
async fn a_server_with_the_remote_signer_holds_no_seed_and_settles_a_transfer() {
    let (url, _stop) = start_signer().await;
    let dir = temp_dir("remote-signer");
    let s = start_with(remote_config(&url, &dir)).await;
    assert_eq!(s.app.storage_kind(), "sqlite");
    let t = s.tenant("Acme", "100").await;
    let key = t.live.as_str();
    let (alice, bob) = ("+2250700000001", "+2250700000002");
    s.provision(key, alice).await;
    s.provision(key, bob).await;
    s.fund_settled(key, alice, "50").await;
    let r = s
        .post(
            key,
            "/v1/transfers/send",
            &json!({"from_phone_number": alice, "to_phone_number": bob, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:25"})
            .to_string(),
        )
        .await;
    r.expect(202);
    s.settle().await;
    let tr = s.get(key, &r.header("location").unwrap()).await;
    tr.expect(200);
    assert_eq!(tr.json()["status"], "SETTLED", "{}", tr.text());
    let b = s
        .get(key, "/v1/users/balance?phone_number=%2B2250700000002")
        .await;
    assert_eq!(b.json()["balance_usdc"], "24.925000");

    // Ed25519 through the service: a transfer on the simulated Solana chain, which
    // verifies every signature.
    let mut addresses = Vec::new();
    for phone in [alice, bob] {
        let r = s
            .post(
                key,
                "/v1/solana/users/provision",
                &json!({"phone_number": phone}).to_string(),
            )
            .await;
        r.expect(200);
        addresses.push(ChainAddress(r.json()["address"].as_str().unwrap().into()));
    }
    let solana = s.app.sim_rail(RailId::Solana).unwrap().clone();
    solana.mint(&addresses[0], Token::Usdc, m("8")).unwrap();
    s.settle().await;
    let r = s
        .post(
            key,
            "/v1/solana/transfers/send",
            &json!({"from_phone_number": alice, "to_phone_number": bob, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:5"})
            .to_string(),
        )
        .await;
    r.expect(202);
    s.settle().await;
    let tr = s.get(key, &r.header("location").unwrap()).await;
    assert_eq!(tr.json()["status"], "SETTLED", "{}", tr.text());
    let b = s
        .get(
            key,
            "/v1/solana/users/balance?phone_number=%2B2250700000002",
        )
        .await;
    assert_eq!(b.json()["balance_usdc"], "5.000000", "{}", b.text());

    // The data directory holds the database and nothing that derives a key.
    assert_database_and_no_seed(&dir);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_keys_fetched_from_the_service_are_the_seeds_own() {
    let (url, _stop) = start_signer().await;
    let dir = temp_dir("remote-custody");
    let remote = Custody::build(&remote_config(&url, &dir), true)
        .await
        .unwrap();
    let mut local_config = test_config();
    local_config.master_seed = Some(Secret::new(
        SEED.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    ));
    let local = Custody::build(&local_config, false).await.unwrap();
    assert_eq!(remote.code_key, local.code_key);
    // A webhook secret sealed by a local-seed deployment opens after the move to the
    // signing service, and the other way round.
    let sealed = local.webhook_key.seal("whsec_x", "we_1", [3; 12]);
    assert_eq!(
        remote.webhook_key.open(&sealed, "we_1").as_deref(),
        Some("whsec_x")
    );
    let sealed = remote.webhook_key.seal("whsec_y", "we_2", [4; 12]);
    assert_eq!(
        local.webhook_key.open(&sealed, "we_2").as_deref(),
        Some("whsec_y")
    );
    // The same addresses.
    for curve in [
        stablecoin_core::ports::Curve::Secp256k1,
        stablecoin_core::ports::Curve::Ed25519,
    ] {
        let p = stablecoin_core::ports::KeyPurpose::Treasury;
        assert_eq!(
            remote.signer.public_key(&p, curve).await.unwrap(),
            local.signer.public_key(&p, curve).await.unwrap()
        );
    }
    assert!(files_in(&dir).is_empty(), "custody writes nothing");
}

#[tokio::test]
async fn a_server_whose_signer_is_down_or_refuses_its_token_does_not_start() {
    // Nothing listens there.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let down = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let dir = temp_dir("remote-down");
    let e = App::build(remote_config(&down, &dir)).await.unwrap_err();
    assert!(e.to_string().starts_with("signer:"), "{e}");
    assert!(
        !files_in(&dir).iter().any(|f| f.contains("seed")),
        "no seed file written"
    );

    let (url, _stop) = start_signer().await;
    let mut c = remote_config(&url, &dir);
    c.signer = SignerSettings::Remote {
        url,
        token: Secret::new("a-token-the-signing-service-does-not-know"),
        timeout_ms: 5_000,
    };
    let e = App::build(c).await.unwrap_err();
    assert!(e.to_string().contains("credentials"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
