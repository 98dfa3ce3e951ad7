//! The OpenAPI document validates and matches the router; and every authenticated
//! operation refuses missing, malformed, unknown, revoked and wrong-kind keys.

use crate::common::*;
use reqwest::Method;
use serde_json::Value;
use std::collections::BTreeSet;

/// The route table (spec section 4 paths, with `/api` where the address note puts one).
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/account"),
    ("POST", "/v1/account/test-mode"),
    ("POST", "/v1/users/provision"),
    ("POST", "/v1/users/fund"),
    ("GET", "/v1/users/balance"),
    ("POST", "/v1/users/withdraw"),
    ("POST", "/v1/users/link/request"),
    ("POST", "/v1/users/link/confirm"),
    ("POST", "/v1/users/phone-change/request"),
    ("POST", "/v1/users/phone-change/confirm"),
    ("POST", "/v1/transfers/send"),
    ("GET", "/v1/transfers"),
    ("GET", "/v1/transfers/{id}"),
    ("GET", "/v1/fundings/{id}"),
    ("GET", "/v1/withdrawals/{id}"),
    ("GET", "/v1/swaps/{id}"),
    ("POST", "/v1/swaps"),
    ("GET", "/v1/swaps"),
    ("POST", "/api/v1/fx/quote"),
    ("POST", "/v1/tron/users/provision"),
    ("GET", "/v1/tron/users/balance"),
    ("POST", "/v1/tron/transfers/send"),
    ("POST", "/v1/tron/users/withdraw"),
    ("POST", "/v1/solana/users/provision"),
    ("GET", "/v1/solana/users/balance"),
    ("POST", "/v1/solana/transfers/send"),
    ("POST", "/v1/escrows"),
    ("GET", "/v1/escrows"),
    ("GET", "/v1/escrows/{id}"),
    ("GET", "/v1/escrows/{id}/events"),
    ("POST", "/v1/escrows/{id}/release"),
    ("POST", "/v1/escrows/{id}/refund"),
    ("POST", "/v1/escrows/{id}/dispute"),
    ("POST", "/v1/escrows/{id}/cancel"),
    ("POST", "/v1/webhook-endpoints"),
    ("GET", "/v1/webhook-endpoints"),
    ("GET", "/v1/webhook-endpoints/{id}"),
    ("DELETE", "/v1/webhook-endpoints/{id}"),
    ("POST", "/v1/webhook-endpoints/{id}/enable"),
    ("POST", "/v1/webhook-endpoints/{id}/rotate-secret"),
    ("GET", "/v1/webhook-events"),
    ("GET", "/v1/webhook-events/{id}"),
    ("GET", "/v1/events"),
    ("GET", "/v1/events/{id}"),
    ("GET", "/v1/statements"),
    ("POST", "/v1/webhook-events/{id}/replay"),
    ("POST", "/v1/webhook-events/replay-failed"),
    ("GET", "/v1/webhook-deliveries"),
    ("POST", "/v1/treasury/topups"),
    ("GET", "/v1/treasury/topups"),
    ("GET", "/v1/treasury/topups/{id}"),
    ("POST", "/admin/v1/topups/{id}/confirm"),
    ("GET", "/admin/v1/reconciliation"),
    ("GET", "/admin/v1/escrows"),
    ("GET", "/admin/v1/escrows/{id}"),
    ("GET", "/admin/v1/escrows/{id}/events"),
    ("POST", "/admin/v1/escrows/{id}/resolve"),
    ("POST", "/admin/v1/escrows/{id}/recoveries"),
    ("GET", "/admin/v1/audit"),
    ("POST", "/admin/v1/withdrawals/{id}/payout/resolve"),
    ("POST", "/admin/v1/payouts/reconciliation"),
    ("GET", "/admin/v1/stray-deposits"),
    ("POST", "/admin/v1/stray-deposits/{id}/return"),
    ("POST", "/admin/v1/policy-approvals/{id}/approve"),
    ("POST", "/admin/v1/tenants/{id}/approver-keys"),
    ("GET", "/v1/policy-approvals"),
    ("POST", "/v1/policy-approvals/{id}/approve"),
    ("POST", "/v1/policies"),
    ("GET", "/v1/policies"),
    ("GET", "/v1/policies/{id}"),
    ("POST", "/v1/policies/{id}"),
    ("DELETE", "/v1/policies/{id}"),
    ("POST", "/v1/policies/evaluate"),
    ("GET", "/v1/policies/approvals/{id}"),
    ("POST", "/v1/address-book"),
    ("GET", "/v1/address-book"),
    ("DELETE", "/v1/address-book/{id}"),
    ("GET", "/v1/sponsorship-budgets"),
    ("GET", "/admin/v1/tenants/{id}/sponsorship-budgets"),
    ("POST", "/admin/v1/tenants/{id}/sponsorship-budgets"),
    ("GET", "/admin/v1/quarantined-deposits"),
    ("GET", "/admin/v1/quarantined-deposits/{id}"),
    ("POST", "/admin/v1/quarantined-deposits/{id}/release"),
    ("POST", "/admin/v1/quarantined-deposits/{id}/return"),
    ("GET", "/api/v1/checkout/list"),
    ("GET", "/api/v1/exports/checkout_sessions"),
    ("GET", "/api/v1/exports/payments"),
    ("GET", "/v1/exports/operations"),
    ("GET", "/v1/exports/withdrawals"),
    ("GET", "/v1/exports/escrows"),
    ("GET", "/api/v1/events"),
    ("GET", "/api/v1/events/{id}"),
    ("POST", "/api/v1/checkout/sessions"),
    ("GET", "/api/v1/checkout/sessions/{session_id}"),
    ("POST", "/api/v1/checkout/sessions/{session_id}/cancel"),
    ("POST", "/api/v1/checkout/sessions/{session_id}/refunds"),
    ("GET", "/api/v1/checkout/sessions/{session_id}/refunds"),
    ("GET", "/api/v1/checkout/refunds/{refund_id}"),
    ("POST", "/v1/businesses/{id}/auto-refunds"),
    (
        "POST",
        "/api/v1/checkout/sessions/{session_id}/simulate-payment",
    ),
    ("POST", "/v1/businesses"),
    ("GET", "/v1/businesses"),
    ("POST", "/api/v1/payment-links"),
    ("GET", "/api/v1/payment-links"),
    ("GET", "/api/v1/payment-links/{link_id}"),
    ("POST", "/api/v1/payment-links/{link_id}/deactivate"),
    ("POST", "/v1/scanner/deposit-events"),
    ("POST", "/api/v1/pay/{session_id}/phone-payment/code"),
    ("POST", "/api/v1/pay/{session_id}/phone-payment/confirm"),
    ("GET", "/health/live"),
    ("GET", "/health/ready"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
];

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

struct Op {
    method: String,
    path: String,
    op: Value,
}

fn operations(doc: &Value) -> Vec<Op> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for m in METHODS {
            if let Some(op) = item.get(m) {
                out.push(Op {
                    method: m.to_uppercase(),
                    path: path.clone(),
                    op: op.clone(),
                });
            }
        }
    }
    out
}

fn concrete(path: &str) -> String {
    path.replace("{id}", "x_1")
        .replace("{session_id}", "cs_x")
        .replace("{refund_id}", "rf_x")
        .replace("{link_id}", "plink_x")
}

fn resolve<'a>(doc: &'a Value, r: &str) -> Option<&'a Value> {
    let name = r.strip_prefix("#/components/schemas/")?;
    doc["components"]["schemas"].get(name)
}

fn check_refs(doc: &Value, v: &Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                assert!(resolve(doc, r).is_some(), "dangling $ref {r}");
            }
            map.values().for_each(|v| check_refs(doc, v));
        }
        Value::Array(a) => a.iter().for_each(|v| check_refs(doc, v)),
        _ => {}
    }
}

async fn document(s: &Server) -> Value {
    let r = s.send(Method::GET, "/openapi.json", None, None, &[]).await;
    r.expect(200);
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/json")
    );
    r.json()
}

#[tokio::test]
async fn document_is_valid_openapi_3_1() {
    let s = start().await;
    let doc = document(&s).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.0.1");
    assert!(doc["info"]["title"].as_str().is_some_and(|t| !t.is_empty()));
    let desc = doc["info"]["description"].as_str().unwrap();
    for code in stablecoin_server::ERROR_CATALOGUE.iter().map(|e| e.0) {
        assert!(desc.contains(&format!("`{code}`")), "{code} documented");
    }
    let schemes = &doc["components"]["securitySchemes"];
    for name in ["tenant_key", "business_key", "approver_key"] {
        assert_eq!(schemes[name]["type"], "apiKey");
        assert_eq!(schemes[name]["in"], "header");
        assert_eq!(schemes[name]["name"], "X-API-Key");
    }
    assert_eq!(schemes["admin_token"]["type"], "http");
    assert_eq!(schemes["admin_token"]["scheme"], "bearer");
    check_refs(&doc, &doc);
    let ops = operations(&doc);
    assert!(!ops.is_empty());
    let mut ids = BTreeSet::new();
    for Op { method, path, op } in &ops {
        assert!(path.starts_with('/'), "{path}");
        let responses = op["responses"].as_object().expect("responses");
        assert!(!responses.is_empty(), "{method} {path} has responses");
        for (status, r) in responses {
            assert!(
                status.len() == 3 && status.parse::<u16>().is_ok(),
                "{method} {path}: status {status}"
            );
            assert!(r["description"].is_string(), "{method} {path} {status}");
        }
        if let Some(id) = op["operationId"].as_str() {
            assert!(ids.insert(id.to_string()), "duplicate operationId {id}");
        }
        // Every path parameter is declared.
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        for seg in path.split('/').filter(|s| s.starts_with('{')) {
            let name = seg.trim_matches(|c| c == '{' || c == '}');
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == name && p["in"] == "path" && p["required"] == true),
                "{method} {path}: path parameter {name}"
            );
        }
        if let Some(sec) = op["security"].as_array() {
            for req in sec {
                for name in req.as_object().unwrap().keys() {
                    assert!(schemes.get(name).is_some(), "{name}");
                }
            }
            assert!(
                responses.contains_key("401"),
                "{method} {path} documents 401"
            );
        }
        if method == "POST" && op["security"].is_array() {
            let idem = params.iter().any(|p| p["name"] == "Idempotency-Key");
            // Escrow, session and payment-link actions, and staff routes (a replayed
            // confirmation is refused), are safe to retry without a key.
            let escrow_action = path.starts_with("/v1/escrows/{id}/")
                || (path.starts_with("/api/v1/checkout/sessions/{session_id}/")
                    && !path.ends_with("/refunds"))
                || path.starts_with("/api/v1/payment-links/{link_id}/")
                || path.starts_with("/admin/");
            assert_eq!(idem, !escrow_action, "{method} {path}: Idempotency-Key");
        }
        if op.get("requestBody").is_some() {
            assert!(
                op["requestBody"]["content"]["application/json"]["schema"].is_object(),
                "{method} {path}: JSON body schema"
            );
        }
    }
    // Served document == the one the library builds.
    let built = serde_json::to_value(stablecoin_server::openapi(s.app.state())).unwrap();
    assert_eq!(built, doc);
}

#[tokio::test]
async fn document_lists_exactly_the_routes_the_router_serves() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let doc = document(&s).await;
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|o| (o.method, o.path))
        .collect();
    let expected: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, expected, "route table");

    // Every documented operation is served (a matched route never answers
    // ROUTE_NOT_FOUND or METHOD_NOT_ALLOWED) ...
    for Op { method, path, op } in operations(&doc) {
        let key = if op["security"][0].get("business_key").is_some() {
            Some(t.business_live.as_str())
        } else if op["security"].is_array() {
            Some(t.live.as_str())
        } else {
            None
        };
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let body = (m == Method::POST).then_some("{}");
        let r = s.send(m, &concrete(&path), key, body, &[]).await;
        assert!(
            r.status != 404 || r.code() != "ROUTE_NOT_FOUND",
            "{method} {path} is routed"
        );
        assert_ne!(r.status, 405, "{method} {path} accepts its method");
        assert!(
            r.status < 500 || r.status == 501 || r.status == 503,
            "{method} {path}: {}",
            r.text()
        );
    }
    // ... and nothing else is: other methods on documented paths are 405, other paths 404.
    for path in expected
        .iter()
        .map(|(_, p)| p.clone())
        .collect::<BTreeSet<_>>()
    {
        for m in METHODS {
            let upper = m.to_uppercase();
            if expected.contains(&(upper.clone(), path.clone())) {
                continue;
            }
            let r = s
                .send(
                    Method::from_bytes(upper.as_bytes()).unwrap(),
                    &concrete(&path),
                    Some(&t.live),
                    None,
                    &[],
                )
                .await;
            r.expect_err(405, "METHOD_NOT_ALLOWED");
        }
    }
    for path in [
        "/",
        "/v1",
        "/v1/users",
        "/v1/fx/quote",
        "/v1/checkout/list",
        "/api/v1/users/provision",
        "/v1/solana/provision",
        "/v2/transfers",
        "/v1/transfers/x/y",
    ] {
        let r = s.send(Method::GET, path, Some(&t.live), None, &[]).await;
        r.expect_err(404, "ROUTE_NOT_FOUND");
    }
}

#[tokio::test]
async fn every_authenticated_operation_refuses_bad_keys() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let revoked = s.tenant("Gone", "0").await;
    s.app
        .engine()
        .revoke_api_key(&revoked.id, &revoked.live_key_id)
        .await
        .unwrap();
    let doc = document(&s).await;
    let commits = s.commits();
    let mut checked = 0;
    for Op { method, path, op } in operations(&doc) {
        let Some(sec) = op["security"].as_array() else {
            continue;
        };
        if sec[0].get("admin_token").is_some() {
            // Staff routes take the admin token, not an API key: `topups_http.rs`,
            // `reconciliation_http.rs`.
            continue;
        }
        let business = sec[0].get("business_key").is_some();
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let body = (m == Method::POST).then_some(r#"{"phone_number":"+2250700000001"}"#);
        let p = concrete(&path);
        let unknown_key = format!("svc_sk_live_{}", "a".repeat(32));
        let wrong_kind = if business {
            t.live.clone()
        } else {
            t.business_live.clone()
        };
        for (key, status, code) in [
            (None, 401, "MISSING_API_KEY"),
            (Some("svc_sk_live_short"), 401, "MALFORMED_API_KEY"),
            (Some("Bearer abc"), 401, "MALFORMED_API_KEY"),
            (Some(unknown_key.as_str()), 401, "INVALID_API_KEY"),
            (Some(revoked.live.as_str()), 401, "API_KEY_REVOKED"),
            (Some(wrong_kind.as_str()), 403, "KEY_KIND_NOT_ALLOWED"),
        ] {
            let r = s.send(m.clone(), &p, key, body, &[]).await;
            assert_eq!(
                (r.status, r.code()),
                (status, code.to_string()),
                "{method} {path} with {key:?}"
            );
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        ROUTES.len() - 27,
        "all but health, metrics, openapi, the signed deposit intake, the two public phone-payment routes and the twenty staff routes"
    );
    assert_eq!(s.commits(), commits, "refused requests write nothing");
}
