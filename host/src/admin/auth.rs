//! Who may change the scheduler through the admin surface. There is no
//! open default: with nothing configured ([`Nobody`]) every promote and
//! rollback is refused. Outside a cluster a bearer token read from a file
//! ([`TokenFile`]); in a cluster the caller's own Kubernetes credentials,
//! checked by the API server ([`Kubernetes`]: TokenReview, then
//! SubjectAccessReview — the kube-rbac-proxy pattern).

use anyhow::{anyhow, Result};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

/// What a caller asks to do.
pub struct Action<'a> {
    /// The plugin acted on.
    pub plugin: &'a str,
    /// `promote` or `rollback`.
    pub verb: &'a str,
}

/// Why a request is refused.
#[derive(Debug, PartialEq)]
pub enum Denied {
    /// No credentials, or credentials nobody recognises (401).
    Unauthenticated(String),
    /// A known caller without the right (403).
    Forbidden(String),
    /// The check itself could not be made (503): refused, not let through.
    Unavailable(String),
}

impl Denied {
    /// Why, for the response body.
    pub fn message(&self) -> &str {
        match self {
            Denied::Unauthenticated(m) | Denied::Forbidden(m) | Denied::Unavailable(m) => m,
        }
    }
}

/// The future an [`Authorizer`] answers with: the caller's name, or why not.
pub type Verdict<'a> = Pin<Box<dyn Future<Output = Result<String, Denied>> + Send + 'a>>;

/// Decides whether the bearer `token` may perform `action`.
pub trait Authorizer: Send + Sync {
    /// The caller's name if `token` may perform `action`, else why not.
    fn allow<'a>(&'a self, token: Option<&'a str>, action: &'a Action<'a>) -> Verdict<'a>;
}

/// No authentication configured: every mutating request is refused.
pub struct Nobody;

impl Authorizer for Nobody {
    fn allow<'a>(&'a self, _: Option<&'a str>, _: &'a Action<'a>) -> Verdict<'a> {
        Box::pin(async {
            Err(Denied::Forbidden(
                "no admin authentication is configured (--admin-token-file, or --admin-kubernetes-auth in tephra run); \
                 promote and rollback are refused"
                    .into(),
            ))
        })
    }
}

/// One shared bearer token, read from a file (its surrounding whitespace
/// dropped). Whoever holds it may promote and roll back any plugin.
pub struct TokenFile {
    token: Vec<u8>,
}

impl TokenFile {
    /// Reads the token; an empty file is an error, not an open door.
    pub fn read(path: &Path) -> Result<TokenFile> {
        let text = crate::files::read_text(path)?;
        let token = text.trim();
        if token.is_empty() {
            return Err(anyhow!("{}: the admin token file is empty", path.display()));
        }
        Ok(TokenFile { token: token.as_bytes().to_vec() })
    }
}

/// Equal bytes, in a time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Authorizer for TokenFile {
    fn allow<'a>(&'a self, token: Option<&'a str>, _: &'a Action<'a>) -> Verdict<'a> {
        Box::pin(async move {
            match token {
                None => Err(Denied::Unauthenticated("an Authorization: Bearer token is required".into())),
                Some(t) if same(t.as_bytes(), &self.token) => Ok("the holder of the admin token".into()),
                Some(_) => Err(Denied::Unauthenticated("the token is not the admin token".into())),
            }
        })
    }
}

/// The caller's Kubernetes token, authenticated by the API server
/// (TokenReview) and authorized by RBAC (SubjectAccessReview: verb `create`
/// on `plugins/promote` or `plugins/rollback` in group `tephra.io`, the
/// plugin's name as resource name).
pub struct Kubernetes(pub crate::k8s::review::Reviewer);

impl Authorizer for Kubernetes {
    fn allow<'a>(&'a self, token: Option<&'a str>, action: &'a Action<'a>) -> Verdict<'a> {
        Box::pin(async move {
            let Some(token) = token else {
                return Err(Denied::Unauthenticated("an Authorization: Bearer token is required".into()));
            };
            use crate::k8s::review::Refused;
            self.0.allow(token, action.plugin, action.verb).await.map_err(|r| match r {
                Refused::Unauthenticated(m) => Denied::Unauthenticated(m),
                Refused::Forbidden(m) => Denied::Forbidden(m),
                Refused::Failed(m) => Denied::Unavailable(m),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(a: &dyn Authorizer, token: Option<&str>) -> Result<String, Denied> {
        let action = Action { plugin: "gang", verb: "promote" };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(a.allow(token, &action))
    }

    #[test]
    fn nobody_refuses_everyone() {
        assert!(matches!(ask(&Nobody, None), Err(Denied::Forbidden(_))));
        assert!(matches!(ask(&Nobody, Some("anything")), Err(Denied::Forbidden(_))));
    }

    #[test]
    fn the_token_file_admits_its_token_only() {
        let dir = std::env::temp_dir().join(format!("tephra-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "s3cret-token\n").unwrap();
        let t = TokenFile::read(&path).unwrap();
        assert!(ask(&t, Some("s3cret-token")).is_ok());
        assert!(matches!(ask(&t, Some("s3cret-tokeN")), Err(Denied::Unauthenticated(_))));
        assert!(matches!(ask(&t, Some("s3cret")), Err(Denied::Unauthenticated(_))));
        assert!(matches!(ask(&t, None), Err(Denied::Unauthenticated(_))));
        std::fs::write(&path, " \n").unwrap();
        let err = TokenFile::read(&path).err().unwrap().to_string();
        assert!(err.contains("token") && err.contains("empty"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
