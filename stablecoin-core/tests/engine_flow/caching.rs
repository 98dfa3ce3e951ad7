//! The engine's read caches: local changes seen at once, another process's within the TTL,
//! and never a transfer acting on a stale wallet.

use super::harness::*;
use stablecoin_core::domain::fees::TenantPricing;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{Engine, EngineConfig, SendRequest};
use stablecoin_core::ports::ChainAddress;

/// API keys and tenant records are reused from memory for `read_cache_ms` (1 s by
/// default): a revocation or pricing change made through this engine applies at once;
/// one made by another process on the same database (here: a second engine over the same
/// store, as the CLI would be) once the entry expired, and not before.
#[tokio::test]
async fn cached_keys_and_pricing_see_local_changes_at_once_and_remote_ones_within_the_ttl() {
    use stablecoin_core::CoreError;
    use stablecoin_core::engine::{KeyKind, KeyMode};
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap();
    let issue = || {
        h.engine
            .issue_api_key(&t.id, KeyKind::Tenant, KeyMode::Live)
    };
    let (a, b) = (issue().await.unwrap(), issue().await.unwrap());
    for k in [&a, &b] {
        assert_eq!(h.engine.authenticate(&k.secret).await.unwrap().tenant, t.id);
    }
    let other = Engine::new(h.engine.ports().clone(), vec![], EngineConfig::default());

    h.engine.revoke_api_key(&t.id, &a.key.id).await.unwrap();
    let r = h.engine.authenticate(&a.secret).await;
    assert!(matches!(r, Err(CoreError::ApiKeyRevoked)), "{r:?}");

    other.revoke_api_key(&t.id, &b.key.id).await.unwrap();
    assert!(other.authenticate(&b.secret).await.is_err());
    h.clock.advance_ms(999);
    assert!(
        h.engine.authenticate(&b.secret).await.is_ok(),
        "still cached"
    );
    h.clock.advance_ms(1);
    let r = h.engine.authenticate(&b.secret).await;
    assert!(matches!(r, Err(CoreError::ApiKeyRevoked)), "{r:?}");

    let fee = ChainAddress("0x00000000000000000000000000000000000000fe".into());
    let pct = TenantPricing::Percentage {
        fee_bps: 100,
        fee_cap_micros: 0,
    };
    assert_eq!(
        h.engine.tenant(&t.id).await.unwrap().pricing,
        TenantPricing::None
    );
    other
        .set_pricing(&t.id, pct.clone(), Some(fee))
        .await
        .unwrap();
    assert_eq!(
        h.engine.tenant(&t.id).await.unwrap().pricing,
        TenantPricing::None
    );
    h.clock.advance_ms(1_000);
    assert_eq!(h.engine.tenant(&t.id).await.unwrap().pricing, pct);
    h.engine
        .set_pricing(&t.id, TenantPricing::None, None)
        .await
        .unwrap();
    assert_eq!(
        h.engine.tenant(&t.id).await.unwrap().pricing,
        TenantPricing::None
    );

    // With the cache off every read goes to the store.
    let uncached = Engine::new(
        h.engine.ports().clone(),
        vec![],
        EngineConfig {
            read_cache_ms: 0,
            ..Default::default()
        },
    );
    let c = issue().await.unwrap();
    assert!(uncached.authenticate(&c.secret).await.is_ok());
    h.engine.revoke_api_key(&t.id, &c.key.id).await.unwrap();
    assert!(uncached.authenticate(&c.secret).await.is_err());
}

/// A transfer reuses the wallets it read from memory (`wallet_cache_ms`), and its commit
/// checks that both are still at the version read. A wallet changed by another process
/// on the same database (here: a second engine over the same store) is never acted on:
/// the stale decision fails its commit, writes nothing, and the transfer is decided again
/// on fresh reads.
#[tokio::test]
async fn a_transfer_never_acts_on_a_cached_wallet_another_process_changed() {
    let h = harness();
    let acme = h.tenant("Acme", "100").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    for p in [&a, &b] {
        h.engine.provision(&acme, p).await.unwrap();
    }
    h.fund_usdc(&acme, &a, "10").await;
    h.settle().await;
    let send = |from: &Phone, to: &Phone| SendRequest {
        from_phone_number: from.clone(),
        to_phone_number: to.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
    };
    // Caches both wallets.
    h.engine.send(&acme, &send(&a, &b), None).await.unwrap();
    let old_b = h.wallet(&b).await.id;
    let other = Engine::new(
        h.engine.ports().clone(),
        vec![h.sim.clone()],
        EngineConfig::default(),
    );
    let rekey = |from: Phone, to: Phone| {
        let (other, h, acme) = (&other, &h, &acme);
        async move {
            other.phone_change_request(acme, &from, &to).await.unwrap();
            let code = h.notifier.last_code_to(&to).unwrap();
            other
                .phone_change_confirm(acme, &from, &code)
                .await
                .unwrap();
        }
    };

    // The recipient's phone moved to another wallet's number: b is now nobody's, so the
    // transfer opens a new wallet for b instead of paying the re-keyed one.
    rekey(b.clone(), phone("+2250700000003")).await;
    let (commits, attempts) = (h.store.commit_count(), h.store.commit_attempts());
    let v = h.engine.send(&acme, &send(&a, &b), None).await.unwrap();
    let new_b = h.wallet(&b).await.id;
    assert_ne!(new_b, old_b, "b has a new wallet");
    let op = h.engine.operation(&acme, &v.id).await.unwrap();
    assert_eq!(
        op.to_wallet.map(|w| w.0),
        Some(new_b),
        "paid to b's new wallet"
    );
    assert_eq!(
        (h.store.commit_count(), h.store.commit_attempts()),
        (commits + 1, attempts + 2),
        "one stale commit refused, then one on fresh reads"
    );

    // The sender's phone moved: a has no wallet any more, and nothing is written.
    rekey(a.clone(), phone("+2250700000004")).await;
    let commits = h.store.commit_count();
    let err = h.engine.send(&acme, &send(&a, &b), None).await.unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND", "{err:?}");
    assert_eq!(h.store.commit_count(), commits, "nothing written");
    h.settle().await;
    h.assert_conserved().await;
}
