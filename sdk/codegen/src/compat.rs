//! Contract versions: a change to `wit/scheduler.wit` is checked against the
//! last released contract with the semver rules `wasm-tools component
//! semver-check` applies (`wit_component::semver_check`): a component built
//! against the released world must still fit the current one.
//!
//! Released contracts are `wit/deps/scheduler-<version>/` (the versions the
//! host still loads besides the current one) and `wit/released/scheduler-
//! <version>.wit` (the current version as released, a verbatim copy, moved to
//! `deps/` when the next version is cut). The version rules:
//! - the current version equals the last released one: no change but docs;
//! - a compatible bump (same major; for 0.x, same minor): every released
//!   point keeps its shape and the snapshot is unchanged (points may be added);
//! - an incompatible bump (0.7.0 → 0.8.0): anything goes;
//! - older than the last release: refused.

use std::path::Path;

use anyhow::{bail, Context};
use semver::Version;
use wit_parser::{PackageId, Resolve, World, WorldId, WorldKey};

/// How the current contract relates to the last released one.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Same version, same shapes.
    Unchanged(Version),
    /// A compatible bump, checked.
    Compatible { released: Version, current: Version },
    /// A bump that allows breaking changes.
    Breaking { released: Version, current: Version },
}

/// Checks the contract in `wit` (with `wit/deps` and `wit/released`) and says
/// how it relates to the last release; an error names what broke.
pub fn check(wit: &Path) -> anyhow::Result<Verdict> {
    let mut resolve = Resolve::default();
    let (current, _) = resolve.push_dir(wit).with_context(|| format!("{}: the WIT does not parse", wit.display()))?;
    let name = resolve.packages[current].name.clone();
    let cur_version = name.version.clone().with_context(|| format!("package {name} has no version"))?;

    // Every released package: the deps the resolve holds, then the release copies.
    let mut released: Vec<(Version, PackageId)> = resolve
        .packages
        .iter()
        .filter(|(id, p)| *id != current && p.name.namespace == name.namespace && p.name.name == name.name)
        .filter_map(|(id, p)| p.name.version.clone().map(|v| (v, id)))
        .collect();
    let dir = wit.join("released");
    if dir.is_dir() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "wit") {
                released.push(push_release(&mut resolve, &path, &cur_version)?);
            }
        }
    }
    let (rel_version, rel) = released.into_iter().max_by(|a, b| a.0.cmp(&b.0)).context("no released contract")?;

    let world = |resolve: &Resolve, pkg: PackageId, w: &str| -> anyhow::Result<WorldId> {
        resolve.packages[pkg].worlds.get(w).copied().with_context(|| format!("no world {w} in the contract"))
    };
    let points = |resolve: &Resolve, w: WorldId| -> Vec<String> {
        resolve.worlds[w].exports.keys().map(|k| export_name(resolve, k)).collect()
    };
    if cur_version < rel_version {
        bail!("{name} is older than the last released contract {rel_version}");
    }
    let cur_all = world(&resolve, current, "all-points")?;
    let rel_all = world(&resolve, rel, "all-points")?;
    let (cur_points, rel_points) = (points(&resolve, cur_all), points(&resolve, rel_all));
    if cur_version == rel_version {
        if cur_points != rel_points {
            bail!(
                "{name} exports other points than as released (now {cur_points:?}, released {rel_points:?}); bump the version"
            );
        }
        let either = fits(resolve.clone(), rel_all, cur_all).and_then(|()| fits(resolve, cur_all, rel_all));
        either.with_context(|| format!("{name} changed since its release; bump the version"))?;
        return Ok(Verdict::Unchanged(cur_version));
    }
    if !compatible(&rel_version, &cur_version) {
        return Ok(Verdict::Breaking { released: rel_version, current: cur_version });
    }
    // A component built against the release exports its points only: compare
    // the current world restricted to them.
    let mut restricted: World = resolve.worlds[cur_all].clone();
    restricted.exports.retain(|k, _| rel_points.contains(&export_name(&resolve, k)));
    restricted.name = "released-points".into();
    let restricted = resolve.worlds.alloc(restricted);
    fits(resolve, rel_all, restricted).with_context(|| {
        format!("{name} is not compatible with {rel_version}; make the version {}", breaking_bump(&rel_version))
    })?;
    Ok(Verdict::Compatible { released: rel_version, current: cur_version })
}

/// A release copy's package; the current version's copy is renamed (a
/// pre-release tag) so that it does not clash with the current package.
fn push_release(resolve: &mut Resolve, path: &Path, current: &Version) -> anyhow::Result<(Version, PackageId)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("package "))
        .with_context(|| format!("{}: no package line", path.display()))?;
    let version: Version = line
        .trim()
        .trim_start_matches("package ")
        .trim_end_matches(';')
        .split_once('@')
        .and_then(|(_, v)| v.parse().ok())
        .with_context(|| format!("{}: its package line has no version", path.display()))?;
    let text = if &version == current {
        text.replacen(line, &line.replace(&format!("@{version}"), &format!("@{version}-released")), 1)
    } else {
        text
    };
    let id = resolve.push_str(path, &text).with_context(|| format!("{}: the WIT does not parse", path.display()))?;
    Ok((version, id))
}

/// Whether a component of world `prev`'s shape fits world `new`.
fn fits(resolve: Resolve, prev: WorldId, new: WorldId) -> anyhow::Result<()> {
    wit_component::semver_check(resolve, prev, new)
}

fn export_name(resolve: &Resolve, key: &WorldKey) -> String {
    match key {
        WorldKey::Name(n) => n.clone(),
        WorldKey::Interface(id) => resolve.interfaces[*id].name.clone().unwrap_or_default(),
    }
}

/// Semver compatibility as Cargo applies it: the same major; below 1.0 the
/// same minor; below 0.1 the same patch.
fn compatible(a: &Version, b: &Version) -> bool {
    match (a.major, a.minor) {
        (0, 0) => b.major == 0 && b.minor == 0 && a.patch == b.patch,
        (0, m) => b.major == 0 && b.minor == m,
        (major, _) => b.major == major,
    }
}

fn breaking_bump(v: &Version) -> String {
    match (v.major, v.minor) {
        (0, 0) => format!("0.0.{}", v.patch + 1),
        (0, m) => format!("0.{}.0", m + 1),
        (major, _) => format!("{}.0.0", major + 1),
    }
}
