//! The dashboard edits spending policies and the address book (issue #51), over real
//! HTTP as a browser without JavaScript uses it: forms refused without the session's
//! CSRF token, bad input answered with the API's code and words (never a 500) and the
//! typed values kept, a policy created, edited and deleted, an address-book entry added
//! and removed, a test session refused; each change seen through the tenant's API.

use crate::common::console::Console;
use crate::common::*;
use serde_json::Value;

const A: &str = "+2250700000301";
const HERE: &str = "/dashboard/policies";

async fn policies(s: &Server, key: &str) -> Vec<Value> {
    let r = s.get(key, "/v1/policies").await;
    r.expect(200);
    r.json()["policies"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_dashboard_creates_edits_and_deletes_policies_and_refuses_bad_input_in_words() {
    let s = start().await;
    let t = s.tenant("Policy Dash", "0").await;
    s.provision(&t.live, A).await;
    let mut c = Console::sign_in(&s.base, &t.live).await;
    let page = c.get(HERE).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Create a policy") && page.body.contains("Address book"));
    let csrf = page.csrf();

    // Without the token: refused, nothing created.
    let r = c.post(HERE, &[("max_per_transaction", "10")]).await;
    assert_eq!(r.status, 403);
    assert!(policies(&s, &t.live).await.is_empty());

    // Bad input: the API's status and code, in words, with what was typed kept.
    for (fields, code, kept) in [
        (
            vec![("max_per_transaction", "ten")],
            "INVALID_AMOUNT",
            "value=\"ten\"",
        ),
        (
            vec![("max_per_transaction", "0")],
            "INVALID_AMOUNT",
            "value=\"0\"",
        ),
        (
            vec![("window_24h_count", "many")],
            "INVALID_PARAMETER",
            "value=\"many\"",
        ),
        (
            vec![("cooling_off_hours", "721")],
            "INVALID_PARAMETER",
            "value=\"721\"",
        ),
        (
            vec![("deny_list", "not an address")],
            "INVALID_PARAMETER",
            "not an address",
        ),
        (
            vec![("phone_number", "12345")],
            "INVALID_PHONE",
            "value=\"12345\"",
        ),
        (vec![("rail", "mars")], "INVALID_PARAMETER", ""),
        (vec![("token", "DOGE")], "UNKNOWN_TOKEN", ""),
    ] {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend(fields.iter().copied());
        let r = c.post(HERE, &all).await;
        assert_eq!(r.status, 400, "{fields:?}: {}", r.body);
        assert!(r.body.contains(code), "{fields:?}: {}", r.body);
        assert!(r.body.contains("role=\"alert\""), "{fields:?}: {}", r.body);
        assert!(r.body.contains(kept), "{fields:?} not kept: {}", r.body);
    }
    assert!(policies(&s, &t.live).await.is_empty(), "nothing created");

    // A good one: every rule the model has.
    let r = c
        .post(
            HERE,
            &[
                ("csrf", &csrf),
                ("phone_number", A),
                ("rail", "polygon"),
                ("token", "USDC"),
                ("max_per_transaction", "10"),
                ("window_24h_amount", "30"),
                ("window_7d_count", "20"),
                (
                    "deny_list",
                    "+2250700000999\n0x00000000000000000000000000000000000000AB",
                ),
                ("cooling_off_hours", "12"),
                ("approval_threshold", "8"),
                ("require_address_book", "true"),
            ],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let list = policies(&s, &t.live).await;
    assert_eq!(list.len(), 1);
    let p = &list[0];
    let id = p["id"].as_str().unwrap().to_string();
    assert!(r.body.contains(&id));
    assert_eq!(p["rail"], "polygon");
    assert_eq!(p["token"], "USDC");
    assert!(p["wallet_id"].as_str().unwrap().starts_with("wal_"));
    assert_eq!(p["max_per_transaction"], "10.000000");
    assert_eq!(p["windows"][0]["window"], "24h");
    assert_eq!(p["windows"][0]["max_amount"], "30.000000");
    assert_eq!(p["windows"][1]["window"], "7d");
    assert_eq!(p["windows"][1]["max_count"], 20);
    assert_eq!(p["deny_list"][0], "+2250700000999");
    assert_eq!(
        p["deny_list"][1], "0x00000000000000000000000000000000000000ab",
        "EVM addresses compared lower-cased"
    );
    assert_eq!(p["cooling_off_hours"], 12);
    assert_eq!(p["approval_threshold"], "8.000000");
    assert_eq!(p["require_address_book"], true);

    // The edit page is filled with the policy's rules; saving replaces them.
    let edit = c.get(&format!("{HERE}/{id}")).await;
    assert_eq!(edit.status, 200, "{}", edit.body);
    for v in ["value=\"10.000000\"", "value=\"30.000000\"", A, "checked"] {
        assert!(edit.body.contains(v), "{v} not in {}", edit.body);
    }
    let r = c
        .post(
            &format!("{HERE}/{id}"),
            &[("csrf", &csrf), ("max_per_transaction", "5")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let p = &policies(&s, &t.live).await[0];
    assert_eq!(p["max_per_transaction"], "5.000000");
    assert_eq!(p["windows"], serde_json::json!([]));
    assert_eq!(p["require_address_book"], false);
    // A refused edit changes nothing and keeps what was typed.
    let r = c
        .post(
            &format!("{HERE}/{id}"),
            &[("csrf", &csrf), ("approval_threshold", "-1")],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("value=\"-1\""));
    assert_eq!(
        policies(&s, &t.live).await[0]["max_per_transaction"],
        "5.000000"
    );
    // Another tenant's policy, or none, is not found.
    let r = c
        .post(
            &format!("{HERE}/pol_nope"),
            &[("csrf", &csrf), ("max_per_transaction", "5")],
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);

    // Delete.
    let r = c
        .post(&format!("{HERE}/{id}/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("deleted"));
    assert!(policies(&s, &t.live).await.is_empty());
    assert_eq!(
        c.get(&format!("{HERE}/{id}")).await.status,
        404,
        "a deleted policy has no edit page"
    );
}

#[tokio::test]
async fn the_dashboard_adds_and_removes_address_book_entries_and_a_test_session_changes_nothing() {
    let s = start().await;
    let t = s.tenant("Book Dash", "0").await;
    let mut c = Console::sign_in(&s.base, &t.live).await;
    let csrf = c.csrf(HERE).await;
    let r = c
        .post(
            "/dashboard/address-book",
            &[("csrf", &csrf), ("value", "has spaces"), ("label", "x")],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("INVALID_PARAMETER"));
    let r = c
        .post(
            "/dashboard/address-book",
            &[("csrf", &csrf), ("value", A), ("label", "Supplier <b>")],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(
        r.body.contains("Supplier &lt;b&gt;") && !r.body.contains("Supplier <b>"),
        "the label is escaped"
    );
    assert!(r.body.contains("cooling off until"));
    let book = s.get(&t.live, "/v1/address-book").await.json();
    assert_eq!(book["total"], 1);
    assert_eq!(book["entries"][0]["label"], "Supplier <b>");
    let entry = book["entries"][0]["id"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("/dashboard/address-book/{entry}/remove"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(s.get(&t.live, "/v1/address-book").await.json()["total"], 0);

    // A test session reads policies but cannot change them, as the API's test key.
    let mut test = Console::sign_in(&s.base, &t.test).await;
    let csrf = test.csrf(HERE).await;
    let r = test
        .post(HERE, &[("csrf", &csrf), ("max_per_transaction", "1")])
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("SANDBOX_UNSUPPORTED"), "{}", r.body);
    let r = test
        .post(
            "/dashboard/address-book",
            &[("csrf", &csrf), ("value", A), ("label", "x")],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(policies(&s, &t.live).await.is_empty());
}
