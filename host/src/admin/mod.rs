//! The admin surface: `/healthz`, `/readyz`, `/metrics` and the plugin table
//! (`GET /plugins`) for anyone who can reach it, and `POST
//! /plugins/NAME/promote|rollback|forward`, which change what the scheduler does,
//! only for a caller that [`auth`] lets through — with no authentication
//! configured, nobody.
//!
//! axum on hyper, on a thread and runtime of its own: the scheduling loop
//! never waits for it, and it talks to the loop through a
//! [`Handle`](crate::scheduler::control::Handle) (commands applied between
//! two cycles; the state published after the latest one). Each connection
//! is its own task, must send its request head within [`HEAD_TIMEOUT`] in
//! at most [`HEAD_MAX_BYTES`], and lives at most [`CONNECTION_MAX`]; at most
//! [`CONNECTIONS_MAX`] are open at once. A trickling or oversized client
//! costs one slot for a bounded time, never the others' answers.

pub mod auth;
pub mod metrics;

use crate::scheduler::control::{Command, Handle, Refusal, Verb};
use anyhow::{anyhow, Result};
use auth::{Authorizer, Denied};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Time a client has to send its request line and headers.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The most a request head may take (hyper's read buffer).
pub const HEAD_MAX_BYTES: usize = 64 * 1024;
/// The longest a connection is served (a promote waits up to 30 s for a
/// cycle boundary).
pub const CONNECTION_MAX: Duration = Duration::from_secs(40);
/// Connections served at once; more are closed on arrival.
pub const CONNECTIONS_MAX: usize = 128;
/// How long a command waits for the loop to reach a cycle boundary.
const COMMAND_WAIT: Duration = Duration::from_secs(30);

#[derive(Clone)]
struct Surface {
    handle: Handle,
    auth: Arc<dyn Authorizer>,
}

/// Binds `addr` ("127.0.0.1:8080"; port 0 picks one) and serves `handle`
/// in the background, mutating requests checked by what `auth` makes (run
/// on the surface's runtime, so it may start tasks there); returns the
/// address bound.
pub fn serve(
    addr: &str,
    handle: Handle,
    auth: impl FnOnce() -> Result<Arc<dyn Authorizer>> + Send + 'static,
) -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| anyhow!("admin address {addr}: {e}"))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let auth = {
        let _in = rt.enter();
        auth()?
    };
    std::thread::Builder::new().name("tephra-admin".into()).spawn(move || {
        rt.block_on(async move {
            match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => accept(l, router(Surface { handle, auth })).await,
                Err(e) => eprintln!("admin: {e}"),
            }
        })
    })?;
    Ok(bound)
}

fn router(s: Surface) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/plugins", get(plugins))
        .route("/plugins/{name}/{verb}", post(command))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .with_state(s)
}

/// Serves each connection on its own task, within the bounds above.
async fn accept(listener: tokio::net::TcpListener, app: Router) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let slots = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS_MAX));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: breathe rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(HEAD_MAX_BYTES)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_MAX, conn).await;
            drop(slot);
        });
    }
}

async fn readyz(State(s): State<Surface>) -> Response {
    if s.handle.status().ready {
        "ready\n".into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "no cycle has completed yet\n").into_response()
    }
}

async fn metrics_text(State(s): State<Surface>) -> Response {
    match metrics::encode(&s.handle.status()) {
        Ok(text) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

async fn plugins(State(s): State<Surface>) -> Response {
    axum::Json(s.handle.status().plugins).into_response()
}

/// `POST /plugins/NAME/promote|rollback`: authenticated, authorized, then
/// applied at the next cycle boundary.
async fn command(State(s): State<Surface>, Path((name, verb)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let Some(v) = Verb::parse(&verb) else {
        return (StatusCode::NOT_FOUND, "use POST /plugins/NAME/promote, /rollback or /forward\n").into_response();
    };
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let who = match s.auth.allow(token, &auth::Action { plugin: &name, verb: &verb }).await {
        Ok(who) => who,
        Err(d) => {
            // A refused caller may be an attack or a misconfiguration: a person should look.
            tracing::warn!("admin: {verb} of plugin {name} refused: {}", d.message());
            return refusal(d);
        }
    };
    tracing::info!("admin: {who} asked to {verb} plugin {name}");
    let cmd = Command { verb: v, plugin: name.clone(), who };
    let answer = tokio::task::spawn_blocking(move || {
        let rx = s.handle.send(cmd)?;
        Some(rx.recv_timeout(COMMAND_WAIT).map_err(|_| ()))
    })
    .await
    .ok()
    .flatten();
    match answer {
        None => (StatusCode::SERVICE_UNAVAILABLE, "the scheduler is not running\n").into_response(),
        Some(Ok(Ok(msg))) => (StatusCode::OK, msg + "\n").into_response(),
        Some(Ok(Err(Refusal::NotFound(e)))) => (StatusCode::NOT_FOUND, e + "\n").into_response(),
        Some(Ok(Err(Refusal::Conflict(e)))) => (StatusCode::CONFLICT, e + "\n").into_response(),
        Some(Err(())) => (StatusCode::GATEWAY_TIMEOUT, "no cycle boundary within 30s\n").into_response(),
    }
}

fn refusal(d: Denied) -> Response {
    match d {
        Denied::Unauthenticated(m) => {
            (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], m + "\n").into_response()
        }
        Denied::Forbidden(m) => (StatusCode::FORBIDDEN, m + "\n").into_response(),
        Denied::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, m + "\n").into_response(),
    }
}
