//! Refunds on the tenant dashboard, over real HTTP on loopback (issue #50): a paid,
//! over-paid session's page shows what is refundable, issues a refund through its form
//! (CSRF-checked), refuses one above what is refundable with the engine's code, and
//! shows the refund's state as the worker sends it.

use crate::checkout_refunds::{PAYER, Shop};
use crate::common::console::Console;
use serde_json::json;

#[tokio::test]
async fn the_dashboard_shows_refundable_amounts_issues_refunds_and_shows_their_state() {
    let mut shop = Shop::open().await;
    let r = shop
        .s
        .post(
            &shop.t.live,
            "/v1/businesses",
            &json!({"name": "Cafe"}).to_string(),
        )
        .await;
    r.expect(201);
    let biz = r.json()["business"]["id"].as_str().unwrap().to_string();
    shop.t.business_live = r.json()["live_key"].as_str().unwrap().to_string();
    let (id, _) = shop.paid_session("30").await;

    let mut c = Console::sign_in(&shop.s.base, &shop.t.live).await;
    let path = format!("/dashboard/checkout/{id}?business={biz}");
    let page = c.get(&path).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("30.000000"),
        "refundable shown: {}",
        page.body
    );
    assert!(page.body.contains("id=\"refund-form\""));
    let csrf = page.csrf();

    // Without the CSRF token nothing is issued.
    let refused = c
        .post(
            &format!("/dashboard/checkout/{id}/refunds"),
            &[
                ("business", &biz),
                ("amount", "2"),
                ("network", "polygon"),
                ("address", PAYER),
            ],
        )
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(shop.refunds(&id).await["refunds"], json!([]));

    let too_much = c
        .post(
            &format!("/dashboard/checkout/{id}/refunds"),
            &[
                ("csrf", &csrf),
                ("business", &biz),
                ("amount", "31"),
                ("network", "polygon"),
                ("address", PAYER),
            ],
        )
        .await;
    assert_eq!(too_much.status, 422);
    assert!(too_much.body.contains("REFUND_EXCEEDS_REFUNDABLE"));
    assert_eq!(shop.refunds(&id).await["refunds"], json!([]));

    let issued = c
        .post(
            &format!("/dashboard/checkout/{id}/refunds"),
            &[
                ("csrf", &csrf),
                ("business", &biz),
                ("amount", "2"),
                ("network", "polygon"),
                ("address", PAYER),
                ("reason", "broken cup"),
            ],
        )
        .await;
    assert_eq!(issued.status, 303, "{}", issued.body);
    assert_eq!(issued.location.as_deref(), Some(path.as_str()));
    let list = shop.refunds(&id).await;
    let rf = list["refunds"][0]["refund_id"]
        .as_str()
        .unwrap()
        .to_string();
    let page = c.get(&path).await;
    assert!(page.body.contains(&rf));
    assert!(
        page.body.contains("28.000000"),
        "what is left: {}",
        page.body
    );
    let done = shop.until_final(&rf).await;
    assert_eq!(done["status"], "completed");
    let page = c.get(&path).await;
    assert!(page.body.contains("completed"), "{}", page.body);
    assert!(page.body.contains(done["tx_hash"].as_str().unwrap()));
}
