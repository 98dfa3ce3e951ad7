//! Who pays for spending policies (issue #47): a tenant that never created one reads none
//! on its requests; the first one governs the next request; a tenant record written
//! before the flag existed still has its policies enforced.

use super::harness::*;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{Engine, EngineConfig, PolicyInput, SendRequest};
use stablecoin_core::kernel::auth::Tenant;
use stablecoin_core::ports::{ListQuery, Record, Store, StoreError, StoredRecord};
use stablecoin_core::ports::{get_record, kinds::kind};
use stablecoin_core::testkit::{DelegatingStore, StoreOverride};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the list reads of policy records.
struct PolicyLists(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl StoreOverride for PolicyLists {
    async fn list(
        &self,
        inner: &dyn Store,
        query: &ListQuery,
    ) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        if query.kind == kind::POLICY {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        inner.list(query).await
    }
}

/// A policy refusing any send above 1 USDC.
fn cap_of_one_usdc() -> PolicyInput {
    PolicyInput {
        phone_number: None,
        rail: None,
        token: None,
        max_per_transaction: Some(m("1")),
        windows: vec![],
        allow_list: vec![],
        deny_list: vec![],
        require_address_book: false,
        cooling_off_hours: None,
        approval_threshold: None,
    }
}

fn send_of(a: &Phone, b: &Phone, q: &str) -> SendRequest {
    SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: q.to_string(),
    }
}

/// The rail and a fresh quote for 6000 XOF (10 USDC) of tenant `t`.
async fn quote(h: &H, t: &stablecoin_core::domain::ids::TenantId) -> String {
    h.engine
        .quote(
            t,
            "6000".parse().unwrap(),
            stablecoin_core::domain::money::Currency::parse("XOF").unwrap(),
            Token::Usdc,
        )
        .await
        .unwrap()
        .quote_id
}

#[tokio::test]
async fn a_tenant_without_policies_reads_none_and_its_first_policy_governs_the_next_send() {
    let lists = Arc::new(AtomicUsize::new(0));
    let counted = lists.clone();
    let h = harness_with(
        |sim| sim,
        move |inner| Arc::new(DelegatingStore::new(inner, PolicyLists(counted))),
    );
    let (t, a, b, q) = h.quote_for_a_funded_pair().await;
    let tenant = h.engine.tenant(&t).await.unwrap();
    assert_eq!(
        tenant.spending_policies,
        Some(false),
        "a new tenant has none"
    );

    let before = lists.load(Ordering::SeqCst);
    h.engine
        .send(&t, &send_of(&a, &b, &q.quote_id), None)
        .await
        .unwrap();
    assert_eq!(
        lists.load(Ordering::SeqCst),
        before,
        "no policy read for a tenant without policies"
    );

    h.engine
        .create_policy(&t, &cap_of_one_usdc())
        .await
        .unwrap();
    let stored = get_record::<Tenant>(&*h.store, &t.0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.record.spending_policies,
        Some(true),
        "set in the policy's commit"
    );
    // The next send (10 USDC) is refused by the new policy, on this engine at once.
    let q2 = quote(&h, &t).await;
    let err = h
        .engine
        .send(&t, &send_of(&a, &b, &q2), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "POLICY_DENIED", "{err:?}");
    assert!(
        lists.load(Ordering::SeqCst) > before,
        "a tenant with a policy reads its policies"
    );
}

/// A tenant record written before the flag existed (no `spending_policies` field) is
/// "unknown": its policies are read and enforced as before.
#[tokio::test]
async fn a_tenant_record_from_before_the_flag_still_has_its_policies_enforced() {
    let h = harness();
    let (t, a, b, _) = h.quote_for_a_funded_pair().await;
    h.engine
        .create_policy(&t, &cap_of_one_usdc())
        .await
        .unwrap();
    // Rewrite the tenant as an older version stored it: without the field.
    let v = get_record::<Tenant>(&*h.store, &t.0)
        .await
        .unwrap()
        .unwrap();
    let mut old = v.record.clone();
    old.spending_policies = None;
    h.store
        .commit(stablecoin_core::ports::Batch {
            puts: vec![old.update(v.version).unwrap()],
            ..Default::default()
        })
        .await
        .unwrap();
    let raw = h.store.get(kind::TENANT, &t.0).await.unwrap().unwrap();
    assert!(
        !raw.body.text().contains("spending_policies"),
        "{:?}",
        raw.body
    );
    // A fresh engine (no cached tenant) over the same store.
    let fresh = Engine::new(
        h.engine.ports().clone(),
        vec![h.sim.clone(), h.tron.clone()],
        EngineConfig::default(),
    );
    assert_eq!(fresh.tenant(&t).await.unwrap().spending_policies, None);
    let q = quote(&h, &t).await;
    let err = fresh
        .send(&t, &send_of(&a, &b, &q), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "POLICY_DENIED", "{err:?}");
}

/// A tenant's first policy created while its record changes underneath is created (the
/// tenant read again), not refused CONFLICT, and it is marked once.
#[tokio::test]
async fn a_first_policy_racing_a_tenant_change_is_created_and_marks_the_tenant() {
    let h = harness_with(
        |sim| sim,
        |inner| Arc::new(DelegatingStore::new(inner, RaceOn::kind(kind::TENANT))),
    );
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let before = get_record::<Tenant>(&*h.store, &t.0)
        .await
        .unwrap()
        .unwrap();
    let p = h
        .engine
        .create_policy(&t, &cap_of_one_usdc())
        .await
        .unwrap();
    let after = get_record::<Tenant>(&*h.store, &t.0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.record.spending_policies, Some(true));
    // The racing re-put and the marking: two versions on.
    assert_eq!(after.version, before.version + 2);
    assert_eq!(h.engine.active_policies(&t).await.unwrap()[0].id, p.id);
}
