//! `MemoryStore`: an in-memory `Store` + `Ledger`, instrumented for engine tests.
//!
//! All state sits behind one `std::sync::Mutex` that is never held across an await (no
//! method awaits anything while holding it). A commit applies its batch in the order
//! `Store::commit` documents. The ledger part is decided by the shared rules
//! ([`crate::domain::ledger`], the same code the SQL stores run) over the store's own
//! maps, and merged only once every step of the batch has passed. The record steps
//! before it keep an undo log; on the first error the log is replayed backwards, so a
//! failed commit changes nothing and a commit costs O(batch), not O(database).
//!
//! Instrumentation (LDK `TestStore` style): [`MemoryStore::fail_next_commits`] makes the
//! next commits fail with `StoreError::Backend("injected failure")` without touching
//! anything, [`MemoryStore::commit_count`] counts successful commits,
//! [`MemoryStore::outbox_len`] counts outbox events.

use crate::domain::ledger::{AccountState, LedgerChanges, LedgerView, Overlay, TransferState};
use crate::domain::time::Timestamp;
use crate::ports::ledger::{
    AccountEntries, Balance, Ledger, LedgerEntry, LedgerError, LedgerResult, TimedEntry,
};
use crate::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, ListPosition, ListQuery, OutboxEvent, Purge,
    PurgeTarget, Put, Store, StoreError, StoredRecord,
};
use async_trait::async_trait;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

/// The error an injected failure returns.
pub const INJECTED_FAILURE: &str = "injected failure";

/// An in-memory `Store` and `Ledger`. Cheap to create; clone the `Arc` to share it.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    records: Records,
    ledger: MemoryLedger,
    /// Outbox event with sequence number `outbox_base + i + 1` at index `i`.
    outbox: std::collections::VecDeque<OutboxEvent>,
    /// Outbox events purged from the front ([`PurgeTarget::Outbox`]).
    outbox_base: u64,
    fail_next: usize,
    commits: u64,
    attempts: u64,
}

/// Records, their indexes and the idempotency records.
#[derive(Debug, Default)]
struct Records {
    /// kind -> its records and indexes.
    kinds: HashMap<String, KindTable>,
    /// unique key -> (kind, id) of the record holding it.
    unique: HashMap<String, (String, String)>,
    /// (tenant, key) -> record.
    idempotency: HashMap<(String, String), IdempotencyRecord>,
    /// (created_at, tenant, key) of every idempotency record: what a purge walks.
    idempotency_created: BTreeSet<(Timestamp, String, String)>,
}

/// What a list runs on (`ListQuery`): tenant and subkind.
type ListKey = (String, Option<String>);

/// One list, (created_at, id) ascending: a page walks it backwards, its length is the
/// total.
type ListIndex = BTreeSet<(Timestamp, String)>;

#[derive(Debug, Default)]
struct KindTable {
    records: HashMap<String, StoredRecord>,
    /// (tenant, subkind) -> its records, any status.
    lists: HashMap<ListKey, ListIndex>,
    /// ((tenant, subkind), status) -> its records in that status.
    by_status: HashMap<(ListKey, String), ListIndex>,
    /// (lane, due_at, id) of records with a due time.
    due: BTreeSet<(u8, Timestamp, String)>,
    /// (created_at, id) of every record: what a purge walks.
    created: BTreeSet<(Timestamp, String)>,
    /// id -> live or lapsed claim.
    claims: HashMap<String, Claim>,
}

#[derive(Clone, Debug)]
struct Claim {
    #[allow(dead_code)]
    worker: String,
    until: Timestamp,
}

/// The ledger rows: what the shared rules read ([`LedgerView`]) and what a kept batch's
/// [`LedgerChanges`] are merged into.
#[derive(Debug, Default)]
struct MemoryLedger {
    accounts: HashMap<String, Account>,
    transfers: HashMap<String, TransferState>,
    /// Every applied transfer, in order; accounts index into it.
    entries: Vec<LedgerEntry>,
    /// When each entry was committed (wall clock, never decreasing), by index.
    committed_at: Vec<Timestamp>,
}

#[derive(Debug)]
struct Account {
    state: AccountState,
    /// Indexes into `MemoryLedger::entries`, oldest first.
    history: Vec<usize>,
}

/// One record step to take back when a commit fails.
enum Undo {
    Record {
        kind: String,
        id: String,
        prev: Option<StoredRecord>,
    },
    Claim {
        kind: String,
        id: String,
        prev: Claim,
    },
    Idempotency((String, String)),
}

impl MemoryStore {
    /// An empty store; everything is lost when it drops.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next `n` commits fail with `StoreError::Backend("injected failure")` and
    /// change nothing. Replaces any count still pending.
    pub fn fail_next_commits(&self, n: usize) {
        self.lock_any().fail_next = n;
    }

    /// Successful commits so far.
    pub fn commit_count(&self) -> u64 {
        self.lock_any().commits
    }

    /// Commit calls so far, failed ones (injected or not) included.
    pub fn commit_attempts(&self) -> u64 {
        self.lock_any().attempts
    }

    /// Outbox events written so far (the highest sequence number).
    pub fn outbox_len(&self) -> usize {
        let state = self.lock_any();
        state.outbox_base as usize + state.outbox.len()
    }

    /// The lock, even if a panicking thread poisoned it (instrumentation only).
    fn lock_any(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.state
            .lock()
            .map_err(|_| StoreError::Backend("memory store lock poisoned".into()))
    }

    fn lock_ledger(&self) -> Result<MutexGuard<'_, State>, LedgerError> {
        self.state
            .lock()
            .map_err(|_| LedgerError::Backend("memory store lock poisoned".into()))
    }
}

impl State {
    fn apply(&mut self, batch: Batch, undo: &mut Vec<Undo>) -> Result<CommitReceipt, StoreError> {
        for check in &batch.unchanged {
            check.verify(
                self.records
                    .record(&check.kind, &check.id)
                    .map(|r| r.version),
            )?;
        }
        // The ledger part is decided over the rows as they stand and written last, once
        // nothing else can fail: a failing batch leaves no ledger change to undo.
        let mut ledger = Overlay::new(&self.ledger);
        for account in &batch.accounts {
            ledger.create_account(account)?;
        }
        if let Some(record) = batch.idempotency {
            let key = (record.tenant.clone(), record.key.clone());
            if self.records.idempotency.contains_key(&key) {
                return Err(StoreError::IdempotencyExists { key: record.key });
            }
            self.records.insert_idempotency(record);
            undo.push(Undo::Idempotency(key));
        }
        for put in batch.puts {
            self.records.put(put, undo)?;
        }
        for transfer in &batch.ledger {
            ledger.transfer(transfer)?;
        }
        let changes = ledger.into_changes();
        self.ledger.merge(changes);
        let mut outbox_seqs = Vec::with_capacity(batch.outbox.len());
        for event in batch.outbox {
            self.outbox.push_back(event);
            outbox_seqs.push(self.outbox_base + self.outbox.len() as u64);
        }
        Ok(CommitReceipt { outbox_seqs })
    }

    fn rollback(&mut self, undo: Vec<Undo>) {
        let records = &mut self.records;
        for step in undo.into_iter().rev() {
            match step {
                Undo::Record { kind, id, prev } => {
                    records.set_record(&kind, &id, prev);
                }
                Undo::Claim { kind, id, prev } => {
                    records
                        .kinds
                        .entry(kind)
                        .or_default()
                        .claims
                        .insert(id, prev);
                }
                Undo::Idempotency(key) => {
                    records.remove_idempotency(&key);
                }
            }
        }
    }
}

impl Records {
    fn record(&self, kind: &str, id: &str) -> Option<&StoredRecord> {
        self.kinds.get(kind)?.records.get(id)
    }

    /// Replaces a record (or removes it with `None`), keeping every index in step.
    /// Does not check unique keys: the caller has.
    fn set_record(
        &mut self,
        kind: &str,
        id: &str,
        new: Option<StoredRecord>,
    ) -> Option<StoredRecord> {
        let table = self.kinds.entry(kind.to_string()).or_default();
        let old = match &new {
            Some(rec) => table.records.insert(id.to_string(), rec.clone()),
            None => table.records.remove(id),
        };
        if let Some(old) = &old {
            table.unlist(old);
            table.created.remove(&(old.created_at, id.to_string()));
            if let Some(due) = old.due_at {
                table.due.remove(&(old.lane, due, id.to_string()));
            }
            for key in &old.unique_keys {
                if self
                    .unique
                    .get(key)
                    .is_some_and(|(k, i)| k == kind && i == id)
                {
                    self.unique.remove(key);
                }
            }
        }
        if let Some(rec) = &new {
            table.list(rec);
            table.created.insert((rec.created_at, id.to_string()));
            if let Some(due) = rec.due_at {
                table.due.insert((rec.lane, due, id.to_string()));
            }
            for key in &rec.unique_keys {
                self.unique
                    .insert(key.clone(), (kind.to_string(), id.to_string()));
            }
        }
        old
    }

    fn insert_idempotency(&mut self, record: IdempotencyRecord) {
        let (tenant, key) = (record.tenant.clone(), record.key.clone());
        self.idempotency_created
            .insert((record.created_at, tenant.clone(), key.clone()));
        self.idempotency.insert((tenant, key), record);
    }

    fn remove_idempotency(&mut self, key: &(String, String)) {
        if let Some(old) = self.idempotency.remove(key) {
            self.idempotency_created
                .remove(&(old.created_at, old.tenant, old.key));
        }
    }

    /// [`Store::purge`]: walks the creation-time index from the oldest entry and deletes
    /// up to `limit` rows the purge selects (a record with its keys and claim).
    fn purge(&mut self, purge: &Purge) -> u64 {
        match &purge.target {
            PurgeTarget::Idempotency => {
                let gone: Vec<(String, String)> = self
                    .idempotency_created
                    .iter()
                    .take_while(|(at, _, _)| *at < purge.before)
                    .take(purge.limit)
                    .map(|(_, tenant, key)| (tenant.clone(), key.clone()))
                    .collect();
                for key in &gone {
                    self.remove_idempotency(key);
                }
                gone.len() as u64
            }
            PurgeTarget::Records { kind, .. } => {
                let Some(table) = self.kinds.get(kind) else {
                    return 0;
                };
                let gone: Vec<String> = table
                    .created
                    .iter()
                    .take_while(|(at, _)| *at < purge.before)
                    .filter(|(_, id)| table.records.get(id).is_some_and(|r| purge.selects(r)))
                    .take(purge.limit)
                    .map(|(_, id)| id.clone())
                    .collect();
                for id in &gone {
                    self.set_record(kind, id, None);
                    if let Some(table) = self.kinds.get_mut(kind) {
                        table.claims.remove(id);
                    }
                }
                gone.len() as u64
            }
            // The outbox is the store's, not the records' (`MemoryStore::purge`).
            PurgeTarget::Outbox { .. } => 0,
        }
    }

    fn put(&mut self, put: Put, undo: &mut Vec<Undo>) -> Result<(), StoreError> {
        let Put {
            mut record,
            expected_version,
        } = put;
        let current = self.record(&record.kind, &record.id).map(|r| r.version);
        // Fixed at insert (`Store::commit`): an update keeps the stored ones.
        if let Some(old) = self.record(&record.kind, &record.id) {
            record.tenant = old.tenant.clone();
            record.created_at = old.created_at;
            record.subkind = old.subkind.clone();
        }
        let conflict = || StoreError::VersionConflict {
            kind: record.kind.clone(),
            id: record.id.clone(),
        };
        let version = match (expected_version, current) {
            (None, None) => 1,
            (Some(expected), Some(current)) if expected == current => current + 1,
            _ => return Err(conflict()),
        };
        for key in &record.unique_keys {
            if let Some((kind, id)) = self.unique.get(key)
                && (kind != &record.kind || id != &record.id)
            {
                return Err(StoreError::UniqueViolation { key: key.clone() });
            }
        }
        record.version = version;
        // Duplicate keys inside one record would make the index disagree on removal.
        let mut seen = HashSet::new();
        record.unique_keys.retain(|k| seen.insert(k.clone()));
        let kind = record.kind.clone();
        let id = record.id.clone();
        let prev = self.set_record(&kind, &id, Some(record));
        undo.push(Undo::Record {
            kind: kind.clone(),
            id: id.clone(),
            prev,
        });
        if let Some(table) = self.kinds.get_mut(&kind)
            && let Some(claim) = table.claims.remove(&id)
        {
            undo.push(Undo::Claim {
                kind,
                id,
                prev: claim,
            });
        }
        Ok(())
    }
}

impl KindTable {
    /// Adds a record to the lists it belongs to (only tenant-scoped records are listed).
    fn list(&mut self, rec: &StoredRecord) {
        let Some(tenant) = &rec.tenant else { return };
        let key = (tenant.clone(), rec.subkind.clone());
        let entry = (rec.created_at, rec.id.clone());
        if let Some(status) = &rec.status {
            let by_status = self.by_status.entry((key.clone(), status.clone()));
            by_status.or_default().insert(entry.clone());
        }
        self.lists.entry(key).or_default().insert(entry);
    }

    /// Removes a record from its lists, dropping lists left empty.
    fn unlist(&mut self, rec: &StoredRecord) {
        let Some(tenant) = &rec.tenant else { return };
        let key = (tenant.clone(), rec.subkind.clone());
        let entry = (rec.created_at, rec.id.clone());
        if let Some(status) = &rec.status {
            let status_key = (key.clone(), status.clone());
            if let Some(set) = self.by_status.get_mut(&status_key) {
                set.remove(&entry);
                if set.is_empty() {
                    self.by_status.remove(&status_key);
                }
            }
        }
        if let Some(set) = self.lists.get_mut(&key) {
            set.remove(&entry);
            if set.is_empty() {
                self.lists.remove(&key);
            }
        }
    }

    /// The index a query runs on, if it has any record.
    fn index(&self, query: &ListQuery) -> Option<&ListIndex> {
        let key = (query.tenant.clone(), query.subkind.clone());
        match &query.status {
            None => self.lists.get(&key),
            Some(status) => self.by_status.get(&(key, status.clone())),
        }
    }
}

impl LedgerView for MemoryLedger {
    fn account(&self, id: &str) -> Result<Option<AccountState>, LedgerError> {
        Ok(self.accounts.get(id).map(|a| a.state))
    }

    fn transfer(&self, id: &str) -> Result<Option<&TransferState>, LedgerError> {
        Ok(self.transfers.get(id))
    }
}

impl MemoryLedger {
    fn account(&self, id: &str) -> LedgerResult<&Account> {
        self.accounts
            .get(id)
            .ok_or_else(|| LedgerError::unknown_account(id))
    }

    fn balance(&self, id: &str) -> LedgerResult<Balance> {
        Ok(self.account(id)?.state.balance)
    }

    /// The account's entries, oldest first, from `skip`, at most `take`.
    fn history(&self, id: &str, skip: usize, take: usize) -> LedgerResult<Vec<LedgerEntry>> {
        let entries = self.account(id)?.history.iter().skip(skip).take(take);
        Ok(entries.map(|&i| self.entries[i].clone()).collect())
    }

    /// The balance and the entries committed at or after `since`, oldest first.
    fn entries_since(&self, id: &str, since: Option<Timestamp>) -> LedgerResult<AccountEntries> {
        let account = self.account(id)?;
        let first = match since {
            None => 0,
            Some(t) => account
                .history
                .partition_point(|&i| self.committed_at[i] < t),
        };
        Ok(AccountEntries {
            balance: account.state.balance,
            entries: account.history[first..]
                .iter()
                .map(|&i| TimedEntry {
                    entry: self.entries[i].clone(),
                    committed_at: Some(self.committed_at[i]),
                })
                .collect(),
            timed: true,
        })
    }

    fn posted_sum(&self) -> i128 {
        self.accounts
            .values()
            .map(|a| a.state.balance.posted())
            .sum()
    }

    /// Writes a kept batch's ledger decisions: account states, then the new transfers
    /// in order (each an entry in both accounts' histories), then resolutions.
    fn merge(&mut self, changes: LedgerChanges) {
        for change in changes.accounts {
            match self.accounts.get_mut(&change.id) {
                Some(account) => account.state = change.state,
                None => {
                    self.accounts.insert(
                        change.id,
                        Account {
                            state: change.state,
                            history: Vec::new(),
                        },
                    );
                }
            }
        }
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let stamp = Timestamp::from_millis(wall).max(
            self.committed_at
                .last()
                .copied()
                .unwrap_or(Timestamp::from_millis(0)),
        );
        for t in changes.new_transfers {
            let index = self.entries.len();
            self.committed_at.push(stamp);
            let transfer = &t.transfer;
            self.entries.push(LedgerEntry {
                transfer_id: transfer.id.clone(),
                debit: transfer.debit.clone(),
                credit: transfer.credit.clone(),
                amount: transfer.amount,
                phase: transfer.phase.clone(),
            });
            for account in [&transfer.debit, &transfer.credit] {
                if let Some(a) = self.accounts.get_mut(account) {
                    a.history.push(index);
                }
            }
            self.transfers.insert(transfer.id.clone(), t);
        }
        for id in changes.resolved {
            if let Some(t) = self.transfers.get_mut(&id) {
                t.resolved = true;
            }
        }
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        let mut state = self.lock()?;
        state.attempts += 1;
        if state.fail_next > 0 {
            state.fail_next -= 1;
            return Err(StoreError::Backend(INJECTED_FAILURE.into()));
        }
        let mut undo = Vec::new();
        match state.apply(batch, &mut undo) {
            Ok(receipt) => {
                state.commits += 1;
                Ok(receipt)
            }
            Err(e) => {
                state.rollback(undo);
                Err(e)
            }
        }
    }

    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError> {
        Ok(self.lock()?.records.record(kind, id).cloned())
    }

    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError> {
        let state = self.lock()?;
        let records = &state.records;
        Ok(records
            .unique
            .get(key)
            .and_then(|(kind, id)| records.record(kind, id))
            .cloned())
    }

    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        let state = self.lock()?;
        let Some(table) = state.records.kinds.get(&query.kind) else {
            return Ok((Vec::new(), 0));
        };
        let Some(index) = table.index(query) else {
            return Ok((Vec::new(), 0));
        };
        let page = index
            .iter()
            .rev()
            .skip(query.offset)
            .take(query.limit)
            .filter_map(|(_, id)| table.records.get(id).cloned())
            .collect();
        Ok((page, index.len() as u64))
    }

    /// One range of the list's ordered set, like the SQL stores' index ranges.
    async fn list_before(
        &self,
        query: &ListQuery,
        before: Option<&ListPosition>,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let state = self.lock()?;
        let Some(table) = state.records.kinds.get(&query.kind) else {
            return Ok(Vec::new());
        };
        let Some(index) = table.index(query) else {
            return Ok(Vec::new());
        };
        let ids: Box<dyn Iterator<Item = &(Timestamp, String)>> = match before {
            None => Box::new(index.iter().rev()),
            Some(p) => Box::new(index.range(..(p.created_at, p.id.clone())).rev()),
        };
        Ok(ids
            .take(query.limit)
            .filter_map(|(_, id)| table.records.get(id).cloned())
            .collect())
    }

    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        Ok(self
            .lock()?
            .records
            .idempotency
            .get(&(tenant.to_string(), key.to_string()))
            .cloned())
    }

    async fn claim_due(
        &self,
        kind: &str,
        lane: u8,
        worker: &str,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let mut state = self.lock()?;
        let Some(table) = state.records.kinds.get_mut(kind) else {
            return Ok(Vec::new());
        };
        let mut claimed = Vec::new();
        let lane_start = (lane, Timestamp(i64::MIN), String::new());
        for (l, due, id) in table.due.range(lane_start..) {
            if *l != lane || claimed.len() >= limit || *due > now {
                break;
            }
            if table.claims.get(id).is_some_and(|c| c.until > now) {
                continue;
            }
            claimed.push(id.clone());
        }
        let until = now.plus_millis(lease_ms);
        let mut out = Vec::with_capacity(claimed.len());
        for id in claimed {
            table.claims.insert(
                id.clone(),
                Claim {
                    worker: worker.to_string(),
                    until,
                },
            );
            out.push(table.records[&id].clone());
        }
        Ok(out)
    }

    async fn outbox_after(
        &self,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEvent)>, StoreError> {
        let state = self.lock()?;
        let start = usize::try_from(after_seq.saturating_sub(state.outbox_base))
            .unwrap_or(usize::MAX)
            .min(state.outbox.len());
        Ok(state
            .outbox
            .iter()
            .skip(start)
            .take(limit)
            .enumerate()
            .map(|(i, e)| (state.outbox_base + (start + i + 1) as u64, e.clone()))
            .collect())
    }

    async fn purge(&self, purge: &Purge) -> Result<u64, StoreError> {
        let mut state = self.lock()?;
        let PurgeTarget::Outbox { through_seq } = purge.target else {
            return Ok(state.records.purge(purge));
        };
        let mut gone = 0;
        while gone < purge.limit
            && state.outbox_base < through_seq
            && state
                .outbox
                .front()
                .is_some_and(|e| e.occurred_at < purge.before)
        {
            state.outbox.pop_front();
            state.outbox_base += 1;
            gone += 1;
        }
        Ok(gone as u64)
    }
}

#[async_trait]
impl Ledger for MemoryStore {
    async fn balance(&self, account: &str) -> LedgerResult<Balance> {
        self.lock_ledger()?.ledger.balance(account)
    }

    async fn history(&self, id: &str, skip: usize, take: usize) -> LedgerResult<Vec<LedgerEntry>> {
        self.lock_ledger()?.ledger.history(id, skip, take)
    }

    async fn entries_since(
        &self,
        account: &str,
        since: Option<Timestamp>,
    ) -> LedgerResult<AccountEntries> {
        self.lock_ledger()?.ledger.entries_since(account, since)
    }

    async fn posted_sum(&self) -> LedgerResult<i128> {
        Ok(self.lock_ledger()?.ledger.posted_sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::ledger::LedgerAccount;
    use crate::testkit;
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn memory_store_passes_conformance_suite() {
        testkit::store_suite(|| async { Arc::new(MemoryStore::new()) }).await;
    }

    #[tokio::test]
    async fn fail_next_commits_fails_then_recovers() {
        let store = MemoryStore::new();
        let batch = Batch {
            accounts: vec![LedgerAccount {
                id: "a".into(),
                allow_negative: true,
            }],
            outbox: vec![OutboxEvent {
                id: "evt_1".into(),
                tenant: "t".into(),
                event_type: "x".into(),
                occurred_at: Timestamp::from_millis(1),
                payload: serde_json::json!({}),
            }],
            ..Batch::default()
        };
        store.fail_next_commits(2);
        for _ in 0..2 {
            let err = store.commit(batch.clone()).await.unwrap_err();
            assert_eq!(err, StoreError::Backend(INJECTED_FAILURE.into()));
            assert_eq!(err.code(), "STORAGE_ERROR");
        }
        assert_eq!(store.commit_count(), 0);
        assert_eq!(store.commit_attempts(), 2);
        assert_eq!(store.outbox_len(), 0);
        assert!(store.balance("a").await.is_err());

        let receipt = store.commit(batch).await.unwrap();
        assert_eq!(receipt.outbox_seqs, vec![1]);
        assert_eq!(store.commit_count(), 1);
        assert_eq!(store.commit_attempts(), 3);
        assert_eq!(store.outbox_len(), 1);
        assert_eq!(store.balance("a").await.unwrap(), Balance::default());
    }
}
