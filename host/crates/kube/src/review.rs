//! Asks the API server who a bearer token belongs to (TokenReview) and
//! whether that user may change a plugin (SubjectAccessReview), as
//! kube-rbac-proxy does for the services it guards. The right is RBAC's
//! verb `create` on the resource `plugins`, subresource `promote` or
//! `rollback`, in the API group `tephra.io`, named after the plugin — so a
//! ClusterRole can allow one plugin, or all of them:
//!
//! ```yaml
//! rules:
//! - apiGroups: [tephra.io]
//!   resources: [plugins/promote, plugins/rollback]
//!   verbs: [create]
//! ```
//!
//! The scheduler's own ServiceAccount needs `create` on `tokenreviews` and
//! `subjectaccessreviews` (the built-in ClusterRole `system:auth-delegator`).

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use kube::Client;

/// The API group of the admin rights.
pub const GROUP: &str = "tephra.io";

/// Why a caller is refused.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// The API server does not know the token.
    Unauthenticated(String),
    /// It does, and RBAC says no.
    Forbidden(String),
    /// A review could not be made: refused too (fail closed).
    Failed(String),
}

/// Reviews tokens with the scheduler's own client.
#[derive(Clone)]
pub struct Reviewer {
    client: Client,
}

impl Reviewer {
    /// Reviews through `client`.
    pub fn new(client: Client) -> Self {
        Reviewer { client }
    }

    /// The user `token` belongs to, when RBAC lets it `verb` the plugin.
    pub async fn allow(&self, token: &str, plugin: &str, verb: &str) -> Result<String, Refused> {
        let failed = |what: &str, e: kube::Error| Refused::Failed(format!("{what} failed: {e}"));
        let review = TokenReview {
            spec: TokenReviewSpec { token: token.to_string(), ..Default::default() },
            ..Default::default()
        };
        let got = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| failed("TokenReview", e))?;
        let status = got.status.unwrap_or_default();
        let user = status.user.unwrap_or_default();
        let name = user.username.clone().unwrap_or_default();
        if status.authenticated != Some(true) || name.is_empty() {
            let why = status.error.unwrap_or_else(|| "the API server does not recognise the token".into());
            return Err(Refused::Unauthenticated(why));
        }
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(name.clone()),
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                resource_attributes: Some(ResourceAttributes {
                    group: Some(GROUP.into()),
                    resource: Some("plugins".into()),
                    subresource: Some(verb.into()),
                    name: Some(plugin.into()),
                    verb: Some("create".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let got = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await
            .map_err(|e| failed("SubjectAccessReview", e))?;
        let status = got.status.unwrap_or_default();
        if status.allowed {
            Ok(name)
        } else {
            let why = status.reason.filter(|r| !r.is_empty()).unwrap_or_else(|| "no RBAC rule allows it".into());
            Err(Refused::Forbidden(format!("{name} may not create plugins/{verb} {plugin:?} in {GROUP}: {why}")))
        }
    }
}
