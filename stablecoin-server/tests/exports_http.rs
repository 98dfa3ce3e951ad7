//! Exports (issue #52 item 3) over real HTTP on loopback: the operations export streams
//! (chunked, no length known up front) every operation of the range exactly once,
//! newest first, as CSV and as JSON lines, through several store pages; kind, state and
//! period filter it; the checkout exports escape CSV (RFC 4180) and neutralise formulas;
//! bad parameters are clear 400s.

use crate::common::shared::{fresh_schema, pg_url, shared_chain};
use crate::common::*;
use serde_json::Value;
use stablecoin_core::domain::ids::OperationId;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::Operation;
use stablecoin_core::ports::Record;
use stablecoin_core::ports::store::Batch;
use stablecoin_server::App;
use stablecoin_server::config::{Secret, StorageConfig};
use std::collections::BTreeSet;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

/// Parses RFC 4180 CSV (quoted fields, doubled quotes, CRLF) into rows of cells.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    cell.push('"');
                }
                '"' => quoted = false,
                c => cell.push(c),
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => row.push(std::mem::take(&mut cell)),
            '\r' => {
                assert_eq!(chars.next(), Some('\n'), "CR without LF");
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            '\n' => panic!("a bare LF ends a CSV line: {text:.200}"),
            c => cell.push(c),
        }
    }
    assert!(
        cell.is_empty() && row.is_empty(),
        "the last line has no CRLF"
    );
    rows
}

/// `GET path` with `key`: status, headers and body.
async fn get(s: &Server, key: &str, path: &str) -> Resp {
    s.get(key, path).await
}

/// Copies of a settled funding, `n` of them, created one second apart from `t0`:
/// more operations than one store page holds, without driving thousands through the
/// chain (the export reads records, whoever wrote them).
async fn plant_copies(s: &Server, funding_id: &str, n: usize, t0: i64) -> Vec<String> {
    let store = s.app.state().storage.store.clone();
    let rec = store.get("operation", funding_id).await.unwrap().unwrap();
    let base = Operation::from_stored(&rec).unwrap();
    let mut ids = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let mut batch = Batch::default();
        for &i in chunk {
            let mut op = base.clone();
            op.id = OperationId(format!("fd_copy{i:06}"));
            op.created_at = Timestamp::from_millis(t0 + i as i64 * 1000);
            op.tx_hash = None;
            op.holds.clear();
            ids.push(op.id.0.clone());
            batch.puts.push(op.insert().unwrap());
        }
        store.commit(batch).await.unwrap();
    }
    ids
}

#[tokio::test]
async fn the_operations_export_streams_every_operation_once_in_both_formats() {
    operations_export(start().await).await;
}

#[tokio::test]
async fn the_operations_export_streams_every_operation_once_on_sqlite() {
    let dir = temp_dir("exports_sqlite");
    let mut c = test_config();
    c.storage = StorageConfig::Sqlite {
        path: Some(dir.join("stablecoin.db")),
        max_background: 4,
    };
    operations_export(start_with(c).await).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operations_export_streams_every_operation_once_on_postgres() {
    let Some(url) = pg_url("the_operations_export_streams_every_operation_once_on_postgres") else {
        return;
    };
    let mut c = test_config();
    c.storage = StorageConfig::Postgres {
        url: Secret::new(fresh_schema(&url).await),
        connect_timeout_secs: 30,
    };
    // PostgreSQL is for several processes: its chains are a shared one.
    c.sim.chain_url = Some(shared_chain(&c).await);
    operations_export(serve(App::build(c).await.unwrap()).await).await;
}

/// The operations export's checks on `s` (any store).
async fn operations_export(s: Server) {
    let t = s.tenant("Acme", "1000").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    let fa = s.fund_settled(&t.live, A, "10").await;
    let fb = s.fund_settled(&t.live, B, "5").await;
    let tr = s.send_usdc(&t.live, A, B, "1.25").await;
    s.settle().await;
    let fa_id = fa["id"].as_str().unwrap().to_string();
    let tr_id = tr["id"].as_str().unwrap().to_string();
    // Copies dated before the real operations (2020), over three store pages.
    let t0 = Timestamp::parse_rfc3339("2020-01-01T00:00:00Z")
        .unwrap()
        .millis();
    let copies = plant_copies(&s, &fa_id, 1_234, t0).await;
    let mut all: BTreeSet<String> = copies.iter().cloned().collect();
    all.extend([
        fa_id.clone(),
        fb["id"].as_str().unwrap().into(),
        tr_id.clone(),
    ]);

    // CSV: streamed, a header, every operation once, newest first.
    let r = get(&s, &t.live, "/v1/exports/operations?format=csv").await;
    r.expect(200);
    assert!(r.header("content-type").unwrap().starts_with("text/csv"));
    assert_eq!(
        r.header("content-disposition").as_deref(),
        Some("attachment; filename=\"operations.csv\"")
    );
    assert_eq!(r.header("content-length"), None, "streamed, not buffered");
    assert_eq!(r.header("transfer-encoding").as_deref(), Some("chunked"));
    let rows = parse_csv(&r.text());
    let header = &rows[0];
    assert_eq!(
        header.join(","),
        stablecoin_server::api::export_rows::OPERATION_COLUMNS.join(",")
    );
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let ids: Vec<&String> = rows[1..].iter().map(|r| &r[col("id")]).collect();
    assert_eq!(ids.len(), all.len(), "each operation exactly once");
    assert_eq!(
        ids.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
        all
    );
    assert_eq!(rows[1][col("id")], tr_id, "newest first");
    assert_eq!(rows.last().unwrap()[col("id")], "fd_copy000000");
    let created: Vec<&String> = rows[1..].iter().map(|r| &r[col("created_at")]).collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first");
    let t_row = &rows[1];
    assert_eq!(t_row[col("object")], "transfer");
    assert_eq!(t_row[col("status")], "SETTLED");
    assert_eq!(t_row[col("amount")], "1.250000");
    // A phone number starts with `+`: neutralised like any text a spreadsheet would run.
    assert_eq!(t_row[col("from_phone_number")], format!("'{A}"));
    assert_eq!(t_row[col("payout_reference")], "");

    // JSON lines: the same operations, each line the operation as its read shows it.
    let r = get(&s, &t.live, "/v1/exports/operations?format=jsonl").await;
    r.expect(200);
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/x-ndjson")
    );
    let text = r.text();
    assert!(text.ends_with('\n'));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), all.len());
    let read = get(&s, &t.live, &format!("/v1/transfers/{tr_id}"))
        .await
        .json();
    for f in [
        "id",
        "status",
        "amount",
        "recipient_amount",
        "service_fee",
        "created_at",
    ] {
        assert_eq!(lines[0][f], read[f], "{f}");
    }
    assert_eq!(
        lines
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>(),
        all
    );

    // Kind and state.
    let r = get(
        &s,
        &t.live,
        "/v1/exports/operations?format=csv&kind=transfer",
    )
    .await;
    let rows = parse_csv(&r.text());
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1][col("id")], tr_id);
    let r = get(
        &s,
        &t.live,
        "/v1/exports/operations?format=jsonl&kind=funding&state=SETTLED",
    )
    .await;
    assert_eq!(r.text().lines().count(), copies.len() + 2);
    let r = get(
        &s,
        &t.live,
        "/v1/exports/operations?format=csv&state=FAILED",
    )
    .await;
    r.expect(200);
    assert_eq!(parse_csv(&r.text()).len(), 1, "the header only");

    // Period [from, to): copies 100..=199.
    let at = |i: i64| Timestamp::from_millis(t0 + i * 1000).to_rfc3339();
    let r = get(
        &s,
        &t.live,
        &format!(
            "/v1/exports/operations?format=jsonl&from={}&to={}",
            at(100),
            at(200)
        ),
    )
    .await;
    let got: Vec<String> = r
        .text()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let want: Vec<String> = (100..200).rev().map(|i| format!("fd_copy{i:06}")).collect();
    assert_eq!(got, want);

    // Another tenant sees none of them.
    let other = s.tenant("Other", "0").await;
    let r = get(&s, &other.live, "/v1/exports/operations?format=csv").await;
    assert_eq!(parse_csv(&r.text()).len(), 1);

    // Clear 400s, and the wrong key kind.
    for (q, param) in [
        ("", "format"),
        ("format=xml", "format"),
        ("format=csv&kind=refund", "kind"),
        ("format=csv&kind=transfer&state=COMPLETED", "state"),
        ("format=csv&from=yesterday", "from"),
        (
            "format=csv&from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z",
            "to",
        ),
    ] {
        let r = get(&s, &t.live, &format!("/v1/exports/operations?{q}")).await;
        r.expect_err(400, "INVALID_PARAMETER");
        assert_eq!(r.param().as_deref(), Some(param), "{q}");
    }
    get(&s, &t.live, "/v1/exports/operations?format=csv&page=2")
        .await
        .expect_err(400, "INVALID_QUERY");
    get(&s, &t.business_live, "/v1/exports/operations?format=csv")
        .await
        .expect(403);
}

#[tokio::test]
async fn the_checkout_exports_escape_csv_and_list_each_payment() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let key = &t.business_test;
    // What a payer or a shop typed, as a spreadsheet would run it.
    let description = "=HYPERLINK(\"http://evil.example\",\"click\"), then \"more\"";
    let body = serde_json::json!({"amount": "5", "currency": "USDC", "reference": "@ref,1",
        "description": description, "customer_name": "-Ada", "customer_email": "ada@example.com",
        "networks": ["polygon"], "expires_in_secs": 600, "metadata": {"note": "a\"b"}});
    let r = s
        .post(key, "/api/v1/checkout/sessions", &body.to_string())
        .await;
    r.expect(201);
    let paid = r.json()["session_id"].as_str().unwrap().to_string();
    let body = serde_json::json!({"amount": "2", "currency": "USDC", "reference": "plain",
        "networks": ["polygon"], "expires_in_secs": 600});
    let r = s
        .post(key, "/api/v1/checkout/sessions", &body.to_string())
        .await;
    r.expect(201);
    let unpaid = r.json()["session_id"].as_str().unwrap().to_string();
    for amount in ["3", "2"] {
        s.post(
            key,
            &format!("/api/v1/checkout/sessions/{paid}/simulate-payment"),
            &serde_json::json!({"amount": amount}).to_string(),
        )
        .await
        .expect(200);
    }
    let read = s
        .get(key, &format!("/api/v1/checkout/sessions/{paid}"))
        .await
        .json();

    // Sessions, CSV: quoting, doubled quotes, line breaks and the apostrophe.
    let r = s
        .get(key, "/api/v1/exports/checkout_sessions?format=csv")
        .await;
    r.expect(200);
    assert_eq!(r.header("content-length"), None, "streamed");
    let text = r.text();
    assert!(
        text.contains(
            "\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\"), then \"\"more\"\"\""
        ),
        "{text}"
    );
    let rows = parse_csv(&text);
    assert_eq!(
        rows[0].join(","),
        stablecoin_server::api::export_rows::SESSION_COLUMNS.join(",")
    );
    assert_eq!(rows.len(), 3, "two sessions, newest first");
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    assert_eq!(rows[1][col("session_id")], unpaid);
    let row = &rows[2];
    assert_eq!(row[col("session_id")], paid);
    assert_eq!(row[col("description")], format!("'{description}"));
    assert_eq!(row[col("reference")], "'@ref,1");
    assert_eq!(row[col("customer_name")], "'-Ada");
    assert_eq!(row[col("status")], read["status"].as_str().unwrap());
    assert_eq!(
        row[col("amount_received")],
        read["amount_received"].as_str().unwrap()
    );
    assert_eq!(
        serde_json::from_str::<Value>(&row[col("metadata")]).unwrap(),
        serde_json::json!({"note": "a\"b"})
    );

    // Sessions, JSON lines: the text as typed (no apostrophe: JSON is not a spreadsheet).
    let r = s
        .get(key, "/api/v1/exports/checkout_sessions?format=jsonl")
        .await;
    let lines: Vec<Value> = r
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["description"], description);
    assert_eq!(lines[1]["amount_received"], read["amount_received"]);

    // Payments: one row per deposit, with its session.
    let r = s.get(key, "/api/v1/exports/payments?format=csv").await;
    r.expect(200);
    let rows = parse_csv(&r.text());
    assert_eq!(
        rows[0].join(","),
        stablecoin_server::api::export_rows::PAYMENT_COLUMNS.join(",")
    );
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let deposits = read["deposits"].as_array().unwrap();
    assert_eq!(rows.len() - 1, deposits.len());
    assert_eq!(deposits.len(), 2);
    for (row, d) in rows[1..].iter().zip(deposits) {
        assert_eq!(row[col("session_id")], paid);
        assert_eq!(row[col("reference")], "'@ref,1");
        assert_eq!(row[col("deposit_id")], d["deposit_id"].to_string());
        assert_eq!(row[col("amount")], d["amount"].as_str().unwrap());
        assert_eq!(row[col("tx_hash")], d["tx_hash"].as_str().unwrap());
    }

    // The live key of the same business sees its own (no) sessions; a tenant key is refused.
    let r = s
        .get(&t.business_live, "/api/v1/exports/payments?format=jsonl")
        .await;
    r.expect(200);
    assert_eq!(r.text(), "");
    s.get(&t.live, "/api/v1/exports/payments?format=csv")
        .await
        .expect(403);
}

#[tokio::test]
async fn the_escrows_export_lists_each_deal_as_its_read_shows_it() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    let mut ids = Vec::new();
    for (amount, reference) in [("150", "order-1"), ("20", "@cmd|calc")] {
        let body = serde_json::json!({"buyer_phone_number": A, "seller_phone_number": B,
            "amount": amount, "reference": reference});
        let r = s.post(&acme.live, "/v1/escrows", &body.to_string()).await;
        r.expect(201);
        ids.push(r.json()["id"].as_str().unwrap().to_string());
    }
    s.post(
        &acme.live,
        &format!("/v1/escrows/{}/cancel", ids[1]),
        r#"{"reason":"changed my mind"}"#,
    )
    .await
    .expect(200);

    let r = get(&s, &acme.live, "/v1/exports/escrows?format=jsonl").await;
    r.expect(200);
    let lines: Vec<Value> = r
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for (line, id) in lines.iter().zip(ids.iter().rev()) {
        let read = get(&s, &acme.live, &format!("/v1/escrows/{id}"))
            .await
            .json();
        assert_eq!(line, &read, "the deal as its read shows it");
    }
    let r = get(&s, &acme.live, "/v1/exports/escrows?format=csv").await;
    let rows = parse_csv(&r.text());
    assert_eq!(
        rows[0].join(","),
        stablecoin_server::api::export_rows::ESCROW_COLUMNS.join(",")
    );
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    assert_eq!(rows[1][col("id")], ids[1]);
    assert_eq!(rows[1][col("state")], "CANCELLED");
    assert_eq!(rows[1][col("reference")], "'@cmd|calc");
    assert_eq!(rows[2][col("amount")], "150000000");
    assert_eq!(rows[2][col("payout_pending")], "false");
    let r = get(&s, &beta.live, "/v1/exports/escrows?format=csv").await;
    assert_eq!(parse_csv(&r.text()).len(), 1, "another tenant's: none");
}
