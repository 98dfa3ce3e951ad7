#!/usr/bin/env python3
"""What SQLite itself does with the ledger's tables on this machine (docs/performance-log.md, Storage).

An independent ceiling for the `batch1000` workload of `benches/store.rs`: the same
statements the SQLite writer runs for a batch of 1,000 transfers (half pendings, half
posts of the previous batch's pendings, accounts uniform among 10,000), issued by
Python's sqlite3 module (`executemany`: SQLite's C loop, no Rust, no ledger checks), in
one `BEGIN IMMEDIATE` ... `COMMIT` per batch, WAL, synchronous=FULL, on a file in the
current directory. Schemas:

  shipped      the migration's tables (transfer history indexes on debit and credit)
  no-history   the same without the two history indexes (what a ledger without
               per-account history would write)

`send` workload (`python3 scripts/sqlite-ceiling.py send`): the rows the writer commits
for one accepted `POST /v1/transfers/send` (docs/performance-log.md, Server), in groups the size the
writer forms under load: the two `unchanged` point reads of the wallets, the operation
record (a body the size the store writes it: the engine's ~1.4 KiB JSON is stored as a
compact binary encoding of about a third of it since migration 0010, modelled here as a
BLOB of that size, and its indexes), two pending ledger transfers (recipient and service
fee, naming their accounts by number, each with two history index entries and its id's
unique index), three account rows and the sequence counter; one `BEGIN IMMEDIATE` ... `COMMIT`
(one WAL fsync) per group, every migration applied. It reports sends/s on one thread and
the CPU time per send, Python's per-statement overhead (~1-2 us a statement) included.
Variants show what a different layout would save: a 400-byte body, no `records_list` /
`records_list_status` / `records_due` indexes, and `synchronous=OFF` (no fsync).

`update` workload (`python3 scripts/sqlite-ceiling.py update [n]`): a settlement's
record write, the writer's UPDATE of what a record's life changes against the upsert it
replaced (every column in its SET), on n queued transfers, 64 per transaction.

Usage: python3 scripts/sqlite-ceiling.py [batches]
       python3 scripts/sqlite-ceiling.py send [groups] [group size]
       python3 scripts/sqlite-ceiling.py update [n]
"""
import json, os, random, sqlite3, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
MIGRATIONS = os.path.join(HERE, "..", "stablecoin-store", "migrations", "sqlite")
ACCOUNTS, BATCH = 10_000, 1_000


def open_db(d: str, migrations: list, cache_kib: int) -> sqlite3.Connection:
    """A WAL database at FULL sync in directory d, with the given migrations applied."""
    db = sqlite3.connect(os.path.join(d, "ceiling.db"), isolation_level=None)
    for p in ("journal_mode=WAL", "synchronous=FULL", f"cache_size=-{cache_kib}", "wal_autocheckpoint=10000"):
        db.execute("PRAGMA " + p)
    for m in migrations:
        db.executescript(open(os.path.join(MIGRATIONS, m)).read())
    return db


def run(schema: str, batches: int) -> float:
    with tempfile.TemporaryDirectory(dir=".") as d:
        db = open_db(d, ["0001_init.sql"], 65536)
        if schema == "no-history":
            db.executescript("DROP INDEX ledger_transfers_debit; DROP INDEX ledger_transfers_credit;")
        db.execute("BEGIN")
        db.executemany("INSERT INTO ledger_accounts VALUES (?, 0, 0, 1000000000000, 0, 0)",
                       [(f"user-{i:05}",) for i in range(ACCOUNTS)])
        db.execute("COMMIT")
        rng, seq, outstanding, spent = random.Random(1), 1, [], 0.0
        for n in range(batches):
            rows, posts = [], []
            while len(rows) < BATCH // 2 and outstanding:
                p = outstanding.pop(0)
                rows.append((f"t{seq}", seq, p[2], p[3], 1, "post", p[0], 0)); posts.append((p[0],)); seq += 1
            while len(rows) < BATCH:
                a, b = rng.sample(range(ACCOUNTS), 2)
                t = (f"t{seq}", seq, f"user-{a:05}", f"user-{b:05}", 1, "pending", None, 0); seq += 1
                rows.append(t); outstanding.append(t)
            dirty = sorted({r[2] for r in rows} | {r[3] for r in rows})
            start = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT INTO ledger_transfers VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            db.executemany("UPDATE ledger_transfers SET resolved = 1 WHERE id = ?", posts)
            db.executemany("UPDATE ledger_accounts SET debits_posted = 0, credits_posted = 1000000000000, "
                           "debits_pending = 0, credits_pending = 0 WHERE id = ?", [(a,) for a in dirty])
            db.execute("UPDATE ledger_meta SET value = ? WHERE key = 'next_transfer_seq'", (seq,))
            db.execute("COMMIT")
            if n >= batches // 4:  # the first quarter warms the caches and the WAL
                spent += time.perf_counter() - start
        db.close()
        return (batches - batches // 4) * BATCH / spent


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(rng: random.Random, prefix: str, millis: int = 1_795_000_000_000) -> str:
    """An id as the engine makes them (`make_id`): time first, so new ids sort last."""
    stamp = "".join(CROCKFORD[(millis >> (5 * i)) & 31] for i in reversed(range(10)))
    return prefix + "_" + stamp + "".join(rng.choice(CROCKFORD) for _ in range(16))


def operation_body(rng: random.Random, op: str, tenant: str, now: int) -> str:
    """A queued transfer's JSON body, field for field the engine's `Operation`."""
    # The load's one sender and one recipient (scripts/bench-lib.sh).
    src, dst = "wal_01M880BNJ1R14ZV2H7F0SEDEH8", "wal_01M880BNJFF4ZY1F65VJ3QBP03"
    addr = lambda: "0x" + "".join(rng.choice("0123456789abcdef") for _ in range(40))
    hold = lambda role, credit, amount: {"id": f"{op}:{role}", "debit": f"wallet:{src}:USDC",
                                         "credit": credit, "amount": amount, "phase": "Pending"}
    return json.dumps({
        "id": op, "kind": "Transfer", "tenant": tenant, "status": "QUEUED", "error_reason": None,
        "rail": {"Evm": 137}, "token": "USDC", "amount": 10000,
        "fees": {"amount": 10000, "recipient": 9970, "service_fee": 30, "tenant_fee": 0,
                 "tenant_fee_waived": False},
        "from_wallet": src, "to_wallet": dst, "from_phone": "+2250700000001",
        "to_phone": "+2250700000002", "quote_id": None,
        "payment": {"id": op, "from": {"type": "wallet", "id": src}, "from_address": addr(),
                    "token": "USDC",
                    "legs": [{"to": addr(), "amount": 9970, "role": "recipient"},
                             {"to": addr(), "amount": 30, "role": "service_fee"}]},
        "holds": [hold("recipient", f"wallet:{dst}:USDC", 9970),
                  hold("service_fee", "fees:service:USDC", 30)],
        "notify_recipient": False, "tx_hash": None, "block": None, "submitted_at": None,
        "next_check_at": now, "created_at": now, "updated_at": now, "settled_at": None,
        "payout": None, "created_recipient_account": False,
    }, separators=(",", ":"))


def run_send(variant: str, groups: int, size: int) -> tuple:
    """(sends/s on one thread, CPU us per send) for the rows of accepted sends."""
    rng = random.Random(1)
    tenant = ulid(rng, "ten")
    with tempfile.TemporaryDirectory(dir=".") as d:
        # 8 MiB: the writer's page cache (WRITER_CACHE_KIB).
        db = open_db(d, sorted(os.listdir(MIGRATIONS)), 8192)
        if variant == "no record indexes":
            db.executescript("DROP INDEX records_list; DROP INDEX records_list_status; DROP INDEX records_due; "
                             "DROP INDEX records_created;")
        if variant == "synchronous=OFF":
            db.execute("PRAGMA synchronous=OFF")
        accounts = ["wallet:sender:USDC", "wallet:recipient:USDC", "fees:service:USDC"]
        db.executemany("INSERT INTO ledger_accounts (id, allow_negative) VALUES (?, 1)", [(a,) for a in accounts])
        nums = {a: db.execute("SELECT num FROM ledger_accounts WHERE id = ?", (a,)).fetchone()[0]
                for a in accounts}
        seq, wall, cpu, now = 1, 0.0, 0.0, 1_795_000_000_000
        for n in range(groups):
            ops = []
            for _ in range(size):
                now += 1
                op = ulid(rng, "tr", now)
                body = operation_body(rng, op, tenant, now)
                # The compact encoding stores about a third of the JSON (467 of 1,422 bytes
                # for a settled transfer's body, BENCHMARKS.md): a BLOB of that size.
                stored = body[:400] if variant == "400-byte body" else body
                ops.append((op, now, os.urandom(len(stored) // 3)))
            start, start_cpu = time.perf_counter(), time.process_time()
            db.execute("BEGIN IMMEDIATE")
            db.execute("PRAGMA data_version").fetchall()
            holds = []
            for op, at, body in ops:
                for wallet in ("sender", "recipient"):
                    db.execute("SELECT version FROM records WHERE kind = 'wallet' AND id = ?", (wallet,)).fetchall()
                db.execute("INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, "
                           "lease_owner, lease_until, unique_keys, body, subkind, lane) "
                           "VALUES ('operation', ?, ?, 1, ?, 'QUEUED', ?, NULL, NULL, '[]', ?, 'transfer', 0)",
                           (op, tenant, at, at, body))
                a = [nums[x] for x in accounts]
                holds.append((seq, f"{op}:recipient", a[0], a[1], 9970, "pending", None, 0))
                holds.append((seq + 1, f"{op}:service_fee", a[0], a[2], 30, "pending", None, 0))
                seq += 2
            db.executemany("INSERT INTO ledger_transfers (seq, id, debit, credit, amount, phase, "
                           "pending_id, resolved) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", holds)
            db.executemany("UPDATE ledger_accounts SET debits_pending = debits_pending + 1 WHERE id = ?",
                           [(a,) for a in accounts])
            db.execute("UPDATE ledger_meta SET value = ? WHERE key = 'next_transfer_seq'", (seq,))
            db.execute("COMMIT")
            if n >= groups // 4:  # the first quarter warms the caches and the WAL
                wall += time.perf_counter() - start
                cpu += time.process_time() - start_cpu
        db.close()
        sends = (groups - groups // 4) * size
        return sends / wall, cpu / sends * 1e6


def run_update(statement: str, n: int, size: int) -> float:
    """Operation updates per second (a settlement's record write), in groups of `size`
    per transaction, on n queued transfers: the writer's UPDATE of the columns a record's
    life changes, or the upsert it replaced (whose SET named every column, so SQLite
    rewrote the list and purge indexes too)."""
    rng = random.Random(2)
    tenant = ulid(rng, "ten")
    with tempfile.TemporaryDirectory(dir=".") as d:
        db = open_db(d, sorted(os.listdir(MIGRATIONS)), 8192)
        ops, now = [], 1_795_000_000_000
        db.execute("BEGIN")
        for _ in range(n):
            now += 1
            op = ulid(rng, "tr", now)
            ops.append((op, now, operation_body(rng, op, tenant, now)))
            db.execute("INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, "
                       "lease_owner, lease_until, unique_keys, body, subkind, lane) VALUES "
                       "('operation', ?, ?, 1, ?, 'QUEUED', ?, NULL, NULL, '[]', ?, 'transfer', 0)",
                       (op, tenant, now, now, ops[-1][2]))
        db.execute("COMMIT")
        rng.shuffle(ops)
        start = time.perf_counter()
        for k in range(0, n, size):
            db.execute("BEGIN IMMEDIATE")
            for op, at, body in ops[k:k + size]:
                if statement == "update":
                    db.execute("UPDATE records SET version = 2, status = 'SETTLED', due_at = NULL, lane = 1, "
                               "lease_owner = NULL, lease_until = NULL, unique_keys = '[]', body = ? "
                               "WHERE kind = 'operation' AND id = ?", (body, op))
                else:
                    db.execute("INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, "
                               "lease_owner, lease_until, unique_keys, body, subkind, lane) VALUES "
                               "('operation', ?, ?, 2, ?, 'SETTLED', NULL, NULL, NULL, '[]', ?, 'transfer', 1) "
                               "ON CONFLICT (kind, id) DO UPDATE SET tenant = excluded.tenant, "
                               "version = excluded.version, created_at = excluded.created_at, "
                               "status = excluded.status, due_at = excluded.due_at, lease_owner = NULL, "
                               "lease_until = NULL, unique_keys = excluded.unique_keys, "
                               "body = excluded.body, subkind = excluded.subkind, lane = excluded.lane",
                               (op, tenant, at, body))
            db.execute("COMMIT")
        rate = n / (time.perf_counter() - start)
        db.close()
        return rate


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "update":
        n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
        for statement in ("upsert", "update"):
            print(f"{statement:>7}: {run_update(statement, n, 64):,.0f} operation updates/s "
                  f"(groups of 64, synchronous=FULL)")
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "send":
        groups = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
        size = int(sys.argv[3]) if len(sys.argv) > 3 else 20
        for variant in ("shipped", "400-byte body", "no record indexes", "synchronous=OFF"):
            rate, cpu = run_send(variant, groups, size)
            print(f"{variant:>17}: {rate:,.0f} sends/s on one thread, {cpu:.0f} us CPU per send "
                  f"(groups of {size})")
        sys.exit(0)
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    for schema in ("shipped", "no-history"):
        print(f"{schema:>10}: {run(schema, batches):,.0f} transfers/s (batches of {BATCH}, synchronous=FULL)")
