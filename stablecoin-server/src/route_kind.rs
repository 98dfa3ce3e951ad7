//! What a route is, as the HTTP layer's middleware needs to know it: a typed mark the
//! router puts on the routes themselves, not a list of path strings the middleware
//! compares `uri.path()` with (issue #45).
//!
//! Two middlewares decide by the kind of route: the rate limiter (a money-moving POST
//! spends the `money` budget, [`crate::rate_limit`]) and HTTP idempotency (a money route's
//! `Idempotency-Key` is recorded by the engine in the operation's own commit, escrow
//! creation's by the escrow engine, [`crate::idempotency`]).
//!
//! # Design: an `Extension` route layer, outermost on its group
//!
//! `crate::api` registers each kind of route in its own group and, after the group's
//! middleware (auth, rate limit, idempotency, all `route_layer`s), calls
//! [`mark`]: one more `route_layer` of `axum::Extension(kind)`. Route layers wrap each
//! route's own service, so they run after routing has chosen the route, and the last one
//! added runs first: the mark is in the request's extensions before the rate limiter and
//! the idempotency middleware read it ([`RouteKind::of`]). Nothing is decided from the
//! path, and the route's registration is the one place that says what it is.
//!
//! Why not the alternatives: a middleware on the whole router runs before routing, so it
//! cannot see a route's layer, and the handlers cannot declare their mode because the
//! decision (the budget, the in-flight key, the record lookup) is taken before the handler
//! runs. A table keyed by axum's `MatchedPath` would work too, but it is a second list of
//! path templates beside the registrations, the thing this module removes. An unmarked
//! route is an ordinary one: a write budget for its POSTs and DELETEs, and an HTTP record
//! for its `Idempotency-Key`.
//!
//! A lost mark is caught by the tests: `tests/rate_classes.rs` sends every write of the
//! OpenAPI document and requires the `money` budget on exactly the money routes, and
//! `tests/idempotency.rs` has a test per kind of idempotency decision (a money key with
//! one owner; an escrow replayed by its engine when the HTTP record is missing).

use axum::extract::Request;
use utoipa_axum::router::OpenApiRouter;

/// The kind of a marked route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RouteKind {
    /// Moves money through one engine operation (fund, send on every chain, withdraw,
    /// swap, escrow release and refund): its POSTs spend the `money` rate budget, and its
    /// `Idempotency-Key` (where the route takes one) is the engine's alone to record, in
    /// the commit of the operation.
    Money,
    /// Creates something whose engine records the bare `Idempotency-Key` in the same
    /// commit (escrow creation): the HTTP layer still keeps its own record, but leaves a
    /// key with no HTTP record to that engine.
    EngineRecorded,
}

impl RouteKind {
    /// The mark of the route a request was routed to; `None` for an ordinary route (or
    /// before routing).
    pub fn of(req: &Request) -> Option<RouteKind> {
        req.extensions().get::<RouteKind>().copied()
    }
}

/// Marks every route of `routes` as `kind`. Call it after the group's other
/// `route_layer`s, so the mark is set before they run.
pub fn mark<S>(routes: OpenApiRouter<S>, kind: RouteKind) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes.route_layer(axum::Extension(kind))
}
