//! Finishing the generated OpenAPI document with what every operation shares and with
//! what only the running server knows.
//!
//! The handlers' annotations describe their own outcomes. Everything that comes from a
//! layer around them is added here, once, so no route can forget it: authentication
//! (401, 403), the per-key rate limit (429 with `Retry-After`), the request timeout (408),
//! body decoding (400, 413, 415), HTTP idempotency (the `Idempotency-Key` header, 409,
//! 422) and the internal error (500). Then the schemas that depend on the configuration
//! are refreshed from the server's state: the tokens each rail carries, the escrow
//! bounds and the EVM chains `network` may name.

use super::schemas::{
    IDEMPOTENCY_KEY_PATTERN, components as components_of_schemas, escrow_request_schemas,
    rail_token_schema,
};
use crate::error::catalogue_markdown;
use crate::state::AppState;
use serde_json::{Value, json};
use stablecoin_core::ports::RailId;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Required, Response, ResponseBuilder};

/// The shared error responses, by status, with the codes each one carries.
const SHARED: &[(&str, &str)] = &[
    (
        "400",
        "Invalid input: MALFORMED_JSON, UNKNOWN_FIELD, MISSING_FIELD, INVALID_TYPE, INVALID_QUERY, INVALID_PATH, INVALID_IDEMPOTENCY_KEY and the field checks (see the error code and param)",
    ),
    (
        "401",
        "MISSING_API_KEY, MALFORMED_API_KEY, INVALID_API_KEY or API_KEY_REVOKED",
    ),
    (
        "403",
        "KEY_KIND_NOT_ALLOWED (wrong kind of key), SANDBOX_UNSUPPORTED, NOT_A_MEMBER",
    ),
    (
        "408",
        "REQUEST_TIMEOUT: the handler did not answer in time; a POST may be replayed with the same Idempotency-Key to learn its outcome",
    ),
    ("413", "PAYLOAD_TOO_LARGE"),
    ("415", "UNSUPPORTED_MEDIA_TYPE"),
    (
        "429",
        "RATE_LIMITED: this key's budget for this kind of request is spent; retry after `Retry-After` seconds",
    ),
    (
        "500",
        "INTERNAL, STORAGE_ERROR or SIGNER_ERROR: a dependency of the server failed; retry (with the same Idempotency-Key for a POST)",
    ),
];

fn shared(status: &str) -> &'static str {
    SHARED
        .iter()
        .find(|(s, _)| *s == status)
        .map(|(_, d)| *d)
        .unwrap_or("")
}

fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}

fn string_header(description: &str) -> RefOr<utoipa::openapi::header::Header> {
    HeaderBuilder::new()
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .description(Some(description))
        .build()
        .into()
}

/// Adds the shared response `status` to `op`.
fn add_response(op: &mut Operation, status: &str) {
    merge_response(op, status, shared(status));
}

/// Documents `text` under `status`: a response the handler already documents keeps its
/// description and gets `text` appended.
fn merge_response(op: &mut Operation, status: &str, text: &str) {
    match op.responses.responses.get_mut(status) {
        Some(RefOr::T(r)) => {
            if !r.description.contains(text) {
                r.description = format!("{}. Also: {text}", r.description.trim_end_matches('.'));
            }
        }
        Some(RefOr::Ref(_)) => {}
        None => {
            op.responses
                .responses
                .insert(status.to_string(), error_response(text).into());
        }
    }
}

/// `Retry-After` on every 429, and the IETF rate-limit headers on 429 and on success.
fn add_rate_limit_headers(op: &mut Operation) {
    for (status, r) in op.responses.responses.iter_mut() {
        let RefOr::T(r) = r else { continue };
        if status == "429" {
            r.headers.insert(
                "Retry-After".into(),
                HeaderBuilder::new()
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(1)),
                    ))
                    .description(Some("Seconds to wait before retrying."))
                    .build()
                    .into(),
            );
        }
        if status == "429" || status.starts_with('2') {
            r.headers.insert(
                "RateLimit".into(),
                string_header(
                    "The key's remaining budget of this kind of request (IETF httpapi-ratelimit-headers), e.g. `\"read\";r=299;t=1`.",
                ),
            );
            r.headers.insert(
                "RateLimit-Policy".into(),
                string_header("The budget's quota and window, e.g. `\"read\";q=300;w=1`."),
            );
        }
    }
}

fn idempotency_key_parameter() -> utoipa::openapi::path::Parameter {
    ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "1-255 printable ASCII characters (no leading or trailing space). The first 2xx response for a key is replayed byte for byte with `Idempotent-Replayed: true`; the same key with another request is 422 IDEMPOTENCY_KEY_REUSED; while the first runs, 409 IDEMPOTENCY_KEY_IN_USE.",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some(IDEMPOTENCY_KEY_PATTERN)),
        ))
        .build()
}

/// POST routes that take no `Idempotency-Key`: escrow actions (spec 2.2) and the
/// checkout's session actions, whose state rules make them safe to retry (a second
/// cancel is 409; a simulated payment is a test key's own repeatable act; a second
/// deactivation of a payment link answers it unchanged). A refund is not one: it creates
/// money movement, so its engine honours `Idempotency-Key`.
fn is_escrow_action(path: &str) -> bool {
    (path.starts_with("/v1/escrows/{id}/") && !path.ends_with("/events"))
        || (path.starts_with("/api/v1/checkout/sessions/{session_id}/")
            && !path.ends_with("/refunds"))
        || path.starts_with("/api/v1/payment-links/{link_id}/")
}

/// Staff routes: the admin token or a staff secret, not an API key; no rate limit, no
/// `Idempotency-Key` (a replayed confirmation or resolution is refused by its state). Their 401/403/404 are their handlers' own.
fn is_admin(path: &str) -> bool {
    path.starts_with("/admin/")
}

fn security_schemes(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "tenant_key",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "X-API-Key",
            "Tenant key: svc_sk_live_... (live) or svc_sk_test_... (sandbox)",
        ))),
    );
    components.add_security_scheme(
        "admin_token",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "Service staff: `Authorization: Bearer <admin.token>` (the server's `[admin] token`) or `Bearer stf_sk_...` (a staff account's secret, recorded under its `stf_...` id); without an admin token, a request without a staff secret answers 404 ADMIN_DISABLED",
                ))
                .build(),
        ),
    );
    components.add_security_scheme(
        "approver_key",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "X-API-Key",
            "A tenant's approver key: svc_sk_live_..., issued by staff (POST /admin/v1/tenants/{id}/approver-keys); it opens /v1/policy-approvals only, and a tenant key does not open those",
        ))),
    );
    components.add_security_scheme(
        "business_key",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "X-API-Key",
            "Business key: live_sk_... (production) or test_sk_... (sandbox)",
        ))),
    );
}

/// The schemas that depend on the running server: the tokens of each rail, the escrow
/// bounds.
fn configured_schemas(doc: &mut OpenApi, state: &AppState) {
    let components = doc.components.get_or_insert_with(Default::default);
    for (name, schema) in components_of_schemas() {
        components.schemas.entry(name).or_insert(schema);
    }
    let rails = [
        ("EvmToken", state.engine.evm_rail().ok(), "EVM"),
        ("TronToken", state.engine.rail(RailId::Tron).ok(), "TRON"),
        (
            "SolanaToken",
            state.engine.rail(RailId::Solana).ok(),
            "Solana",
        ),
    ];
    for (name, rail, label) in rails {
        // A rail that is not configured answers 503 RAIL_NOT_READY: its routes keep the
        // default list.
        if let Some(rail) = rail
            && components.schemas.contains_key(name)
        {
            components
                .schemas
                .insert(name.into(), rail_token_schema(&rail.tokens(), label));
        }
    }
    let escrow_config = state
        .escrow
        .as_ref()
        .map(|e| e.config().clone())
        .unwrap_or_default();
    for (name, schema) in escrow_request_schemas(&escrow_config) {
        components.schemas.insert(name.into(), schema);
    }
    checkout_networks(components, state);
    let networks = network_values(state);
    for body in ["FundBody", "WithdrawBody", "SendBody", "SwapBody"] {
        if let Some(schema) = components.schemas.get_mut(body) {
            *schema = with_json(schema, |v| {
                if let Some(p) = v["properties"].get_mut("network") {
                    *p = network_schema(p, &networks, true);
                }
            });
        }
    }
}

/// The checkout's networks (`networks` of a session, `network` of a simulated payment)
/// as the rails of this server that watch deposits: the others are refused
/// (`UNSUPPORTED_NETWORK`), so they are not listed.
fn checkout_networks(components: &mut utoipa::openapi::Components, state: &AppState) {
    let names: Vec<Value> = state
        .engine
        .rails()
        .filter(|r| r.monitors_inbound())
        .map(|r| json!(r.id().name()))
        .collect();
    // Property by property: these schemas hold parts (free-form metadata) that do not
    // survive a round trip through utoipa's types as a whole.
    if let Some(p) = property(components, "CreateSessionRequest", "networks") {
        *p = with_json(&*p, |v| {
            v["items"] = json!({"type": "string", "enum": names.clone()});
        });
    }
    if let Some(p) = property(components, "SimulatePaymentRequest", "network") {
        *p = with_json(&*p, |v| {
            let mut all = names.clone();
            all.push(Value::Null);
            let description = v.get("description").cloned();
            *v = json!({"type": ["string", "null"], "enum": all});
            if let Some(d) = description {
                v["description"] = d;
            }
        });
    }
}

/// The property `name` of the object schema `schema` of the components.
fn property<'a>(
    components: &'a mut utoipa::openapi::Components,
    schema: &str,
    name: &str,
) -> Option<&'a mut RefOr<utoipa::openapi::schema::Schema>> {
    match components.schemas.get_mut(schema)? {
        RefOr::T(utoipa::openapi::schema::Schema::Object(o)) => o.properties.get_mut(name),
        _ => None,
    }
}

/// What `network` accepts on this server (`super::network`, then the engine): each
/// enabled EVM chain as its name, `evm-<chain id>` and the bare chain id. A chain the
/// configuration leaves out is refused, so it is not listed.
fn network_values(state: &AppState) -> Vec<String> {
    let mut out = Vec::new();
    for rail in state.engine.evm_rails() {
        let id = rail.id();
        let RailId::Evm(chain) = id else { continue };
        for v in [id.name(), format!("evm-{chain}"), chain.to_string()] {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// `old` (a `network` property or parameter schema) as the enumeration `values`, plus
/// `null` for a body's optional field; its description kept.
fn network_schema(old: &Value, values: &[String], nullable: bool) -> Value {
    let mut all: Vec<Value> = values.iter().map(|v| json!(v)).collect();
    if nullable {
        all.push(Value::Null);
    }
    let mut new = json!({
        "type": if nullable { json!(["string", "null"]) } else { json!("string") },
        "enum": all,
    });
    if let Some(d) = old.get("description") {
        new["description"] = d.clone();
    }
    if let Some(first) = values.first() {
        new["example"] = json!(first);
    }
    new
}

/// `schema` changed by `f` on its JSON form (unchanged if it does not round-trip).
fn with_json<T>(schema: &T, f: impl FnOnce(&mut Value)) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned + Clone,
{
    let Ok(mut v) = serde_json::to_value(schema) else {
        return schema.clone();
    };
    f(&mut v);
    serde_json::from_value(v).unwrap_or_else(|_| schema.clone())
}

/// The `network` query parameters (the EVM balance read) as the enabled chains, and
/// `all` where the parameter's pattern offers it.
fn network_parameters(doc: &mut OpenApi, state: &AppState) {
    let networks = network_values(state);
    for item in doc.paths.paths.values_mut() {
        for op in [item.get.as_mut(), item.post.as_mut(), item.delete.as_mut()]
            .into_iter()
            .flatten()
        {
            for param in op.parameters.iter_mut().flatten() {
                let RefOr::T(param) = param else { continue };
                if param.name != "network" {
                    continue;
                }
                *param = with_json(&*param, |v| {
                    let with_all = v["schema"]["pattern"]
                        .as_str()
                        .is_some_and(|p| p.contains("all|"));
                    let mut values = networks.clone();
                    if with_all {
                        values.insert(0, "all".into());
                    }
                    let old = v["schema"].clone();
                    v["schema"] = network_schema(&old, &values, false);
                    if let Some(d) = old.get("description") {
                        v["schema"]["description"] = d.clone();
                    }
                });
            }
        }
    }
}

/// Completes the generated document (see the module documentation).
pub(super) fn finish(doc: &mut OpenApi, state: &AppState) {
    doc.info.version = super::API_VERSION.to_string();
    if let Some(d) = doc.info.description.as_mut() {
        d.push_str("\n\n## Error codes\n\n");
        d.push_str(&catalogue_markdown());
    }
    security_schemes(doc);
    configured_schemas(doc, state);
    network_parameters(doc, state);
    for (path, item) in doc.paths.paths.iter_mut() {
        let ops = [
            (false, item.get.as_mut()),
            (true, item.post.as_mut()),
            (false, item.delete.as_mut()),
        ];
        for (is_post, op) in ops {
            let Some(op) = op else { continue };
            let admin = is_admin(path);
            let authenticated = op.security.is_some() && !admin;
            let idempotent = is_post && authenticated && !is_escrow_action(path);
            if authenticated {
                add_response(op, "401");
                add_response(op, "403");
                add_response(op, "429");
            }
            let has_input = op.request_body.is_some()
                || op.parameters.as_ref().is_some_and(|p| !p.is_empty())
                || idempotent;
            if has_input {
                add_response(op, "400");
            }
            // The idempotency layer reads every POST body, with the server's limit.
            if op.request_body.is_some() || idempotent {
                add_response(op, "413");
            }
            if op.request_body.is_some() {
                add_response(op, "415");
            }
            if idempotent {
                op.parameters
                    .get_or_insert_with(Vec::new)
                    .push(idempotency_key_parameter().into());
                add_idempotency_conflict(op);
            }
            add_response(op, "408");
            add_response(op, "500");
            if authenticated {
                add_rate_limit_headers(op);
            }
        }
    }
}

/// 409 and 422 of the idempotency layer, beside the handler's own.
fn add_idempotency_conflict(op: &mut Operation) {
    merge_response(
        op,
        "409",
        "IDEMPOTENCY_KEY_IN_USE: a request with this Idempotency-Key is running",
    );
    merge_response(
        op,
        "422",
        "IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was used with another request",
    );
}
