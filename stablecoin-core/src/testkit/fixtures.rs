//! Helpers the conformance cases share: record, transfer and batch builders, and
//! assertions that name the case that broke.

pub(super) use crate::domain::ledger::MAX_AMOUNT_MICROS;
pub(super) use crate::domain::money::Micros;
pub(super) use crate::domain::time::Timestamp;
pub(super) use crate::ports::ledger::{
    Balance, Ledger, LedgerAccount, LedgerError, LedgerTransfer, Phase, TimedEntry,
};
pub(super) use crate::ports::store::{
    Batch, IdempotencyRecord, ListPosition, ListQuery, OutboxEvent, Put, Store, StoreError,
    StoredRecord, Unchanged,
};
pub(super) use serde_json::json;

// ---------------------------------------------------------------------------------------
// Helpers

pub(super) const KIND: &str = "widget";

pub(super) fn ts(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

pub(super) fn record(id: &str, tenant: &str, created_ms: i64) -> StoredRecord {
    StoredRecord {
        kind: KIND.to_string(),
        id: id.to_string(),
        tenant: Some(tenant.to_string()),
        version: 0,
        created_at: ts(created_ms),
        status: None,
        subkind: None,
        due_at: None,
        lane: 0,
        unique_keys: Vec::new(),
        body: json!({ "id": id }).into(),
    }
}

pub(super) fn with_keys(mut r: StoredRecord, keys: &[&str]) -> StoredRecord {
    r.unique_keys = keys.iter().map(|k| k.to_string()).collect();
    r
}

pub(super) fn with_status(mut r: StoredRecord, status: &str) -> StoredRecord {
    r.status = Some(status.to_string());
    r
}

pub(super) fn with_subkind(mut r: StoredRecord, subkind: &str) -> StoredRecord {
    r.subkind = Some(subkind.to_string());
    r
}

pub(super) fn with_due(mut r: StoredRecord, due_ms: Option<i64>) -> StoredRecord {
    r.due_at = due_ms.map(ts);
    r
}

pub(super) fn insert(r: StoredRecord) -> Put {
    Put {
        record: r,
        expected_version: None,
    }
}

pub(super) fn update(r: StoredRecord, expected: u64) -> Put {
    Put {
        record: r,
        expected_version: Some(expected),
    }
}

pub(super) fn puts(puts: Vec<Put>) -> Batch {
    Batch {
        puts,
        ..Batch::default()
    }
}

pub(super) fn account(id: &str, allow_negative: bool) -> LedgerAccount {
    LedgerAccount {
        id: id.to_string(),
        allow_negative,
    }
}

pub(super) fn transfer(
    id: &str,
    debit: &str,
    credit: &str,
    amount: u64,
    phase: Phase,
) -> LedgerTransfer {
    LedgerTransfer {
        id: id.to_string(),
        debit: debit.to_string(),
        credit: credit.to_string(),
        amount: Micros(amount),
        phase,
    }
}

pub(super) fn single(id: &str, debit: &str, credit: &str, amount: u64) -> LedgerTransfer {
    transfer(id, debit, credit, amount, Phase::Single)
}

pub(super) fn post(
    id: &str,
    pending: &str,
    debit: &str,
    credit: &str,
    amount: u64,
) -> LedgerTransfer {
    let phase = Phase::Post {
        pending_id: pending.to_string(),
    };
    transfer(id, debit, credit, amount, phase)
}

pub(super) fn void(
    id: &str,
    pending: &str,
    debit: &str,
    credit: &str,
    amount: u64,
) -> LedgerTransfer {
    let phase = Phase::Void {
        pending_id: pending.to_string(),
    };
    transfer(id, debit, credit, amount, phase)
}

pub(super) fn transfers(ledger: Vec<LedgerTransfer>) -> Batch {
    Batch {
        ledger,
        ..Batch::default()
    }
}

pub(super) fn event(id: &str) -> OutboxEvent {
    OutboxEvent {
        id: id.to_string(),
        tenant: "t1".to_string(),
        event_type: "widget.changed".to_string(),
        occurred_at: ts(1_000),
        payload: json!({ "event": id }),
    }
}

pub(super) fn idem(tenant: &str, key: &str, hash: &str) -> IdempotencyRecord {
    IdempotencyRecord {
        tenant: tenant.to_string(),
        key: key.to_string(),
        request_hash: hash.to_string(),
        response: json!({ "hash": hash }),
        created_at: ts(1_000),
    }
}

pub(super) async fn commit_ok<S: Store + ?Sized>(store: &S, batch: Batch, what: &str) {
    if let Err(e) = store.commit(batch).await {
        panic!("{what}: commit should succeed, got {e:?}");
    }
}

pub(super) async fn commit_err<S: Store + ?Sized>(
    store: &S,
    batch: Batch,
    what: &str,
) -> StoreError {
    match store.commit(batch).await {
        Ok(r) => panic!("{what}: commit should fail, got Ok({r:?})"),
        Err(e) => e,
    }
}

pub(super) async fn get<S: Store + ?Sized>(store: &S, id: &str) -> Option<StoredRecord> {
    store.get(KIND, id).await.expect("get")
}

/// The ids of a list's page, and its total.
pub(super) async fn list_ids<S: Store + ?Sized>(store: &S, query: ListQuery) -> (Vec<String>, u64) {
    let (page, total) = store.list(&query).await.expect("list");
    (page.into_iter().map(|r| r.id).collect(), total)
}

pub(super) async fn balance<S: Ledger + ?Sized>(store: &S, account: &str) -> Balance {
    store
        .balance(account)
        .await
        .unwrap_or_else(|e| panic!("balance of {account}: {e:?}"))
}

pub(super) async fn outbox_all<S: Store + ?Sized>(store: &S) -> Vec<(u64, OutboxEvent)> {
    store
        .outbox_after(0, usize::MAX)
        .await
        .expect("outbox_after")
}

pub(super) fn posted(credits: u64, debits: u64) -> Balance {
    Balance {
        debits_posted: debits,
        credits_posted: credits,
        debits_pending: 0,
        credits_pending: 0,
    }
}

/// Creates `world` (allow_negative) and `alice`, and funds alice with `funds`.
pub(super) async fn funded<S: Store + ?Sized>(store: &S, funds: u64) {
    let batch = Batch {
        accounts: vec![
            account("world", true),
            account("alice", false),
            account("bob", false),
        ],
        ledger: vec![single("fund-alice", "world", "alice", funds)],
        ..Batch::default()
    };
    commit_ok(store, batch, "funding alice").await;
}

pub(super) fn is_ledger(e: &StoreError, f: impl Fn(&LedgerError) -> bool) -> bool {
    matches!(e, StoreError::Ledger(l) if f(l))
}
