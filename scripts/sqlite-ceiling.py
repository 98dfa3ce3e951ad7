#!/usr/bin/env python3
"""What SQLite itself does with the ledger's tables on this machine (BENCHMARKS.md, Storage).

An independent ceiling for the `batch1000` workload of `benches/store.rs`: the same
statements the SQLite writer runs for a batch of 1,000 transfers (half pendings, half
posts of the previous batch's pendings, accounts uniform among 10,000), issued by
Python's sqlite3 module (`executemany`: SQLite's C loop, no Rust, no ledger checks), in
one `BEGIN IMMEDIATE` ... `COMMIT` per batch, WAL, synchronous=FULL, on a file in the
current directory. Schemas:

  shipped      the migration's tables (transfer history indexes on debit and credit)
  no-history   the same without the two history indexes (what a ledger without
               per-account history would write)

Usage: python3 scripts/sqlite-ceiling.py [batches]
"""
import os, random, sqlite3, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
MIGRATION = os.path.join(HERE, "..", "stablecoin-store", "migrations", "sqlite", "0001_init.sql")
ACCOUNTS, BATCH = 10_000, 1_000


def run(schema: str, batches: int) -> float:
    with tempfile.TemporaryDirectory(dir=".") as d:
        db = sqlite3.connect(os.path.join(d, "ceiling.db"), isolation_level=None)
        for p in ("journal_mode=WAL", "synchronous=FULL", "cache_size=-65536", "wal_autocheckpoint=10000"):
            db.execute("PRAGMA " + p)
        db.executescript(open(MIGRATION).read())
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


if __name__ == "__main__":
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    for schema in ("shipped", "no-history"):
        print(f"{schema:>10}: {run(schema, batches):,.0f} transfers/s (batches of {BATCH}, synchronous=FULL)")
