//! The dashboard manages a business's payment links (issue #50), over real HTTP as a
//! browser without JavaScript uses it: the list, a link created by the form (CSRF
//! checked, nothing created without the token), a refused form with the API's code, and
//! a deactivation; each seen through the business key's API.

use crate::common::console::Console;
use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn the_dashboard_lists_creates_and_deactivates_payment_links() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let r = s
        .post(
            &acme.live,
            "/v1/businesses",
            &json!({"name": "Shop"}).to_string(),
        )
        .await;
    r.expect(201);
    let biz = r.json()["business"]["id"].as_str().unwrap().to_string();
    let shop_key = r.json()["live_key"].as_str().unwrap().to_string();
    let mut c = Console::sign_in(&s.base, &acme.live).await;
    let here = format!("/dashboard/payment-links?business={biz}");

    let page = c.get(&here).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Create a payment link"));
    let csrf = page.csrf();

    // Without the token: refused, nothing created.
    let r = c
        .post(&here, &[("amount", "9"), ("currency", "USDC")])
        .await;
    assert_eq!(r.status, 403);
    let list = s.get(&shop_key, "/api/v1/payment-links").await.json();
    assert!(list["payment_links"].as_array().unwrap().is_empty());

    // A refused form shows the API's code.
    let r = c
        .post(
            &here,
            &[
                ("csrf", &csrf),
                ("amount", "9"),
                ("min_amount", "1"),
                ("currency", "USDC"),
            ],
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("INVALID_PARAMETER"), "{}", r.body);

    let r = c
        .post(
            &here,
            &[
                ("csrf", &csrf),
                ("amount", "9.99"),
                ("currency", "USDC"),
                ("description", "Ticket"),
                ("max_payments", "3"),
            ],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let list = s.get(&shop_key, "/api/v1/payment-links").await.json();
    let links = list["payment_links"].as_array().unwrap();
    assert_eq!(links.len(), 1);
    let id = links[0]["link_id"].as_str().unwrap().to_string();
    assert_eq!(links[0]["amount"], "9.990000");
    assert_eq!(links[0]["max_payments"], 3);
    assert_eq!(links[0]["mode"], "live");
    assert!(r.body.contains(&id) && r.body.contains(&format!("/pay/l/{id}")));
    let page = c.get(&here).await;
    assert!(page.body.contains(&id) && page.body.contains("Deactivate"));

    let r = c
        .post(
            &format!("/dashboard/payment-links/{id}/deactivate?business={biz}"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("deactivated"));
    let l = s
        .get(&shop_key, &format!("/api/v1/payment-links/{id}"))
        .await
        .json();
    assert_eq!(l["status"], "inactive");
}
