//! The contract as data: what the generated files list, read from the WIT.

use std::path::Path;

use anyhow::{bail, Context};
use wit_parser::{Resolve, Type, TypeDefKind, TypeOwner, WorldItem, WorldKey};

/// The current contract (`wit/scheduler.wit`), as the generators see it.
pub struct Contract {
    /// The package version ("0.7.0").
    pub version: String,
    /// The extension points: the interfaces world `all-points` exports
    /// beyond the base world `plugin`, in the world's order.
    pub points: Vec<Point>,
    /// The columns of record `snapshot`, in order.
    pub snapshot: Vec<Field>,
    /// The columns of record `snapshot-delta`, in order.
    pub delta: Vec<Field>,
    /// Every enum of interface `types`, with its cases in order.
    pub enums: Vec<(String, Vec<String>)>,
}

/// An extension point: one interface a plugin may export.
pub struct Point {
    /// The interface's name ("node-order").
    pub name: String,
    pub functions: Vec<Function>,
    /// Whether its functions use the contract's shared types.
    pub uses_types: bool,
}

/// A function of an extension point.
pub struct Function {
    pub name: String,
    pub params: Vec<String>,
}

/// A record field, with its type as the WIT spells it ("list<u32>").
pub struct Field {
    pub name: String,
    pub ty: String,
}

impl Field {
    /// Whether the field is a list (a column) rather than a scalar.
    pub fn is_list(&self) -> bool {
        self.ty.starts_with("list<")
    }
}

impl Contract {
    /// Reads `dir` (`wit/`, its `deps/` beside) and picks the main package.
    pub fn load(dir: &Path) -> anyhow::Result<Contract> {
        let mut resolve = Resolve::default();
        let (pkg, _) = resolve.push_dir(dir).with_context(|| format!("{}: the WIT does not parse", dir.display()))?;
        let package = &resolve.packages[pkg];
        let version = package
            .name
            .version
            .as_ref()
            .with_context(|| format!("{}: package {} has no version", dir.display(), package.name))?
            .to_string();
        let world = |name: &str| {
            package
                .worlds
                .get(name)
                .copied()
                .with_context(|| format!("{}: no world '{name}' in {}", dir.display(), package.name))
        };
        let base = &resolve.worlds[world("plugin")?];
        let all = &resolve.worlds[world("all-points")?];
        let mut points = Vec::new();
        for (key, item) in &all.exports {
            if base.exports.contains_key(key) {
                continue;
            }
            let WorldItem::Interface { id, .. } = item else {
                bail!("world all-points exports {}, which is not an interface", resolve.name_world_key(key));
            };
            let iface = &resolve.interfaces[*id];
            let name = match key {
                WorldKey::Interface(_) => iface.name.clone().unwrap_or_default(),
                WorldKey::Name(n) => n.clone(),
            };
            let functions = iface
                .functions
                .values()
                .map(|f| Function { name: f.name.clone(), params: f.params.iter().map(|p| p.name.clone()).collect() })
                .collect();
            points.push(Point { name, functions, uses_types: !iface.types.is_empty() });
        }
        let types = package
            .interfaces
            .get("types")
            .copied()
            .with_context(|| format!("{}: no interface 'types' in {}", dir.display(), package.name))?;
        let record = |name: &str| -> anyhow::Result<Vec<Field>> {
            let id = resolve.interfaces[types]
                .types
                .get(name)
                .with_context(|| format!("{}: no record '{name}' in interface types", dir.display()))?;
            let TypeDefKind::Record(r) = &resolve.types[*id].kind else {
                bail!("{}: '{name}' in interface types is not a record", dir.display());
            };
            Ok(r.fields.iter().map(|f| Field { name: f.name.clone(), ty: spell(&resolve, &f.ty) }).collect())
        };
        let enums = resolve.interfaces[types]
            .types
            .iter()
            .filter_map(|(name, id)| match &resolve.types[*id].kind {
                TypeDefKind::Enum(e) => Some((name.clone(), e.cases.iter().map(|c| c.name.clone()).collect())),
                _ => None,
            })
            .collect();
        Ok(Contract { version, points, snapshot: record("snapshot")?, delta: record("snapshot-delta")?, enums })
    }
}

/// A type as WIT spells it.
fn spell(resolve: &Resolve, ty: &Type) -> String {
    match ty {
        Type::Bool => "bool".into(),
        Type::U8 => "u8".into(),
        Type::U16 => "u16".into(),
        Type::U32 => "u32".into(),
        Type::U64 => "u64".into(),
        Type::S8 => "s8".into(),
        Type::S16 => "s16".into(),
        Type::S32 => "s32".into(),
        Type::S64 => "s64".into(),
        Type::F32 => "f32".into(),
        Type::F64 => "f64".into(),
        Type::Char => "char".into(),
        Type::String => "string".into(),
        Type::ErrorContext => "error-context".into(),
        Type::Id(id) => {
            let def = &resolve.types[*id];
            match (&def.name, &def.kind) {
                (Some(name), _) if matches!(def.owner, TypeOwner::Interface(_) | TypeOwner::World(_)) => name.clone(),
                (_, TypeDefKind::List(t)) => format!("list<{}>", spell(resolve, t)),
                (_, TypeDefKind::Option(t)) => format!("option<{}>", spell(resolve, t)),
                (_, TypeDefKind::Type(t)) => spell(resolve, t),
                (_, TypeDefKind::Tuple(t)) => {
                    format!("tuple<{}>", t.types.iter().map(|t| spell(resolve, t)).collect::<Vec<_>>().join(", "))
                }
                (_, kind) => kind.as_str().to_string(),
            }
        }
    }
}
