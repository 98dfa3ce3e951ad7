//! One group between BEGIN and COMMIT: load what the cache lacks, decide each batch's
//! ledger part in memory, run its SQL (in a savepoint where it could fail after
//! writing), then flush the ledger and outbox rows of the kept batches.

use super::prepared::{Prepared, PreparedOutbox};
use super::purge::purge;
use super::records::{check_unchanged, claim_due, put_record};
use super::{Cache, Output, Work, exec};
use crate::codec::{i64_to_db, phase_from_db, phase_to_db, sort_dedup, u64_from_db};
use crate::sqlite::{backend, balance_from_sums};
use rusqlite::{Connection, OptionalExtension, params};
use stablecoin_core::domain::ledger::{
    AccountState, LedgerChanges, Overlay, TransferState, needed_ids,
};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::ports::ledger::LedgerTransfer;
use stablecoin_core::ports::store::{CommitReceipt, StoreError};
use std::collections::HashSet;

/// Ledger and outbox writes of the group's kept batches, flushed once before COMMIT.
#[derive(Default)]
struct GroupWrites<'g> {
    dirty_accounts: Vec<String>,
    dirty_set: HashSet<String>,
    /// Transfers applied in this group, in order (final state is in the cache).
    new_transfers: Vec<String>,
    new_set: HashSet<String>,
    /// Pending transfers from before this group that it posted or voided.
    resolved_before: Vec<String>,
    /// The kept batches' events with the sequence numbers they were given (borrowed from
    /// the batches, which live until the group is answered).
    outbox: Vec<(i64, &'g PreparedOutbox)>,
}

impl GroupWrites<'_> {
    fn take(&mut self, changes: &LedgerChanges) {
        for a in &changes.accounts {
            if self.dirty_set.insert(a.id.clone()) {
                self.dirty_accounts.push(a.id.clone());
            }
        }
        for t in &changes.new_transfers {
            self.new_set.insert(t.transfer.id.clone());
            self.new_transfers.push(t.transfer.id.clone());
        }
        for id in &changes.resolved {
            if !self.new_set.contains(id) {
                self.resolved_before.push(id.clone());
            }
        }
    }
}

pub(super) fn group_body(
    conn: &Connection,
    cache: &mut Cache,
    works: &[Work],
) -> Result<Vec<Result<Output, StoreError>>, StoreError> {
    prefetch(conn, cache, works)?;
    let mut writes = GroupWrites::default();
    let mut results = Vec::with_capacity(works.len());
    for work in works {
        let result = match work {
            Work::Commit(batch) => {
                let ledger = check_ledger(cache, batch);
                let savepoint = needs_savepoint(batch, &ledger);
                if savepoint {
                    exec(conn, "SAVEPOINT op")?;
                }
                match apply_batch(conn, cache, batch, ledger)? {
                    Ok((receipt, changes)) => {
                        if savepoint {
                            exec(conn, "RELEASE op")?;
                        }
                        cache.known.merge(&changes);
                        writes.take(&changes);
                        if !batch.outbox.is_empty() {
                            let first = cache.next_outbox_seq.unwrap_or(1);
                            writes.outbox.extend((first..).zip(&batch.outbox));
                            cache.next_outbox_seq = Some(first + batch.outbox.len() as i64);
                        }
                        Ok(Output::Commit(receipt))
                    }
                    Err(e) => {
                        if savepoint {
                            exec(conn, "ROLLBACK TO op")?;
                            exec(conn, "RELEASE op")?;
                        }
                        Err(e)
                    }
                }
            }
            // One statement: atomic by itself.
            Work::Claim(claim) => Ok(Output::Claim(claim_due(conn, claim)?)),
            // Its statements run in this group's transaction: its deletes go together.
            Work::Purge(p) => Ok(Output::Purge(purge(conn, p)?)),
        };
        results.push(result);
    }
    flush(conn, cache, &writes)?;
    Ok(results)
}

/// Loads what the group's batches may touch and the cache lacks.
fn prefetch(conn: &Connection, cache: &mut Cache, works: &[Work]) -> Result<(), StoreError> {
    let mut accounts = Vec::new();
    let mut transfers = Vec::new();
    let mut outbox = false;
    for work in works {
        if let Work::Commit(batch) = work {
            needed_ids(
                &batch.accounts,
                &batch.ledger,
                &mut accounts,
                &mut transfers,
            );
            outbox |= !batch.outbox.is_empty();
        }
    }
    accounts.retain(|id| !cache.known.accounts.contains_key(id));
    sort_dedup(&mut accounts);
    sort_dedup(&mut transfers);
    if !accounts.is_empty() {
        load_accounts(conn, cache, accounts)?;
    }
    if !transfers.is_empty() {
        load_transfers(conn, cache, transfers)?;
    }
    if outbox && cache.next_outbox_seq.is_none() {
        cache.next_outbox_seq = Some(
            conn.prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox")
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .map_err(backend)?,
        );
    }
    Ok(())
}

/// Caches these accounts: `None` for one that does not exist.
fn load_accounts(
    conn: &Connection,
    cache: &mut Cache,
    accounts: Vec<String>,
) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT allow_negative, debits_posted, credits_posted, debits_pending, \
             credits_pending FROM ledger_accounts WHERE id = ?1",
        )
        .map_err(backend)?;
    for id in accounts {
        let state = stmt
            .query_row([&id], |r| {
                Ok((
                    r.get::<_, bool>(0)?,
                    [r.get::<_, i64>(1)?, r.get(2)?, r.get(3)?, r.get(4)?],
                ))
            })
            .optional()
            .map_err(backend)?
            .map(|(allow_negative, sums)| {
                Ok::<_, StoreError>(AccountState {
                    allow_negative,
                    balance: balance_from_sums(sums).map_err(backend)?,
                })
            })
            .transpose()?;
        cache.known.accounts.insert(id, state);
    }
    Ok(())
}

/// Caches these transfers (`None` for one that does not exist), and the next transfer
/// sequence number once.
fn load_transfers(
    conn: &Connection,
    cache: &mut Cache,
    transfers: Vec<String>,
) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT t.id, d.id, c.id, t.amount, t.phase, t.pending_id, t.resolved \
             FROM ledger_transfers t CROSS JOIN ledger_accounts d CROSS JOIN ledger_accounts c \
             WHERE t.id = ?1 AND d.num = t.debit AND c.num = t.credit",
        )
        .map_err(backend)?;
    for id in transfers {
        let state = stmt
            .query_row([&id], transfer_from_row)
            .optional()
            .map_err(backend)?
            .transpose()
            .map_err(backend)?;
        cache.known.transfers.insert(id, state);
    }
    if cache.next_transfer_seq.is_none() {
        cache.next_transfer_seq = Some(
            conn.prepare_cached("SELECT value FROM ledger_meta WHERE key = 'next_transfer_seq'")
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .map_err(backend)?,
        );
    }
    if cache.ledger_clock.is_none() {
        cache.ledger_clock = Some(
            conn.prepare_cached("SELECT value FROM ledger_meta WHERE key = 'ledger_clock'")
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .map_err(backend)?,
        );
    }
    Ok(())
}

/// A `ledger_transfers` row; the inner `Err` is a corrupt row.
fn transfer_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<TransferState, String>> {
    let amount: i64 = row.get(3)?;
    let phase: String = row.get(4)?;
    let pending_id: Option<String> = row.get(5)?;
    let (id, debit, credit, resolved) = (row.get(0)?, row.get(1)?, row.get(2)?, row.get(6)?);
    Ok((|| {
        Ok(TransferState {
            transfer: LedgerTransfer {
                id,
                debit,
                credit,
                amount: Micros(u64_from_db(amount, "amount")?),
                phase: phase_from_db(&phase, pending_id)?,
            },
            resolved,
        })
    })())
}

type Applied = (CommitReceipt, LedgerChanges);

/// Applies one batch in the order `Store::commit` documents: accounts, idempotency
/// record, puts, ledger transfers, outbox. The outer `Err` is a SQL failure (the group
/// fails); the inner one is the batch's own typed error (nothing of the batch is left:
/// it failed before writing, or inside its savepoint, see `needs_savepoint`).
fn apply_batch(
    conn: &Connection,
    cache: &Cache,
    batch: &Prepared,
    ledger: LedgerCheck,
) -> Result<Result<Applied, StoreError>, StoreError> {
    // The order in which a failing batch reports its first failure: version checks,
    // accounts, idempotency record, puts, ledger transfers.
    for check in &batch.unchanged {
        if let Err(e) = check_unchanged(conn, check)? {
            return Ok(Err(e));
        }
    }
    let transfers = match ledger {
        LedgerCheck::Accounts(e) => return Ok(Err(e)),
        LedgerCheck::Transfers(result) => result,
    };
    // The key is looked up first (a read) and recorded after the puts: a recorded key
    // still fails the batch before anything is written, and no step after a write can
    // fail on it (this thread alone writes, inside the group's transaction, so nothing
    // records the key in between). A keyed batch with one put so needs no savepoint
    // (`needs_savepoint`): the savepoint's two statements and its statement-journal
    // copies were a large part of what a keyed send cost the writer over an unkeyed one
    // (issue 47).
    if let Err(e) = idempotency_unrecorded(conn, batch)? {
        return Ok(Err(e));
    }
    for put in &batch.puts {
        if let Err(e) = put_record(conn, put)? {
            return Ok(Err(e));
        }
    }
    let changes = match transfers {
        Ok(changes) => changes,
        Err(e) => return Ok(Err(e)),
    };
    // Last: nothing of the batch can fail after it.
    insert_idempotency(conn, batch)?;
    // The numbers the group gives this batch's events if it is kept (`group_body`).
    let first_seq = cache.next_outbox_seq.unwrap_or(1);
    let outbox_seqs = (first_seq..)
        .take(batch.outbox.len())
        .map(|seq| seq as u64)
        .collect();
    Ok(Ok((CommitReceipt { outbox_seqs }, changes)))
}

/// `IdempotencyExists` (the inner `Err`) when the batch's key is already recorded; the
/// outer `Err` is a SQL failure.
fn idempotency_unrecorded(
    conn: &Connection,
    batch: &Prepared,
) -> Result<Result<(), StoreError>, StoreError> {
    let Some(idem) = &batch.idempotency else {
        return Ok(Ok(()));
    };
    let recorded = conn
        .prepare_cached("SELECT 1 FROM idempotency WHERE tenant = ?1 AND key = ?2")
        .and_then(|mut s| s.exists(params![idem.tenant, idem.key]))
        .map_err(backend)?;
    if recorded {
        return Ok(Err(StoreError::IdempotencyExists {
            key: idem.key.clone(),
        }));
    }
    Ok(Ok(()))
}

/// Records the batch's idempotency key (checked unrecorded by `idempotency_unrecorded`
/// in the same transaction). A conflict here would mean the check was wrong: an error
/// of the whole group (its transaction is rolled back), never a half-written batch.
fn insert_idempotency(conn: &Connection, batch: &Prepared) -> Result<(), StoreError> {
    let Some(idem) = &batch.idempotency else {
        return Ok(());
    };
    let inserted = conn
        .prepare_cached(
            "INSERT INTO idempotency (tenant, key, request_hash, response, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![
                idem.tenant,
                idem.key,
                idem.request_hash,
                idem.response,
                idem.created_at
            ])
        })
        .map_err(backend)?;
    if inserted == 0 {
        return Err(StoreError::Backend(format!(
            "idempotency key {} recorded during its own batch",
            idem.key
        )));
    }
    Ok(())
}

/// The batch's ledger part decided in memory, before any of its SQL runs: an account it
/// may not create, or its transfers' outcome.
enum LedgerCheck {
    Accounts(StoreError),
    Transfers(Result<LedgerChanges, StoreError>),
}

fn check_ledger(cache: &Cache, batch: &Prepared) -> LedgerCheck {
    let mut overlay = Overlay::new(&cache.known);
    for account in &batch.accounts {
        if let Err(e) = overlay.create_account(account) {
            return LedgerCheck::Accounts(e.into());
        }
    }
    for transfer in &batch.ledger {
        if let Err(e) = overlay.transfer(transfer) {
            return LedgerCheck::Transfers(Err(e.into()));
        }
    }
    LedgerCheck::Transfers(Ok(overlay.into_changes()))
}

/// Whether the batch's SQL needs a savepoint: only if it can fail after writing. Each
/// put fails, if at all, before it writes; the idempotency key is checked before the
/// first write and recorded last (`apply_batch`); the ledger outcome is already known.
/// So a batch with one put and good ledger transfers (an accepted send, keyed or not,
/// every worker step) writes without one, which saves a copy of every page it touches
/// into the statement journal (~3% of the writer's samples) and two statements.
fn needs_savepoint(batch: &Prepared, ledger: &LedgerCheck) -> bool {
    let steps = batch.puts.len();
    match ledger {
        LedgerCheck::Accounts(_) => false,
        LedgerCheck::Transfers(Ok(_)) => steps > 1,
        LedgerCheck::Transfers(Err(_)) => steps > 0,
    }
}

/// Writes the ledger and outbox changes of every kept batch, a prepared statement per
/// row (no SQL text is built per group).
fn flush(conn: &Connection, cache: &mut Cache, writes: &GroupWrites) -> Result<(), StoreError> {
    if !writes.dirty_accounts.is_empty() {
        flush_accounts(conn, cache, &writes.dirty_accounts)?;
    }
    if !writes.new_transfers.is_empty() {
        flush_transfers(conn, cache, &writes.new_transfers)?;
    }
    if !writes.resolved_before.is_empty() {
        let mut stmt = conn
            .prepare_cached("UPDATE ledger_transfers SET resolved = 1 WHERE id = ?1")
            .map_err(backend)?;
        for id in &writes.resolved_before {
            stmt.execute([id]).map_err(backend)?;
        }
    }
    if !writes.outbox.is_empty() {
        flush_outbox(conn, &writes.outbox)?;
    }
    Ok(())
}

/// A row the group changed is not in the cache: a bug in the writer, never data.
fn missing(what: &str, id: &str) -> StoreError {
    backend(format!("internal: {what} {id} not cached"))
}

/// Upserts the final state of every account the group created or changed.
fn flush_accounts(conn: &Connection, cache: &Cache, ids: &[String]) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO ledger_accounts (id, allow_negative, debits_posted, \
               credits_posted, debits_pending, credits_pending) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT (id) DO UPDATE SET debits_posted = excluded.debits_posted, \
               credits_posted = excluded.credits_posted, \
               debits_pending = excluded.debits_pending, \
               credits_pending = excluded.credits_pending",
        )
        .map_err(backend)?;
    for id in ids {
        let Some(Some(a)) = cache.known.accounts.get(id) else {
            return Err(missing("account", id));
        };
        let b = a.balance;
        stmt.execute(params![
            id,
            a.allow_negative,
            i64_to_db(b.debits_posted),
            i64_to_db(b.credits_posted),
            i64_to_db(b.debits_pending),
            i64_to_db(b.credits_pending)
        ])
        .map_err(backend)?;
    }
    Ok(())
}

/// Inserts the group's transfers in order, numbered from the next transfer sequence
/// number, and moves that number past them.
fn flush_transfers(conn: &Connection, cache: &mut Cache, ids: &[String]) -> Result<(), StoreError> {
    let first_seq = cache.next_transfer_seq.unwrap_or(1);
    // One stamp for the group, never before the last one (a clock stepped back must
    // not reorder the ledger's time against its sequence).
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let committed_at = wall.max(cache.ledger_clock.unwrap_or(0));
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO ledger_transfers (id, seq, debit, credit, amount, phase, \
               pending_id, resolved, committed_at) VALUES (?1, ?2, \
               (SELECT num FROM ledger_accounts WHERE id = ?3), \
               (SELECT num FROM ledger_accounts WHERE id = ?4), ?5, ?6, ?7, ?8, ?9)",
        )
        .map_err(backend)?;
    for (seq, id) in (first_seq..).zip(ids) {
        let Some(Some(t)) = cache.known.transfers.get(id) else {
            return Err(missing("transfer", id));
        };
        let (phase, pending_id) = phase_to_db(&t.transfer.phase);
        stmt.execute(params![
            t.transfer.id,
            seq,
            t.transfer.debit,
            t.transfer.credit,
            i64_to_db(t.transfer.amount.0),
            phase,
            pending_id,
            t.resolved,
            committed_at
        ])
        .map_err(backend)?;
    }
    let next_seq = first_seq + ids.len() as i64;
    conn.prepare_cached(
        "UPDATE ledger_meta SET value = CASE key WHEN 'next_transfer_seq' THEN ?1 ELSE ?2 END \
         WHERE key IN ('next_transfer_seq', 'ledger_clock')",
    )
    .and_then(|mut s| s.execute([next_seq, committed_at]))
    .map_err(backend)?;
    cache.next_transfer_seq = Some(next_seq);
    cache.ledger_clock = Some(committed_at);
    Ok(())
}

/// Inserts the kept batches' events with the sequence numbers they were given.
fn flush_outbox(conn: &Connection, outbox: &[(i64, &PreparedOutbox)]) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO outbox (seq, id, tenant, event_type, occurred_at, payload) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(backend)?;
    for (seq, e) in outbox {
        stmt.execute(params![
            seq,
            e.id,
            e.tenant,
            e.event_type,
            e.occurred_at,
            e.payload
        ])
        .map_err(backend)?;
    }
    Ok(())
}
