//! The generated files, one function per file.

use std::fmt::Write;

use crate::{Contract, Field, File};

const SOURCE: &str = "wit/scheduler.wit";

pub(crate) fn all(c: &Contract) -> Vec<File> {
    vec![
        file("sdk/python/tephra_sdk/contract.py", python(c)),
        file("sdk/js/contract.js", js(c)),
        file("sdk/go/contract.go", go(c)),
        file("sdk/src/contract.rs", rust_sdk(c)),
        file("sdk/src/points_table.rs", rust_points(c)),
        file("host/crates/contract/src/points.rs", rust_host(c)),
    ]
}

fn file(path: &str, text: String) -> File {
    File { path: path.into(), text }
}

fn header(comment: &str) -> String {
    format!("{comment} Generated from {SOURCE} by tephra-codegen; do not edit (cargo run -p tephra-codegen).\n")
}

fn snake(kebab: &str) -> String {
    kebab.replace('-', "_")
}

fn camel(kebab: &str) -> String {
    let mut out = String::new();
    for (i, w) in kebab.split('-').enumerate() {
        if i == 0 {
            out.push_str(w);
        } else {
            out.push_str(&pascal(w));
        }
    }
    out
}

fn pascal(kebab: &str) -> String {
    kebab
        .split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// A Python tuple of `items`.
fn tuple(items: &[String]) -> String {
    match items {
        [one] => format!("({one},)"),
        _ => format!("({})", items.join(", ")),
    }
}

/// `contract.py`: the names as componentize-py spells them (snake case).
fn python(c: &Contract) -> String {
    let mut s = header("#");
    s += "\"\"\"The contract as data: its version, extension points with their\n";
    s += "functions, the snapshot's and delta's columns with their WIT types, and\n";
    s += "the enums' cases (as componentize-py names them).\"\"\"\n\n";
    writeln!(s, "CONTRACT = \"{}\"\n", c.version).unwrap();
    s += "# Extension point (the interface a plugin exports) -> its functions.\n";
    s += "POINT_FUNCTIONS = {\n";
    for p in &c.points {
        let fs: Vec<String> = p.functions.iter().map(|f| format!("\"{}\"", snake(&f.name))).collect();
        writeln!(s, "    \"{}\": {},", p.name, tuple(&fs)).unwrap();
    }
    s += "}\n\n";
    let fields = |s: &mut String, name: &str, fields: &[Field]| {
        writeln!(s, "{name} = {{").unwrap();
        for f in fields {
            writeln!(s, "    \"{}\": \"{}\",", snake(&f.name), f.ty).unwrap();
        }
        s.push_str("}\n\n");
    };
    s += "# The snapshot's columns -> their WIT types.\n";
    fields(&mut s, "SNAPSHOT", &c.snapshot);
    s += "# The snapshot-delta's columns -> their WIT types.\n";
    fields(&mut s, "DELTA", &c.delta);
    s += "# Each enum of interface types -> its cases, in order.\n";
    s += "ENUMS = {\n";
    for (name, cases) in &c.enums {
        let cs: Vec<String> = cases.iter().map(|k| format!("\"{k}\"")).collect();
        writeln!(s, "    \"{}\": {},", snake(name), tuple(&cs)).unwrap();
    }
    s += "}\n";
    s
}

/// `contract.js`: the names as jco spells them (camel case).
fn js(c: &Contract) -> String {
    let mut s = header("//");
    s += "// The contract as data: its version, extension points with their functions,\n";
    s += "// the snapshot's and delta's columns with their WIT types, and the enums'\n";
    s += "// cases (as jco names them).\n\n";
    writeln!(s, "export const CONTRACT = '{}';\n", c.version).unwrap();
    s += "/** Extension point (the interface a plugin exports) -> its functions. */\n";
    s += "export const POINT_FUNCTIONS = {\n";
    for p in &c.points {
        let fs: Vec<String> = p.functions.iter().map(|f| format!("'{}'", camel(&f.name))).collect();
        writeln!(s, "  '{}': [{}],", p.name, fs.join(", ")).unwrap();
    }
    s += "};\n\n";
    let fields = |s: &mut String, doc: &str, name: &str, fields: &[Field]| {
        writeln!(s, "/** {doc} */\nexport const {name} = {{").unwrap();
        for f in fields {
            writeln!(s, "  {}: '{}',", camel(&f.name), f.ty).unwrap();
        }
        s.push_str("};\n\n");
    };
    fields(&mut s, "The snapshot's columns -> their WIT types.", "SNAPSHOT", &c.snapshot);
    fields(&mut s, "The snapshot-delta's columns -> their WIT types.", "DELTA", &c.delta);
    s += "/** Each enum of interface types -> its cases, in order. */\n";
    s += "export const ENUMS = {\n";
    for (name, cases) in &c.enums {
        let cs: Vec<String> = cases.iter().map(|k| format!("'{k}'")).collect();
        writeln!(s, "  {}: [{}],", camel(name), cs.join(", ")).unwrap();
    }
    s += "};\n";
    s
}

/// `contract.go`: the names as wit-bindgen's Go generator spells them (Pascal case).
fn go(c: &Contract) -> String {
    let mut s = header("//");
    s += "\npackage tephra\n\n";
    s += "// The contract as data: its version, extension points with their functions,\n";
    s += "// the snapshot's and delta's columns with their WIT types, and the enums'\n";
    s += "// cases (as wit-bindgen's Go generator names them).\n\n";
    writeln!(s, "// Contract is the contract version this SDK implements.\nconst Contract = \"{}\"\n", c.version)
        .unwrap();
    s += "// PointNames are the extension points (the interfaces a plugin exports), in order.\n";
    s += "var PointNames = []string{\n";
    for p in &c.points {
        writeln!(s, "\t\"{}\",", p.name).unwrap();
    }
    s += "}\n\n// PointFunctions are each extension point's functions.\n";
    s += "var PointFunctions = map[string][]string{\n";
    let width = c.points.iter().map(|p| p.name.len()).max().unwrap_or(0) + 3;
    for p in &c.points {
        let fs: Vec<String> = p.functions.iter().map(|f| format!("\"{}\"", pascal(&f.name))).collect();
        writeln!(s, "\t{:<width$} {{{}}},", format!("\"{}\":", p.name), fs.join(", ")).unwrap();
    }
    s += "}\n\n";
    let columns = |s: &mut String, doc: &str, name: &str, fields: &[Field]| {
        writeln!(s, "// {doc}\nvar {name} = []string{{").unwrap();
        for f in fields {
            writeln!(s, "\t\"{}\",", pascal(&f.name)).unwrap();
        }
        s.push_str("}\n\n");
    };
    columns(&mut s, "SnapshotColumns are the snapshot's columns, in order.", "SnapshotColumns", &c.snapshot);
    columns(&mut s, "DeltaColumns are the snapshot-delta's columns, in order.", "DeltaColumns", &c.delta);
    s += "// Enums are each enum of interface types with its cases, in order.\n";
    s += "var Enums = map[string][]string{\n";
    let width = c.enums.iter().map(|(n, _)| pascal(n).len()).max().unwrap_or(0) + 3;
    for (name, cases) in &c.enums {
        let cs: Vec<String> = cases.iter().map(|k| format!("\"{}\"", pascal(k))).collect();
        writeln!(s, "\t{:<width$} {{{}}},", format!("\"{}\":", pascal(name)), cs.join(", ")).unwrap();
    }
    s += "}\n";
    s
}

/// The `ExtensionPoint` enum of a Rust crate: the contract's points, then
/// `Events` (the `flush-events` flag of `plugin-info`, not an interface).
fn extension_point(c: &Contract, derives: &str) -> String {
    let mut s = String::new();
    s += "/// The extension points a plugin may implement: every interface world\n";
    s += "/// `all-points` exports beyond `plugin`, then `Events`.\n";
    writeln!(s, "{derives}").unwrap();
    s += "pub enum ExtensionPoint {\n";
    for p in &c.points {
        writeln!(s, "    {},", pascal(&p.name)).unwrap();
    }
    s += "    /// Not an interface: every event batch is flushed to the policy before\n";
    s += "    /// the session closes (`plugin-info.flush-events`).\n";
    s += "    Events,\n}\n";
    s
}

/// A snapshot with no objects: every column empty, `total` a zero row.
fn empty_snapshot(c: &Contract, vis: &str) -> String {
    let mut s = String::new();
    s += "/// A snapshot of nothing over `dims`: every column empty, `total` zeros.\n";
    writeln!(s, "{vis}fn empty_snapshot(dims: Vec<String>) -> Snapshot {{").unwrap();
    s += "    let total = vec![0.0; dims.len()];\n    Snapshot {\n";
    for f in &c.snapshot {
        let name = snake(&f.name);
        let value = match (name.as_str(), f.ty.as_str()) {
            ("dims" | "total", _) => None,
            (_, t) if t.starts_with("list<") => Some("Vec::new()"),
            (_, "f32" | "f64") => Some("0.0"),
            (_, "bool") => Some("false"),
            (_, "string") => Some("String::new()"),
            _ => Some("0"),
        };
        match value {
            None => writeln!(s, "        {name},").unwrap(),
            Some(v) => writeln!(s, "        {name}: {v},").unwrap(),
        }
    }
    s += "    }\n}\n";
    s
}

/// `sdk/src/contract.rs`: the Rust SDK's version, points and empty snapshot.
fn rust_sdk(c: &Contract) -> String {
    let mut s = header("//");
    s += "//! The contract as the Rust SDK restates it: its version, the extension\n";
    s += "//! points, a point's name to its variant, and the empty snapshot.\n\n";
    s += "use crate::types::Snapshot;\n\n";
    s += "/// The contract version this SDK implements.\n";
    writeln!(s, "pub const CONTRACT: &str = \"{}\";\n", c.version).unwrap();
    s += &extension_point(c, "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n#[repr(u8)]");
    s += "\n/// The [`ExtensionPoint`] of a point's snake-case name.\n";
    s += "#[doc(hidden)]\n#[macro_export]\nmacro_rules! __tephra_point_name {\n";
    for p in &c.points {
        writeln!(s, "    ({}) => {{\n        $crate::ExtensionPoint::{}\n    }};", snake(&p.name), pascal(&p.name))
            .unwrap();
    }
    s += "}\n\n";
    s += &empty_snapshot(c, "pub(crate) ");
    s
}

/// `sdk/src/points_table.rs`: one binding per point ([`point_bindings!`]).
fn rust_points(c: &Contract) -> String {
    let mut s = header("//");
    s += "// One row per extension point, expanded by `point_bindings!` in points.rs.\n\n";
    s += "point_bindings! {\n";
    for p in &c.points {
        let (snake, v) = (snake(&p.name), &c.version);
        let types = if p.uses_types { format!(", \"tephra:scheduler/types@{v}\"") } else { String::new() };
        writeln!(
            s,
            "    {snake} => \"package tephra:sdk; world {name} {{ export tephra:scheduler/{name}@{v}; }}\", \"__export_{snake}\", \"tephra_sdk::points::{snake}\"{types};",
            name = p.name
        )
        .unwrap();
    }
    s += "}\n";
    s
}

/// `host/crates/contract/src/points.rs`: the host's points and empty snapshot.
fn rust_host(c: &Contract) -> String {
    let mut s = header("//");
    s += "//! The contract as the host restates it: its version, the extension points\n";
    s += "//! with their names, and the empty snapshot.\n\n";
    s += "use crate::types::Snapshot;\n\n";
    s += "/// The plugin contract version this host speaks (`wit/scheduler.wit`).\n";
    writeln!(s, "pub const CONTRACT: &str = \"{}\";\n", c.version).unwrap();
    s += &extension_point(c, "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]");
    s += "\n";
    s += "/// An extension point as the WIT spells it (\"node-order\"); for the current\n";
    s += "/// contract, also the name of the interface a plugin exports for it.\n";
    s += "pub fn point_name(p: ExtensionPoint) -> &'static str {\n    match p {\n";
    for p in &c.points {
        writeln!(s, "        ExtensionPoint::{} => \"{}\",", pascal(&p.name), p.name).unwrap();
    }
    s += "        ExtensionPoint::Events => \"events\",\n    }\n}\n\n";
    s += &empty_snapshot(c, "pub ");
    s
}
