//! The overview's sponsorship-budget table (issue #51 item 4): per rail, what the
//! tenant's confirmed payments cost the service this UTC day and month against the caps
//! staff set. It reads what `GET /v1/sponsorship-budgets` reads; staff set the caps.

use super::{TenantPage, error_notice};
use crate::api::sponsorship::budget_view;
use crate::error::ApiError;
use crate::pages::html::{e, table};

/// `spent / cap` of one resource, or the spend alone when it is uncapped.
fn against(spent: &str, cap: &Option<String>) -> String {
    match cap {
        Some(c) => format!("{spent} / {c}"),
        None => format!("{spent} (no cap)"),
    }
}

/// The "Sponsorship budgets" section: a heading, then a table or a one-line hint when
/// staff set no budget for the tenant.
pub(super) async fn budget_section(p: &TenantPage) -> String {
    let mut out = String::from("<h2>Sponsorship budgets</h2>");
    let budgets = match p.app.engine.sponsor_budgets(&p.auth.tenant).await {
        Ok(b) => b,
        Err(err) => {
            out.push_str(&error_notice(&ApiError::from(err)));
            return out;
        }
    };
    if budgets.is_empty() {
        out.push_str("<p class=\"hint\">No sponsorship budget: the service sponsors your payments without a cap.</p>");
        return out;
    }
    let now = p.app.engine.ports().clock.now();
    let mut rows = Vec::new();
    for b in &budgets {
        let v = budget_view(b, now);
        let tron = v.rail == "tron";
        let mut resources = vec![(
            "native",
            &v.spent_today.native,
            &v.daily.native,
            &v.spent_this_month.native,
            &v.monthly.native,
        )];
        if tron {
            resources.push((
                "energy",
                &v.spent_today.energy,
                &v.daily.energy,
                &v.spent_this_month.energy,
                &v.monthly.energy,
            ));
            resources.push((
                "bandwidth",
                &v.spent_today.bandwidth,
                &v.daily.bandwidth,
                &v.spent_this_month.bandwidth,
                &v.monthly.bandwidth,
            ));
        }
        for (resource, day, day_cap, month, month_cap) in resources {
            rows.push(vec![
                e(&v.rail),
                e(resource),
                e(&against(day, day_cap)),
                e(&against(month, month_cap)),
                v.payments_metered.to_string(),
            ]);
        }
    }
    out.push_str(&table(
        "Sponsored cost this UTC day and month against the caps (wei, sun or lamports; TRON energy and bandwidth)",
        &["Rail", "Resource", "Today / cap", "This month / cap", "Payments"],
        &rows,
    ));
    out.push_str("<p class=\"hint\">A payment whose budget is spent is refused (SPONSORSHIP_BUDGET_EXCEEDED) until the period starts over at 00:00 UTC; service staff set the caps.</p>");
    out
}
