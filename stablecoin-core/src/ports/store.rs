//! `Store`: durable records, committed all-or-nothing with the ledger, the outbox and the
//! idempotency record of one decision (ARCHITECTURE §5).
//!
//! Records are typed in the engine (`crate::ports::record::Record`) and stored here as
//! JSON bodies with a little metadata that every backend can index: kind, subkind, id,
//! tenant, version, creation time, status, due time and unique keys. That keeps the trait
//! dyn-compatible and lets a SQL backend use one table, while the engine stays typed.

use crate::domain::time::Timestamp;
use crate::ports::ledger::{LedgerAccount, LedgerError, LedgerTransfer};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One stored record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredRecord {
    /// Record kind (`"wallet"`, `"operation"`, ...).
    pub kind: String,
    /// Unique within its kind.
    pub id: String,
    /// Owning tenant, for tenant-scoped lists. `None` for system-wide records (wallets).
    pub tenant: Option<String>,
    /// 1 on insert, +1 on every update. Set by the store on commit.
    pub version: u64,
    /// Creation time; lists are newest first by it, then by id.
    pub created_at: Timestamp,
    /// Filterable status (`"QUEUED"`, `"pending"`, ...).
    pub status: Option<String>,
    /// A second-level kind that lists select on (an operation's op kind: `"transfer"`,
    /// `"funding"`, ...), or `None` for a kind that has none. See [`ListQuery::subkind`].
    pub subkind: Option<String>,
    /// When a background worker should next look at it; `None` = not due.
    pub due_at: Option<Timestamp>,
    /// The claim queue it is due in ([`Store::claim_due`]): 0 for kinds without stages.
    pub lane: u8,
    /// Globally unique index entries (`"wallet_phone:+225..."`). A commit that would give
    /// one key to two records fails with `UniqueViolation`.
    pub unique_keys: Vec<String>,
    /// The typed record as JSON.
    pub body: JsonText,
}

/// A record's body: JSON text, kept as text from the engine's serializer to the
/// database column and back, or the compact form a store kept it in
/// ([`super::compact`]), decoded straight into the record's type.
///
/// Why not a `serde_json::Value`: a tree costs a pass and an allocation per node each
/// way. A typed record written through a tree is serialized twice (struct -> tree ->
/// text on the way in) and parsed twice (text -> tree -> struct on the way out), and a
/// profile of the server under send load had those passes at ~17% of the API threads'
/// CPU. As text it is one `to_string` in and one `from_str` out; in the compact form it
/// is one pass over fewer bytes (issue 47: turning compact bodies into text for
/// `from_str` to parse was most of the codec's cost in the settlement worker).
///
/// A body read back from a store is not parsed again until it is decoded: a corrupt
/// body fails there, naming its record ([`crate::ports::record::Record::from_stored`]).
/// Equality is of the JSON values, not of the text: a body built from a `Value` (keys
/// sorted) and one encoded from a struct (keys in field order) can hold the same value.
#[derive(Clone)]
pub struct JsonText(Body);

#[derive(Clone)]
enum Body {
    Text(String),
    /// The compact form.
    Compact(Vec<u8>),
}

/// A body as a store keeps it: what [`JsonText::into_stored`] hands a store that can
/// keep either form.
pub enum StoredBody {
    /// JSON text.
    Text(String),
    /// The compact form ([`super::compact`]).
    Compact(Vec<u8>),
}

impl JsonText {
    /// `value`'s body: its compact form ([`super::compact::to_vec`]), or its JSON text
    /// when the compact form does not take it (a float, an integer beyond 64 bits).
    ///
    /// Why compact for every store: a store that keeps compact bodies (SQLite) then
    /// writes the bytes as they are, where it used to parse the engine's JSON text to
    /// encode it (with the serialization, ~7% of a settled transfer's CPU, issue 47);
    /// a store that keeps text (PostgreSQL) asks for [`JsonText::text`], one decode per
    /// write, small beside its round trips; the memory store decodes either form.
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Self> {
        match super::compact::to_vec(value) {
            Some(bytes) => Ok(JsonText(Body::Compact(bytes))),
            None => serde_json::to_string(value).map(|t| JsonText(Body::Text(t))),
        }
    }

    /// Text a store wrote from a `JsonText` and read back.
    pub fn from_stored_text(text: String) -> Self {
        JsonText(Body::Text(text))
    }

    /// A compact body a store wrote ([`JsonText::into_stored`]) and read back. Not
    /// checked here: a corrupt one fails where it is decoded.
    pub fn from_stored_compact(bytes: Vec<u8>) -> Self {
        JsonText(Body::Compact(bytes))
    }

    /// The body as the type it was written from.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        match &self.0 {
            Body::Text(t) => serde_json::from_str(t),
            Body::Compact(bytes) => super::compact::from_slice(bytes),
        }
    }

    /// The body as a JSON tree (for code that inspects untyped bodies).
    pub fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        self.decode()
    }

    /// The JSON text (a compact body is decoded to it). A corrupt compact body reads as
    /// the empty string, which no JSON parser accepts.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match &self.0 {
            Body::Text(t) => std::borrow::Cow::Borrowed(t),
            Body::Compact(bytes) => {
                std::borrow::Cow::Owned(super::compact::to_text(bytes).unwrap_or_default())
            }
        }
    }

    /// The body for a store that keeps compact bodies: the compact form (encoded now
    /// from text, or as it was read: a record written back unchanged is not decoded and
    /// encoded again), or the text when the format does not take it
    /// ([`super::compact::encode`]).
    pub fn into_stored(self) -> StoredBody {
        match self.0 {
            Body::Compact(bytes) => StoredBody::Compact(bytes),
            Body::Text(t) => match super::compact::encode(&t) {
                Some(bytes) => StoredBody::Compact(bytes),
                None => StoredBody::Text(t),
            },
        }
    }
}

impl From<serde_json::Value> for JsonText {
    fn from(value: serde_json::Value) -> Self {
        JsonText::from(&value)
    }
}

impl From<&serde_json::Value> for JsonText {
    fn from(value: &serde_json::Value) -> Self {
        JsonText(Body::Text(value.to_string()))
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Body::Text(a), Body::Text(b)) if a == b => return true,
            (Body::Compact(a), Body::Compact(b)) if a == b => return true,
            _ => {}
        }
        match (self.to_value(), other.to_value()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

/// Serialized as the JSON value it holds (not as a string of JSON).
impl Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value()
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(JsonText::from)
    }
}

/// Insert or update one record.
#[derive(Clone, Debug, PartialEq)]
pub struct Put {
    /// The record to write (its `version` is ignored: the store assigns it).
    pub record: StoredRecord,
    /// `None`: the record must not exist. `Some(v)`: its current version must be `v`.
    pub expected_version: Option<u64>,
}

/// A record a batch's decisions were made on without writing it: the batch commits only
/// if the record is still at `version` (else `VersionConflict`, and nothing is written).
///
/// Why: optimistic concurrency for reads. A use case that decides on a record it does
/// not change (the sender wallet of a transfer: its membership, its address) would
/// otherwise have to rewrite it to get the version check of a `Put`, or trust a read
/// that may be stale by the time it commits. With the check it may even take the record
/// from a cache: a stale copy fails the commit instead of deciding wrongly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unchanged {
    /// Kind of the record read.
    pub kind: String,
    /// Id of the record read.
    pub id: String,
    /// The version the batch's decisions were made on.
    pub version: u64,
}

impl Unchanged {
    /// The rule every store applies, given the record's version now (`None`: missing):
    /// `Ok` only at exactly the version read, else the `VersionConflict` a stale `Put`
    /// gets too.
    pub fn verify(&self, current: Option<u64>) -> Result<(), StoreError> {
        if current == Some(self.version) {
            Ok(())
        } else {
            Err(StoreError::VersionConflict {
                kind: self.kind.clone(),
                id: self.id.clone(),
            })
        }
    }
}

/// An event for webhooks, written in the same commit as the change it reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEvent {
    /// `evt_...`, stable across redeliveries and replays.
    pub id: String,
    /// The tenant the event is delivered to.
    pub tenant: String,
    /// Event name (`"transfer.settled"`).
    pub event_type: String,
    /// When the reported change happened.
    pub occurred_at: Timestamp,
    /// The `DomainEvent` as JSON; the webhooks crate renders the wire payload.
    pub payload: serde_json::Value,
}

/// The first response given for an idempotency key, replayed for later requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    /// The tenant whose key it is (keys are per tenant).
    pub tenant: String,
    /// The client's `Idempotency-Key`.
    pub key: String,
    /// Hash of the request parameters; another hash under the same key is refused.
    pub request_hash: String,
    /// The response to replay (the engine's result as JSON).
    pub response: serde_json::Value,
    /// When the first request was answered.
    pub created_at: Timestamp,
}

/// Everything one use case decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// Records that must still be at the version they were read at (checked first).
    pub unchanged: Vec<Unchanged>,
    /// Records to insert or update, each with its version check.
    pub puts: Vec<Put>,
    /// Ledger accounts to create if absent (an existing one with other flags is an error).
    pub accounts: Vec<LedgerAccount>,
    /// Applied in order, in the same transaction as `puts`.
    pub ledger: Vec<LedgerTransfer>,
    /// Webhook events to append; the store numbers them in order
    /// ([`CommitReceipt::outbox_seqs`]).
    pub outbox: Vec<OutboxEvent>,
    /// At most one; it must not exist yet (a concurrent duplicate fails the batch).
    pub idempotency: Option<IdempotencyRecord>,
    /// Nobody is waiting on this commit to answer a request: it is the progress of a
    /// background worker (settlement, deliveries). A store whose commits queue behind
    /// one another may let interactive commits go first; see the SQLite writer. It
    /// changes when the batch is written, never what is written or whether it is atomic.
    pub background: bool,
}

impl Batch {
    /// True when committing the batch would write and check nothing.
    pub fn is_empty(&self) -> bool {
        self.unchanged.is_empty()
            && self.puts.is_empty()
            && self.accounts.is_empty()
            && self.ledger.is_empty()
            && self.outbox.is_empty()
            && self.idempotency.is_none()
    }
}

/// What a successful commit assigned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitReceipt {
    /// Outbox sequence numbers given to `batch.outbox`, in order.
    pub outbox_seqs: Vec<u64>,
}

/// A page of a tenant's records of one kind, newest first (`created_at`, then id), and
/// the total of every record the query matches (not just the page).
#[derive(Clone, Debug, PartialEq)]
pub struct ListQuery {
    /// Record kind to list.
    pub kind: String,
    /// Only this tenant's records.
    pub tenant: String,
    /// Which subkind the list runs on, matched exactly: `None` lists the records that
    /// have NO subkind (every record of a kind that does not use subkinds), `Some(s)`
    /// those whose subkind is `s`. There is no "any subkind" list: a kind that uses
    /// subkinds (operations) is listed one subkind at a time.
    ///
    /// Why exact: a list then runs on one `(kind, tenant, subkind)`, optionally one
    /// status, which every store keeps as one index range in the order a page is
    /// returned in. A page is a walk of that range and its total a count of it; no store
    /// scans or sorts a tenant's records to answer one.
    pub subkind: Option<String>,
    /// Only records in this status; `None`: every status.
    pub status: Option<String>,
    /// Page size.
    pub limit: usize,
    /// Matches skipped before the page.
    pub offset: usize,
}

/// A place in a list's order (newest first by `created_at`, then id): a keyset page
/// ([`Store::list_before`]) starts just after it, with the records strictly older.
///
/// Why a position and not an offset: an offset names "the n-th record", which moves when
/// a record is inserted ahead of it, so a client walking pages while records arrive would
/// see one twice (or miss one when records go). A position names a record's place in the
/// order itself, which no insert or delete elsewhere moves.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ListPosition {
    /// The `created_at` of the record the page follows.
    pub created_at: Timestamp,
    /// Its id (the tie-breaker among records created in the same millisecond).
    pub id: String,
}

impl ListPosition {
    /// The position of a stored record.
    pub fn of(record: &StoredRecord) -> Self {
        ListPosition {
            created_at: record.created_at,
            id: record.id.clone(),
        }
    }

    /// The position just before every record created at `at` or later: a keyset page
    /// from it holds the records created strictly before `at` (every id sorts after "").
    pub fn before_time(at: Timestamp) -> Self {
        ListPosition {
            created_at: at,
            id: String::new(),
        }
    }

    /// True when `record` comes strictly after this position in list order (it is
    /// older, or as old with a smaller id): the rule every store applies.
    pub fn precedes(&self, record: &StoredRecord) -> bool {
        (record.created_at, record.id.as_str()) < (self.created_at, self.id.as_str())
    }
}

/// The keyset page [`Store::list_before`] answers, for a store without its own: built
/// from [`Store::list`] alone (so it works on every store, but costs a binary search of
/// offsets, each an index walk of up to the offset). A store overrides the method with
/// one index range read: `WHERE (created_at, id) < (position) ORDER BY created_at DESC,
/// id DESC LIMIT n`.
///
/// Correct while records are inserted ahead of the position (they only move its offset
/// later, and the page drops anything not strictly after the position) and while the
/// oldest records are purged (behind the page).
pub async fn list_before_by_offsets<S: Store + ?Sized>(
    store: &S,
    query: &ListQuery,
    before: Option<&ListPosition>,
) -> Result<Vec<StoredRecord>, StoreError> {
    let page = |offset: usize, limit: usize| ListQuery {
        offset,
        limit,
        ..query.clone()
    };
    let Some(before) = before else {
        return Ok(store.list(&page(0, query.limit)).await?.0);
    };
    if query.limit == 0 {
        return Ok(Vec::new());
    }
    // The first offset whose record is strictly after `before`: records before it are
    // newer (or the position itself), so the predicate is monotonic in the offset.
    let (_, total) = store.list(&page(0, 0)).await?;
    let (mut lo, mut hi) = (0usize, usize::try_from(total).unwrap_or(usize::MAX));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match store.list(&page(mid, 1)).await?.0.first() {
            Some(r) if !before.precedes(r) => lo = mid + 1,
            _ => hi = mid,
        }
    }
    let mut out = Vec::with_capacity(query.limit);
    let mut offset = lo;
    loop {
        let want = query.limit - out.len();
        let (rows, _) = store.list(&page(offset, want)).await?;
        let got = rows.len();
        out.extend(rows.into_iter().filter(|r| before.precedes(r)));
        offset += got;
        if got < want || out.len() >= query.limit {
            return Ok(out);
        }
    }
}

/// What one [`Store::purge`] call deletes: rows of one [`PurgeTarget`] created before
/// `before`, oldest first, at most `limit` of them.
///
/// Why a limit: a purge is background housekeeping on tables the API writes to. Each
/// call is one short transaction (or one writer group on SQLite), so a backlog of
/// millions of rows never holds a lock for long; the caller repeats the call until it
/// deletes fewer than `limit` rows.
///
/// Which rows may go is a product rule and is decided by the caller (the engine's
/// retention windows, see `Engine::purge_expired`); the store only deletes what it is
/// told, never touches ledger rows, and deletes outbox events only through
/// [`PurgeTarget::Outbox`], once their consumer has passed them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Purge {
    /// Which rows.
    pub target: PurgeTarget,
    /// Only rows whose creation time is strictly earlier than this.
    pub before: Timestamp,
    /// The most rows this call deletes. 0 deletes nothing.
    pub limit: usize,
}

/// The rows a [`Purge`] applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PurgeTarget {
    /// Idempotency records (of every tenant), by [`IdempotencyRecord::created_at`].
    Idempotency,
    /// Records of one kind (of every tenant), by [`StoredRecord::created_at`]. Deleting
    /// a record frees its unique keys and drops any worker claim on it (a worker that
    /// still holds it then fails its commit with `VersionConflict`).
    Records {
        /// The record kind (`stablecoin_core::ports::kinds::kind`).
        kind: String,
        /// `None`: records in any status (or none). `Some(list)`: only records whose
        /// status is one of `list`; a record without a status never matches, and an
        /// empty list matches nothing.
        statuses: Option<Vec<String>>,
    },
    /// Outbox events with a sequence number up to `through_seq`, by
    /// [`OutboxEvent::occurred_at`], lowest sequence number first.
    ///
    /// Why: the outbox is a hand-off, not a history. Its one consumer (webhook fan-out)
    /// copies every event into the records that inspection, replay and the events API
    /// read, then moves its cursor; rows behind the cursor were ~1.4 KB per settled
    /// transfer kept forever (issue 47). The caller passes its cursor as `through_seq`,
    /// so an event not yet consumed is never deleted.
    ///
    /// Sequence numbers are never reused, whatever is purged: a store that numbers new
    /// events from its rows (SQLite, after a restart) keeps the newest row, so
    /// [`Store::outbox_after`] of a consumer's cursor goes on returning exactly the
    /// events committed after it.
    Outbox {
        /// The highest sequence number that may go (the consumer's cursor).
        through_seq: u64,
    },
}

impl Purge {
    /// True when `record` is one of the rows this purge selects (ignoring `limit`): the
    /// rule every store applies, for stores that filter in code.
    pub fn selects(&self, record: &StoredRecord) -> bool {
        let PurgeTarget::Records { kind, statuses } = &self.target else {
            return false;
        };
        record.kind == *kind
            && record.created_at < self.before
            && statuses.as_ref().is_none_or(|list| {
                record
                    .status
                    .as_ref()
                    .is_some_and(|status| list.contains(status))
            })
    }
}

/// Deletes everything `purge` selects: one [`Store::purge`] call of `purge.limit` rows
/// after another, until a call deletes fewer; returns the total.
///
/// Why a loop of small calls: each is one short transaction, so a backlog (the first
/// purge of a database that never had one) never holds the writer or row locks for long.
/// A `limit` of 0 deletes nothing.
pub async fn purge_all(store: &dyn Store, purge: &Purge) -> Result<u64, StoreError> {
    let mut total = 0;
    loop {
        let n = store.purge(purge).await?;
        total += n;
        if n == 0 || n < purge.limit as u64 {
            return Ok(total);
        }
    }
}

/// Why a store call failed; a commit that fails wrote nothing. [`StoreError::code`] is the
/// stable code.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A `Put` or `Unchanged` met another version than expected (or a record that should
    /// not exist does): another writer got there first; re-read and decide again.
    #[error("version conflict on {kind} {id}")]
    VersionConflict {
        /// Kind of the record.
        kind: String,
        /// Id of the record.
        id: String,
    },
    /// Another record already holds a unique key of a put.
    #[error("unique key {key} is already taken")]
    UniqueViolation {
        /// The key already taken.
        key: String,
    },
    /// The batch's idempotency record exists already (a concurrent duplicate request won).
    #[error("idempotency key {key} already recorded")]
    IdempotencyExists {
        /// The idempotency key.
        key: String,
    },
    /// The batch's ledger part broke a ledger rule.
    #[error("ledger: {0}")]
    Ledger(#[from] LedgerError),
    /// The backend failed (I/O, connection, a closed store); the text is for logs.
    #[error("store backend: {0}")]
    Backend(String),
}

impl StoreError {
    /// The stable machine code (`CONFLICT`, `IDEMPOTENCY_KEY_IN_USE`, a ledger code,
    /// `STORAGE_ERROR`).
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::VersionConflict { .. } => "CONFLICT",
            StoreError::UniqueViolation { .. } => "CONFLICT",
            StoreError::IdempotencyExists { .. } => "IDEMPOTENCY_KEY_IN_USE",
            StoreError::Ledger(e) => e.code(),
            StoreError::Backend(_) => "STORAGE_ERROR",
        }
    }
}

/// Durable records, ledger, outbox and idempotency records of a deployment, changed only by
/// atomic [`Batch`] commits.
#[async_trait]
pub trait Store: Send + Sync {
    /// Commits a batch atomically and durably.
    ///
    /// Order inside the transaction: `unchanged` checks, ledger accounts, idempotency
    /// record, puts (version and unique-key checks), ledger transfers (idempotent by id,
    /// no-overdraft rule), outbox. Any failure rolls everything back and returns a typed
    /// error: nothing of the batch is visible afterwards. `Ok` means durable; a store may group-commit
    /// concurrent callers but acknowledges each only after its transaction is durable.
    /// A commit also releases any worker claim on the records it puts.
    ///
    /// A record's kind, id, tenant, `created_at` and subkind are fixed when it is
    /// inserted: an update writes its version, status, due time, lane, unique keys and
    /// body, and keeps the others as stored (no index that leads with them is rewritten).
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError>;

    /// The record of `kind` with `id`; `None` if there is none.
    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError>;

    /// The record holding a unique key, if any.
    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError>;

    /// A tenant's records of one kind and subkind (matched exactly, see
    /// [`ListQuery::subkind`]), optionally of one status, newest first (`created_at`, then
    /// id), and the total of the matches. Served from an index, never by a scan.
    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError>;

    /// A keyset page of `query` (its `offset` is ignored): up to `query.limit` records
    /// strictly after `before` in list order (all of them from the newest when `None`),
    /// newest first. Walking pages from each page's last record sees every record that
    /// existed when the walk began exactly once, however many are inserted ahead of it
    /// meanwhile (the events API's cursors).
    ///
    /// The default is [`list_before_by_offsets`], built from [`Store::list`] alone, so
    /// every store answers it. A store with an index on (kind, tenant, subkind[, status],
    /// created_at, id) overrides it with one range read (memory and SQLite do;
    /// PostgreSQL still uses the default, see docs/events-and-statements.md).
    async fn list_before(
        &self,
        query: &ListQuery,
        before: Option<&ListPosition>,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        list_before_by_offsets(self, query, before).await
    }

    /// The idempotency record of `key` for `tenant`, if one was committed.
    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;

    /// Claims up to `limit` records of `kind` in `lane` whose `due_at <= now` and that no
    /// live claim holds, for `lease_ms`, oldest due first. No two workers (even in two
    /// processes on one database) hold one record at once; a claim lapses when its lease
    /// ends (the worker died) or when a commit puts the record.
    ///
    /// Lanes ([`StoredRecord::lane`]) split one kind's due work into queues claimed
    /// separately, so a long queue of one stage never starves another: the engine claims
    /// operations due for their first submission (lane 0) apart from those it polls
    /// (lane 1). Kinds without stages keep every record in lane 0. Served from an index
    /// on (kind, lane, due_at), never by a scan of other lanes.
    async fn claim_due(
        &self,
        kind: &str,
        lane: u8,
        worker: &str,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError>;

    /// Outbox events with sequence number > `after_seq`, in order.
    async fn outbox_after(
        &self,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEvent)>, StoreError>;

    /// Deletes up to `purge.limit` of the rows `purge` selects, oldest first, with the
    /// unique keys of every record deleted, in one atomic step; returns how many rows
    /// went. Served from an index on creation time (the outbox: its sequence numbers),
    /// never by a scan of the table. Never touches ledger rows, nor outbox rows but
    /// through [`PurgeTarget::Outbox`]. A caller empties a backlog by calling again
    /// until fewer than `limit` rows go.
    async fn purge(&self, purge: &Purge) -> Result<u64, StoreError>;
}
