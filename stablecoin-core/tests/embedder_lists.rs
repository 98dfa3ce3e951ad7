//! An embedder lists a tenant's operations through `Engine` alone (no HTTP): one kind,
//! optionally one status, newest first, with a correct total, from one store query.
//!
//! The operations are committed straight through the store (the engine's own
//! `Operation` record), so the test needs no rail: what it checks is the list, not how
//! operations come to be.

use async_trait::async_trait;
use stablecoin_core::CoreError;
use stablecoin_core::domain::ids::{OperationId, TenantId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::state::{OpKind, OpStatus, reachable_states};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{Engine, EngineConfig, Operation, Ports};
use stablecoin_core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin_core::ports::{
    Batch, ChainAddress, KeyPurpose, LegRole, ListQuery, PaymentLeg, RailId, RailPayment, Record,
    Store, StoreError, StoredRecord,
};
use stablecoin_core::testkit::{DelegatingStore, StoreOverride};
use std::sync::{Arc, Mutex};

/// Records every list query the engine makes; everything else is the store's own.
#[derive(Default)]
struct Recording {
    lists: Mutex<Vec<ListQuery>>,
}

#[async_trait]
impl StoreOverride for Recording {
    async fn list(
        &self,
        inner: &dyn Store,
        query: &ListQuery,
    ) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        self.lists.lock().unwrap().push(query.clone());
        inner.list(query).await
    }
}

type Recorded = DelegatingStore<Recording>;

fn engine(store: Arc<Recorded>, memory: Arc<MemoryStore>) -> Engine {
    let ports = Ports {
        store,
        ledger: memory,
        signer: Arc::new(LocalSigner::from_seed([7; 32])),
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600))),
        entropy: Arc::new(SeededEntropy::new(1)),
    };
    Engine::new(ports, vec![], EngineConfig::default())
}

/// An operation as the engine stores it, at `created_ms`.
fn operation(id: &str, tenant: &str, kind: OpKind, status: OpStatus, created_ms: i64) -> Operation {
    let at = Timestamp::from_millis(created_ms);
    Operation {
        id: OperationId(id.to_string()),
        kind,
        tenant: TenantId(tenant.to_string()),
        status,
        error_reason: None,
        rail: RailId::Evm(137),
        token: Token::Usdc,
        amount: Micros(1_000_000),
        fees: None,
        from_wallet: None,
        to_wallet: None,
        from_phone: None,
        to_phone: None,
        quote_id: None,
        payment: RailPayment {
            id: id.to_string(),
            from: KeyPurpose::Treasury,
            from_address: ChainAddress("0xfrom".into()),
            token: Token::Usdc,
            legs: vec![PaymentLeg {
                to: ChainAddress("0xto".into()),
                amount: Micros(1_000_000),
                role: LegRole::Recipient,
            }],
            valid_until: None,
        },
        holds: vec![],
        notify_recipient: false,
        tx_hash: None,
        block: None,
        submitted_at: None,
        next_check_at: None,
        created_at: at,
        updated_at: at,
        settled_at: None,
        payout: None,
        created_recipient_account: false,
        from_customer: None,
        swap: None,
    }
}

/// 240 operations of two tenants, every kind in every status it reaches, interleaved in
/// time; returns them newest first.
async fn seed(store: &MemoryStore) -> Vec<Operation> {
    let mut ops = Vec::new();
    for i in 0..240_i64 {
        let tenant = if i % 7 == 6 { "t2" } else { "t1" };
        let kind = OpKind::ALL[(i % 4) as usize];
        let states = reachable_states(kind);
        let status = states[(i / 4) as usize % states.len()];
        // Every third operation shares its creation time with the one before: ids
        // break the tie.
        let created = 1_000 + (i - i % 3 / 2) * 10;
        ops.push(operation(
            &format!("op_{i:03}"),
            tenant,
            kind,
            status,
            created,
        ));
    }
    for chunk in ops.chunks(40) {
        let puts = chunk.iter().map(|op| op.insert().unwrap()).collect();
        store
            .commit(Batch {
                puts,
                ..Batch::default()
            })
            .await
            .unwrap();
    }
    ops.sort_by(|a, b| (b.created_at, &b.id.0).cmp(&(a.created_at, &a.id.0)));
    ops
}

fn ids(ops: &[Operation]) -> Vec<String> {
    ops.iter().map(|o| o.id.0.clone()).collect()
}

#[tokio::test]
async fn an_embedder_lists_operations_by_kind_and_status_with_a_correct_total() {
    let memory = Arc::new(MemoryStore::new());
    let store = Arc::new(DelegatingStore::new(memory.clone(), Recording::default()));
    let all = seed(&memory).await;
    let engine = engine(store.clone(), memory.clone());
    let t1 = TenantId("t1".into());

    for kind in OpKind::ALL {
        let filters = std::iter::once(None).chain(reachable_states(kind).into_iter().map(Some));
        for status in filters {
            let expected: Vec<Operation> = all
                .iter()
                .filter(|o| o.tenant == t1 && o.kind == kind)
                .filter(|o| status.is_none_or(|s| o.status == s))
                .cloned()
                .collect();
            assert!(
                !expected.is_empty(),
                "{kind:?} {status:?}: the seed covers it"
            );

            // Page through it, 7 at a time: every page has the full total, and the
            // pages together are the expected list, newest first, each once.
            let mut paged = Vec::new();
            for offset in (0..expected.len() + 7).step_by(7) {
                store.overrides().lists.lock().unwrap().clear();
                let (page, total) = engine
                    .list_operations(&t1, kind, status, 7, offset)
                    .await
                    .unwrap();
                assert_eq!(total, expected.len() as u64, "{kind:?} {status:?}");
                let queries = store.overrides().lists.lock().unwrap().clone();
                assert_eq!(queries.len(), 1, "one store query per page, no scan");
                assert_eq!(queries[0].subkind.as_deref(), Some(kind.as_str()));
                assert_eq!(queries[0].status, status.map(|s| s.as_str().to_string()));
                assert!(page.len() <= 7);
                paged.extend(page);
            }
            assert_eq!(ids(&paged), ids(&expected), "{kind:?} {status:?}");
        }
    }

    // The other tenant sees only its own.
    let t2 = TenantId("t2".into());
    let (page, total) = engine
        .list_operations(&t2, OpKind::Transfer, None, 100, 0)
        .await
        .unwrap();
    let expected: Vec<_> = all
        .iter()
        .filter(|o| o.tenant == t2 && o.kind == OpKind::Transfer)
        .cloned()
        .collect();
    assert_eq!((ids(&page), total), (ids(&expected), expected.len() as u64));
    assert!(total > 0);
}

#[tokio::test]
async fn a_status_the_kind_never_reaches_is_invalid_parameter() {
    let memory = Arc::new(MemoryStore::new());
    let store = Arc::new(DelegatingStore::new(memory.clone(), Recording::default()));
    let engine = engine(store.clone(), memory);
    let t1 = TenantId("t1".into());

    let err = engine
        .list_operations(&t1, OpKind::Transfer, Some(OpStatus::Completed), 10, 0)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CoreError::InvalidParameter { field: "status", reason }
            if reason.contains("QUEUED") && reason.contains("SETTLED") && !reason.contains("COMPLETED")),
        "{err:?}"
    );
    assert_eq!(err.code(), "INVALID_PARAMETER");
    assert!(
        store.overrides().lists.lock().unwrap().is_empty(),
        "refused before the store"
    );

    assert_eq!(
        Engine::operation_status(OpKind::Transfer, "SETTLED"),
        Ok(OpStatus::Settled)
    );
    assert_eq!(
        Engine::operation_status(OpKind::Withdrawal, "COMPLETED"),
        Ok(OpStatus::Completed)
    );
    for (kind, name) in [
        (OpKind::Transfer, "COMPLETED"),
        (OpKind::Transfer, "done"),
        (OpKind::Withdrawal, "SETTLED"),
        (OpKind::Funding, "settled"),
    ] {
        let err = Engine::operation_status(kind, name).unwrap_err();
        assert_eq!(err.param(), Some("status"), "{kind:?} {name}");
    }
}
