//! Plugin components in an OCI registry, in the CNCF Wasm OCI artifact
//! layout: an image manifest whose config is `application/vnd.wasm.config.v0+json`
//! and whose one layer is the component, `application/wasm`. Pulled by a
//! reference pinned by digest (the manifest and the layer are checked
//! against their digests before anything is compiled) and kept on disk by
//! that digest; pushed by `tephra plugin push`.

use anyhow::{anyhow, bail, Context, Result};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest, OCI_IMAGE_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use std::path::{Path, PathBuf};

/// The component layer's media type.
pub const WASM_LAYER: &str = "application/wasm";
/// The config's media type.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The largest component pulled (the Python example is 18 MB).
pub const LAYER_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Registry credentials: none, or a user and password (from a pull Secret).
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    /// Basic auth: user and password.
    pub basic: Option<(String, String)>,
}

impl Credentials {
    fn auth(&self) -> RegistryAuth {
        match &self.basic {
            Some((u, p)) => RegistryAuth::Basic(u.clone(), p.clone()),
            None => RegistryAuth::Anonymous,
        }
    }

    /// The entry for `registry` in a `.dockerconfigjson` (auths.<registry>:
    /// `auth` = base64 user:password, or `username` and `password`).
    pub fn from_docker_config(json: &[u8], registry: &str) -> Result<Credentials> {
        let v: serde_json::Value = serde_json::from_slice(json).context(".dockerconfigjson is not JSON")?;
        let Some(entry) = v["auths"].get(registry) else {
            bail!(".dockerconfigjson has no auths entry for {registry}");
        };
        if let (Some(u), Some(p)) = (entry["username"].as_str(), entry["password"].as_str()) {
            return Ok(Credentials { basic: Some((u.into(), p.into())) });
        }
        let auth = entry["auth"].as_str().ok_or_else(|| anyhow!("auths.{registry} has no auth"))?;
        let decoded = base64_decode(auth).ok_or_else(|| anyhow!("auths.{registry}.auth is not base64"))?;
        let text = String::from_utf8(decoded).map_err(|_| anyhow!("auths.{registry}.auth is not UTF-8"))?;
        let (u, p) = text.split_once(':').ok_or_else(|| anyhow!("auths.{registry}.auth is not user:password"))?;
        Ok(Credentials { basic: Some((u.into(), p.into())) })
    }
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s.trim()).ok()
}

fn client(reference: &Reference, insecure: bool) -> Result<Client> {
    // reqwest's rustls needs a process-wide provider: ring, as kube uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = match insecure {
        true => ClientProtocol::HttpsExcept(vec![reference.resolve_registry().to_string()]),
        false => ClientProtocol::Https,
    };
    Client::try_from(ClientConfig { protocol, ..Default::default() }).context("OCI client")
}

/// Parses `host[:port]/repository@sha256:<hex>`; a reference without a
/// digest is refused (a tag can move).
pub fn pinned(reference: &str) -> Result<Reference> {
    let r: Reference = reference.parse().map_err(|e| anyhow!("OCI reference {reference:?}: {e}"))?;
    if r.digest().is_none() {
        bail!("OCI reference {reference:?} is not pinned by digest (…@sha256:<digest>)");
    }
    Ok(r)
}

/// The component's layer descriptor in a manifest, after checking the
/// artifact's layout.
fn component_layer<'m>(reference: &str, manifest: &'m OciImageManifest) -> Result<&'m OciDescriptor> {
    if manifest.config.media_type != WASM_CONFIG {
        bail!("{reference}: the config is {:?}, not a Wasm component's ({WASM_CONFIG})", manifest.config.media_type);
    }
    let [layer] = manifest.layers.as_slice() else {
        bail!("{reference}: {} layers; a Wasm component artifact has one", manifest.layers.len());
    };
    if layer.media_type != WASM_LAYER {
        bail!("{reference}: the layer is {:?}, not {WASM_LAYER}", layer.media_type);
    }
    if layer.size < 0 || layer.size as u64 > LAYER_MAX_BYTES {
        bail!("{reference}: the component is {} bytes, more than {LAYER_MAX_BYTES}", layer.size);
    }
    Ok(layer)
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// Where a pinned reference's manifest and component are kept once pulled.
fn cache_entry(cache: &Path, digest: &str) -> PathBuf {
    cache.join("oci").join(digest.replace(':', "-"))
}

/// The component of a cache entry, when it checks out: the manifest against
/// the reference's digest, the component against the manifest.
fn from_cache(reference: &str, digest: &str, entry: &Path) -> Option<Vec<u8>> {
    let manifest = std::fs::read(entry.join("manifest.json")).ok()?;
    if sha256(&manifest) != digest {
        return None;
    }
    let parsed: OciImageManifest = serde_json::from_slice(&manifest).ok()?;
    let layer = component_layer(reference, &parsed).ok()?;
    let bytes = std::fs::read(entry.join("component.wasm")).ok()?;
    (sha256(&bytes) == layer.digest).then_some(bytes)
}

/// Pulls the component `reference` names: its manifest (checked against the
/// reference's digest), the artifact's layout, and its one layer (checked
/// against the manifest's digest, at most [`LAYER_MAX_BYTES`]). With a
/// `cache` directory, what was pulled under the same digest is read back
/// (checked the same way; a damaged entry is pulled again) and a new pull
/// is kept there. The second value says whether it came from the cache.
pub async fn pull(
    reference: &str,
    creds: &Credentials,
    insecure: bool,
    cache: Option<&Path>,
) -> Result<(Vec<u8>, bool)> {
    let r = pinned(reference)?;
    let digest = r.digest().unwrap_or_default().to_string();
    let entry = cache.map(|c| cache_entry(c, &digest));
    if let Some(bytes) = entry.as_deref().and_then(|e| from_cache(reference, &digest, e)) {
        return Ok((bytes, true));
    }
    let c = client(&r, insecure)?;
    let auth = creds.auth();
    let (raw, _) = c
        .pull_manifest_raw(&r, &auth, &[OCI_IMAGE_MEDIA_TYPE])
        .await
        .map_err(|e| anyhow!("{reference}: manifest: {e}"))?;
    if sha256(&raw) != digest {
        bail!("{reference}: the manifest's digest is {}, not the reference's", sha256(&raw));
    }
    let manifest: OciImageManifest = serde_json::from_slice(&raw)
        .map_err(|e| anyhow!("{reference}: the manifest is not an OCI image manifest: {e}"))?;
    let layer = component_layer(reference, &manifest)?;
    let mut bytes = Vec::with_capacity(layer.size as usize);
    c.pull_blob(&r, layer, &mut bytes).await.map_err(|e| anyhow!("{reference}: layer: {e}"))?;
    if sha256(&bytes) != layer.digest || bytes.len() as i64 != layer.size {
        bail!("{reference}: the layer does not match its manifest (digest or size)");
    }
    if let Some(e) = &entry {
        // A cache that cannot be written costs the next pull, nothing else.
        let kept = std::fs::create_dir_all(e)
            .and_then(|_| std::fs::write(e.join("manifest.json"), &raw))
            .and_then(|_| std::fs::write(e.join("component.wasm"), &bytes));
        if let Err(err) = kept {
            tracing::warn!("{reference}: not cached in {}: {err}", e.display());
        }
    }
    Ok((bytes, false))
}

/// Pushes `component` as `reference` (a tag or a repository); returns the
/// reference pinned by the manifest's digest.
pub async fn push(component: &[u8], reference: &str, creds: &Credentials, insecure: bool) -> Result<String> {
    let r: Reference = reference.parse().map_err(|e| anyhow!("OCI reference {reference:?}: {e}"))?;
    let c = client(&r, insecure)?;
    let auth = creds.auth();
    let layer = ImageLayer::new(component.to_vec(), WASM_LAYER.into(), None);
    let layer_digest = layer.sha256_digest();
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    });
    let config = Config::new(serde_json::to_vec(&config)?, WASM_CONFIG.into(), None);
    let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.into());
    manifest.artifact_type = Some(WASM_LAYER.into());
    c.push(&r, &[layer], config, &auth, Some(manifest)).await.map_err(|e| anyhow!("{reference}: push: {e}"))?;
    let digest = c.fetch_manifest_digest(&r, &auth).await.map_err(|e| anyhow!("{reference}: digest: {e}"))?;
    Ok(format!("{}/{}@{digest}", r.resolve_registry(), r.repository()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_credentials() {
        let auth = base64::engine::Engine::encode(&base64::engine::general_purpose::STANDARD, "ci:s3cret");
        let json = format!(
            r#"{{"auths":{{"127.0.0.1:5000":{{"auth":"{auth}"}},"r.example":{{"username":"u","password":"p"}}}}}}"#
        );
        let c = Credentials::from_docker_config(json.as_bytes(), "127.0.0.1:5000").unwrap();
        assert_eq!(c.basic, Some(("ci".into(), "s3cret".into())));
        let c = Credentials::from_docker_config(json.as_bytes(), "r.example").unwrap();
        assert_eq!(c.basic, Some(("u".into(), "p".into())));
        let err = Credentials::from_docker_config(json.as_bytes(), "other.example").unwrap_err().to_string();
        assert!(err.contains("no auths entry for other.example"), "{err}");
        assert!(Credentials::from_docker_config(b"{", "x").is_err());
    }

    #[test]
    fn cache_entries_are_checked_against_the_digests() {
        let dir = std::env::temp_dir().join(format!("tephra-oci-cache-{}", std::process::id()));
        let component = b"\0asm\x0d\0\x01\0".to_vec();
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "config": {"mediaType": WASM_CONFIG, "digest": sha256(b"{}"), "size": 2},
            "layers": [{"mediaType": WASM_LAYER, "digest": sha256(&component), "size": component.len()}],
        });
        let raw = serde_json::to_vec(&manifest).unwrap();
        let digest = sha256(&raw);
        let entry = cache_entry(&dir, &digest);
        std::fs::create_dir_all(&entry).unwrap();
        std::fs::write(entry.join("manifest.json"), &raw).unwrap();
        std::fs::write(entry.join("component.wasm"), &component).unwrap();
        assert_eq!(from_cache("r", &digest, &entry), Some(component.clone()));
        // Another reference's digest, or a damaged component: not used.
        assert_eq!(from_cache("r", &sha256(b"other"), &entry), None);
        std::fs::write(entry.join("component.wasm"), b"\0asm-tampered").unwrap();
        assert_eq!(from_cache("r", &digest, &entry), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn references_must_be_pinned() {
        let d = "a".repeat(64);
        assert!(pinned(&format!("127.0.0.1:5000/tephra/gang@sha256:{d}")).is_ok());
        let err = pinned("127.0.0.1:5000/tephra/gang:v1").unwrap_err().to_string();
        assert!(err.contains("not pinned by digest"), "{err}");
        assert!(pinned("127.0.0.1:5000/tephra/gang@sha256:abc").is_err());
    }
}
