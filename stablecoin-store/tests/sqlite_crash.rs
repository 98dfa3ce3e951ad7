//! Crash safety on SQLite: a child process commits batches from 8 concurrent tasks (so
//! group commit is at work) and prints each batch id after `commit` returned Ok; the
//! parent kills it with SIGKILL at a random moment, reopens the database, and checks that
//! every acknowledged batch is there, that no batch is there in part, and that the ledger
//! sums to zero. Three rounds on one file (each round also recovers the previous crash).
//!
//! The child is this test binary itself, re-run with `STABLECOIN_CRASH_CHILD_DB` set so
//! that `crash_child` does the work (without it, `crash_child` passes at once).
#![cfg(all(feature = "sqlite", unix))]

use serde_json::json;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerTransfer, Phase};
use stablecoin_core::ports::store::{
    Batch, IdempotencyRecord, ListQuery, OutboxEvent, Put, Store, StoredRecord,
};
use stablecoin_store::{Durability, SqliteConfig, SqliteStore};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const CHILD_ENV: &str = "STABLECOIN_CRASH_CHILD_DB";
const ROUND_ENV: &str = "STABLECOIN_CRASH_CHILD_ROUND";
const TASKS: usize = 8;

/// The child's test name as the harness knows it (`sqlite_crash::crash_child`: this file
/// is a module of the crate's one test binary), whatever the module is called.
fn child_test_name() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::crash_child")
}

fn transfer(id: String, amount: u64, phase: Phase) -> LedgerTransfer {
    LedgerTransfer {
        id,
        debit: "world".into(),
        credit: "alice".into(),
        amount: Micros(amount),
        phase,
    }
}

/// Everything batch `id` writes: a record (with a unique key), an idempotency record, a
/// pending transfer and its post, a single transfer, an outbox event. 3 units to alice.
fn batch_for(id: &str, background: bool) -> Batch {
    Batch {
        background,
        unchanged: vec![],
        puts: vec![Put {
            record: StoredRecord {
                kind: "crash".into(),
                id: id.into(),
                tenant: Some("t".into()),
                version: 0,
                created_at: Timestamp::from_millis(1),
                status: Some("done".into()),
                subkind: None,
                due_at: None,
                lane: 0,
                unique_keys: vec![format!("crash:{id}")],
                body: json!({ "id": id }).into(),
            },
            expected_version: None,
        }],
        ledger: vec![
            transfer(format!("p-{id}"), 1, Phase::Pending),
            transfer(
                format!("q-{id}"),
                1,
                Phase::Post {
                    pending_id: format!("p-{id}"),
                },
            ),
            transfer(format!("s-{id}"), 2, Phase::Single),
        ],
        outbox: vec![OutboxEvent {
            id: format!("evt-{id}"),
            tenant: "t".into(),
            event_type: "crash.batch".into(),
            occurred_at: Timestamp::from_millis(1),
            payload: json!({ "id": id }),
        }],
        idempotency: Some(IdempotencyRecord {
            tenant: "t".into(),
            key: id.into(),
            request_hash: "h".into(),
            response: json!({ "id": id }),
            created_at: Timestamp::from_millis(1),
        }),
        accounts: vec![
            LedgerAccount {
                id: "world".into(),
                allow_negative: true,
            },
            LedgerAccount {
                id: "alice".into(),
                allow_negative: false,
            },
        ],
    }
}

/// Child mode: commit forever, acknowledging each batch on stdout after `commit` is Ok.
/// Not a test of its own: ignored, so it is never counted as one; `run_and_kill` runs it
/// by its exact name (with `--ignored`) in the child process it kills.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of the crash tests, started by run_and_kill"]
async fn crash_child() {
    let path = std::env::var(CHILD_ENV).expect("crash_child runs only as run_and_kill's child");
    let round = std::env::var(ROUND_ENV).unwrap_or_default();
    let store = SqliteStore::open(SqliteConfig::file(&path).durability(Durability::Full))
        .await
        .expect("child: open");
    let mut handles = Vec::new();
    for task in 0..TASKS {
        let store = store.clone();
        let round = round.clone();
        handles.push(tokio::spawn(async move {
            for n in 0.. {
                let id = format!("r{round}-t{task}-{n}");
                // Odd tasks commit as background work: an acknowledged commit is
                // durable whichever queue of the writer it went through.
                let background = task % 2 == 1;
                store
                    .commit(batch_for(&id, background))
                    .await
                    .expect("child: commit");
                let mut out = std::io::stdout().lock();
                writeln!(out, "ack {id}").expect("child: stdout");
                out.flush().expect("child: flush");
            }
        }));
    }
    for h in handles {
        h.await.expect("child task");
    }
}

fn random_ms(lo: u64, hi: u64) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    lo + (nanos ^ (nanos >> 7)).wrapping_mul(0x9E37_79B9) % (hi - lo)
}

/// Runs one child until a random moment after its first acknowledgement; returns the
/// acknowledged batch ids.
fn run_and_kill(path: &std::path::Path, round: usize) -> Vec<String> {
    let exe = std::env::current_exe().expect("current_exe");
    let mut child = Command::new(exe)
        .args([
            child_test_name().as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, path)
        .env(ROUND_ENV, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(id) = line.strip_prefix("ack ")
                && tx.send(id.to_string()).is_err()
            {
                break;
            }
        }
    });
    // Wait for the first acknowledgement (the child is running), then a random while.
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("child acknowledged nothing within 60 s");
    let wait = Duration::from_millis(random_ms(50, 1_500));
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL child"); // Child::kill sends SIGKILL on Unix
    let status = child.wait().expect("wait child");
    assert!(
        !status.success(),
        "the child must have been killed, not finished"
    );
    reader.join().unwrap();
    let mut acked = vec![first];
    acked.extend(rx.try_iter());
    eprintln!(
        "round {round}: killed after {wait:?} with {} acknowledged batches",
        acked.len()
    );
    acked
}

async fn check(path: &std::path::Path, acked_so_far: &HashSet<String>) {
    let store = SqliteStore::open(SqliteConfig::file(path))
        .await
        .expect("reopen after SIGKILL");
    // Every record of kind "crash" = every batch that committed.
    let (records, total) = store
        .list(&ListQuery {
            kind: "crash".into(),
            tenant: "t".into(),
            status: None,
            subkind: None,
            limit: usize::MAX,
            offset: 0,
        })
        .await
        .unwrap();
    assert_eq!(records.len() as u64, total);
    let committed: HashSet<String> = records.iter().map(|r| r.id.clone()).collect();
    for id in acked_so_far {
        assert!(
            committed.contains(id),
            "batch {id} was acknowledged but is missing after the crash"
        );
    }
    // No batch is there in part: each committed batch has all its parts, and no part
    // exists without its batch.
    let events: Vec<String> = store
        .outbox_after(0, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, e)| e.id)
        .collect();
    let history: Vec<String> = store
        .history("alice", 0, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.transfer_id)
        .collect();
    let events: HashSet<String> = events.into_iter().collect();
    let history: HashSet<String> = history.into_iter().collect();
    for id in &committed {
        assert!(events.contains(&format!("evt-{id}")), "{id}: event missing");
        for t in ["p", "q", "s"] {
            assert!(
                history.contains(&format!("{t}-{id}")),
                "{id}: transfer {t} missing"
            );
        }
        assert!(
            store.idempotency("t", id).await.unwrap().is_some(),
            "{id}: idempotency record missing"
        );
        let by_key = store.get_by_unique(&format!("crash:{id}")).await.unwrap();
        assert_eq!(by_key.map(|r| r.id), Some(id.clone()), "{id}: unique key");
    }
    assert_eq!(events.len(), committed.len(), "events without their batch");
    assert_eq!(
        history.len(),
        3 * committed.len(),
        "transfers without their batch"
    );
    let alice = store.balance("alice").await.unwrap();
    assert_eq!(alice.posted(), 3 * committed.len() as i128);
    assert_eq!(
        alice.debits_pending + alice.credits_pending,
        0,
        "half two-phase"
    );
    assert_eq!(
        store.posted_sum().await.unwrap(),
        0,
        "posted_sum after crash"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sigkill_loses_no_acknowledged_batch_and_leaves_no_partial_batch() {
    if std::env::var(CHILD_ENV).is_ok() {
        return; // inside a child: only crash_child runs
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let mut acked = HashSet::new();
    for round in 0..3 {
        let ids = run_and_kill(&path, round);
        assert!(!ids.is_empty());
        acked.extend(ids);
        check(&path, &acked).await;
    }
}
