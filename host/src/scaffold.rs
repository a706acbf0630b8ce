//! `tephra plugin new`: a buildable plugin project with a test, in Rust,
//! Python, JavaScript or Go. The Python, JavaScript and Go projects start from
//! the example policies (`examples/plugins/`), renamed, with their own copy of
//! the contract and of the SDK so they build anywhere.

use anyhow::{anyhow, bail, Result};
use std::path::Path;

const WIT: &str = include_str!("../../wit/scheduler.wit");
const RUST_CARGO: &str = include_str!("../templates/rust/Cargo.toml.in");
const RUST_LIB: &str = include_str!("../templates/rust/lib.rs.in");
const TEST_SH: &str = include_str!("../templates/test.sh.in");
const RUST_SDK_CARGO: &str = include_str!("../../sdk/Cargo.toml");
/// The Rust SDK's sources, file by file (a project builds with its own copy).
const RUST_SDK: [(&str, &str); 16] = [
    ("alloc.rs", include_str!("../../sdk/src/alloc.rs")),
    ("args.rs", include_str!("../../sdk/src/args.rs")),
    ("contract.rs", include_str!("../../sdk/src/contract.rs")),
    ("export.rs", include_str!("../../sdk/src/export.rs")),
    ("lib.rs", include_str!("../../sdk/src/lib.rs")),
    ("log.rs", include_str!("../../sdk/src/log.rs")),
    ("nodes.rs", include_str!("../../sdk/src/nodes.rs")),
    ("pods.rs", include_str!("../../sdk/src/pods.rs")),
    ("points.rs", include_str!("../../sdk/src/points.rs")),
    ("points_table.rs", include_str!("../../sdk/src/points_table.rs")),
    ("policy.rs", include_str!("../../sdk/src/policy.rs")),
    ("resource.rs", include_str!("../../sdk/src/resource.rs")),
    ("runtime.rs", include_str!("../../sdk/src/runtime.rs")),
    ("session.rs", include_str!("../../sdk/src/session.rs")),
    ("testing.rs", include_str!("../../sdk/src/testing.rs")),
    ("views.rs", include_str!("../../sdk/src/views.rs")),
];
const PY_APP: &str = include_str!("../../examples/plugins/python/app.py");
const PY_BUILD: &str = include_str!("../../examples/plugins/python/build.sh");
const PY_CLUSTER: &str = include_str!("../../examples/plugins/python/cluster.yaml");
const PY_SCENARIOS: &str = include_str!("../../examples/plugins/python/scenarios.yaml");
const PY_TEST: &str = include_str!("../../examples/plugins/python/test_app.py");
/// The Python SDK's package, file by file.
const PY_SDK: [(&str, &str); 8] = [
    ("__init__.py", include_str!("../../sdk/python/tephra_sdk/__init__.py")),
    ("__main__.py", include_str!("../../sdk/python/tephra_sdk/__main__.py")),
    ("component.py", include_str!("../../sdk/python/tephra_sdk/component.py")),
    ("contract.py", include_str!("../../sdk/python/tephra_sdk/contract.py")),
    ("policy.py", include_str!("../../sdk/python/tephra_sdk/policy.py")),
    ("resources.py", include_str!("../../sdk/python/tephra_sdk/resources.py")),
    ("session.py", include_str!("../../sdk/python/tephra_sdk/session.py")),
    ("testing.py", include_str!("../../sdk/python/tephra_sdk/testing.py")),
];
const JS_APP: &str = include_str!("../../examples/plugins/js/spread-label.js");
const JS_BUILD: &str = include_str!("../../examples/plugins/js/build.sh");
const JS_PACKAGE: &str = include_str!("../../examples/plugins/js/package.json");
const JS_LOCK: &str = include_str!("../../examples/plugins/js/package-lock.json");
const JS_CLUSTER: &str = include_str!("../../examples/plugins/js/cluster.yaml");
const JS_SCENARIOS: &str = include_str!("../../examples/plugins/js/scenarios.yaml");
const JS_TEST: &str = include_str!("../../examples/plugins/js/spread-label.test.js");
const JS_SDK: &str = include_str!("../../sdk/js/tephra-sdk.js");
const JS_CONTRACT: &str = include_str!("../../sdk/js/contract.js");
const JS_WORLD: &str = include_str!("../../sdk/js/world.js");
const GO_MOD: &str = include_str!("../../examples/plugins/go/go.mod");
const GO_APP: &str = include_str!("../../examples/plugins/go/gpupack.go");
const GO_TEST: &str = include_str!("../../examples/plugins/go/gpupack_test.go");
const GO_CLUSTER: &str = include_str!("../../examples/plugins/go/cluster.yaml");
const GO_SCENARIOS: &str = include_str!("../../examples/plugins/go/scenarios.yaml");
/// The Go SDK's module, file by file (a project builds with its own copy).
const GO_SDK: [(&str, &str); 12] = [
    ("go.mod", include_str!("../../sdk/go/go.mod")),
    ("contract.go", include_str!("../../sdk/go/contract.go")),
    ("policy.go", include_str!("../../sdk/go/policy.go")),
    ("session.go", include_str!("../../sdk/go/session.go")),
    ("resources.go", include_str!("../../sdk/go/resources.go")),
    ("exports.go", include_str!("../../sdk/go/exports.go")),
    ("testing.go", include_str!("../../sdk/go/testing.go")),
    ("views.go", include_str!("../../sdk/go/views.go")),
    ("contract_test.go", include_str!("../../sdk/go/contract_test.go")),
    ("session_test.go", include_str!("../../sdk/go/session_test.go")),
    ("cmd/tephra-glue/main.go", include_str!("../../sdk/go/cmd/tephra-glue/main.go")),
    ("tephra-go.sh", include_str!("../../sdk/go/tephra-go.sh")),
];
/// Where the JavaScript example imports the SDK from, and where a project does.
const JS_SDK_IMPORT: (&str, &str) = ("'../../../sdk/js/tephra-sdk.js'", "'./tephra-sdk.js'");

/// The build scripts find the contract and the SDK next to them in a
/// scaffolded project.
fn local_wit(script: &str) -> String {
    let lines: Vec<&str> = script
        .lines()
        .map(|l| match l {
            l if l.starts_with("WIT_DIR=") => "WIT_DIR=$HERE/wit",
            l if l.starts_with("SDK_DIR=") => "SDK_DIR=$HERE",
            l => l,
        })
        .collect();
    lines.join("\n") + "\n"
}

fn write(dir: &Path, rel: &str, text: &str, executable: bool) -> Result<()> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| anyhow!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Creates `dir` with a plugin project named `name` in `lang`.
pub fn new_plugin(name: &str, lang: &str, dir: &Path) -> Result<Vec<String>> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        bail!("plugin name {name:?}: use lowercase letters, digits and '-'");
    }
    if dir.exists() && std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{}: already exists and is not empty", dir.display());
    }
    let test = |unit: &str, expect: &str| {
        TEST_SH.replace("{{unit}}", unit).replace("{{name}}", name).replace("{{expect}}", expect)
    };
    let files: Vec<(String, String, bool)> = match lang {
        "rust" => {
            // The SDK's manifest without the workspace it lives in here.
            let sdk_cargo = RUST_SDK_CARGO
                .replace("version.workspace = true", &format!("version = \"{}\"", env!("CARGO_PKG_VERSION")))
                .replace("edition.workspace = true", "edition = \"2021\"")
                .replace("license.workspace = true", &format!("license = \"{}\"", env!("CARGO_PKG_LICENSE")));
            let mut files = vec![
                ("Cargo.toml".into(), RUST_CARGO.replace("{{name}}", name), false),
                ("src/lib.rs".into(), RUST_LIB.replace("{{name}}", name), false),
                ("sdk/Cargo.toml".into(), sdk_cargo, false),
                ("wit/scheduler.wit".into(), WIT.to_string(), false),
                (".gitignore".into(), "target/\n".into(), false),
            ];
            files.extend(RUST_SDK.iter().map(|(f, text)| (format!("sdk/src/{f}"), text.to_string(), false)));
            files
        }
        "python" => {
            let mut files = vec![
                ("app.py".into(), PY_APP.replace("NAME = \"fair-team\"", &format!("NAME = \"{name}\"")), false),
                ("test_app.py".into(), PY_TEST.to_string(), false),
                ("build.sh".into(), local_wit(&PY_BUILD.replace("NAME=fair-team", &format!("NAME={name}"))), true),
                ("cluster.yaml".into(), PY_CLUSTER.replace("fair-team", name), false),
                ("scenarios.yaml".into(), PY_SCENARIOS.replace("fair-team", name), false),
                (
                    "test.sh".into(),
                    test(
                        "(cd \"$HERE\" && python3 -m unittest -q test_app)",
                        "team-b/train-b-t-0 → solo\nteam-c/train-c-t-0 → solo\nteam-a/train-a-t-0 → solo",
                    ),
                    true,
                ),
                ("wit/scheduler.wit".into(), WIT.to_string(), false),
                (".gitignore".into(), ".venv/\nbindings/\n__pycache__/\nout/\n".into(), false),
            ];
            files.extend(PY_SDK.iter().map(|(f, text)| (format!("tephra_sdk/{f}"), text.to_string(), false)));
            files
        }
        "js" => vec![
            (
                format!("{name}.js"),
                JS_APP
                    .replace("static NAME = 'spread-label';", &format!("static NAME = '{name}';"))
                    .replace(JS_SDK_IMPORT.0, JS_SDK_IMPORT.1),
                false,
            ),
            (
                format!("{name}.test.js"),
                JS_TEST.replace("./spread-label.js", &format!("./{name}.js")).replace(JS_SDK_IMPORT.0, JS_SDK_IMPORT.1),
                false,
            ),
            ("tephra-sdk.js".into(), JS_SDK.to_string(), false),
            ("contract.js".into(), JS_CONTRACT.to_string(), false),
            ("world.js".into(), JS_WORLD.to_string(), false),
            ("build.sh".into(), local_wit(&JS_BUILD.replace("NAME=spread-label", &format!("NAME={name}"))), true),
            (
                "package.json".into(),
                JS_PACKAGE.replace("tephra-plugin-spread-label", &format!("tephra-plugin-{name}")),
                false,
            ),
            (
                "package-lock.json".into(),
                JS_LOCK.replace("tephra-plugin-spread-label", &format!("tephra-plugin-{name}")),
                false,
            ),
            ("cluster.yaml".into(), JS_CLUSTER.replace("spread-label", name), false),
            ("scenarios.yaml".into(), JS_SCENARIOS.replace("spread-label", name), false),
            (
                "test.sh".into(),
                test(
                    &format!("(cd \"$HERE\" && node --test {name}.test.js >/dev/null)"),
                    "apps/web-t-0 → east-1\napps/web-t-1 → east-2\napps/web-t-2 → east-2\napps/web-t-3 → east-1",
                ),
                true,
            ),
            ("wit/scheduler.wit".into(), WIT.to_string(), false),
            (".gitignore".into(), "node_modules/\nout/\n".into(), false),
        ],
        "go" => {
            // A Go package name: the plugin's name without dashes.
            let package = name.replace('-', "");
            let go = |text: &str| text.replace("gpupack", &package).replace("gpu-pack", name);
            let build = format!(
                "#!/usr/bin/env bash\n# Builds {name} into OUT_DIR/{name}.wasm with the Go SDK in sdk/ (TEPHRA: the tephra\n\
                 # binary, default tephra on PATH).\n#\n#   ./build.sh OUT_DIR\nset -euo pipefail\n\
                 HERE=$(cd \"$(dirname \"${{BASH_SOURCE[0]}}\")\" && pwd)\n\
                 [ $# -eq 1 ] || {{ echo \"usage: $0 OUT_DIR\" >&2; exit 2; }}\n\
                 WIT_DIR=\"$HERE/wit\" exec \"$HERE/sdk/tephra-go.sh\" build \"$HERE\" \"$1/{name}.wasm\"\n"
            );
            let mut files = vec![
                ("go.mod".into(), go(GO_MOD), false),
                (format!("{package}.go"), go(GO_APP), false),
                (format!("{package}_test.go"), go(GO_TEST), false),
                ("build.sh".into(), build, true),
                ("cluster.yaml".into(), go(GO_CLUSTER), false),
                ("scenarios.yaml".into(), go(GO_SCENARIOS), false),
                (
                    "README.md".into(),
                    format!(
                        "# {name}: a tephra policy in Go\n\nStarted from tephra's `examples/plugins/go` (gpu-pack) by \
                         `tephra plugin new`.\n`./test.sh` runs the unit tests, builds `out/{name}.wasm` and checks it \
                         with `tephra plugin test`\nand `tephra simulate`; `./build.sh out` only builds; \
                         `WIT_DIR=wit sdk/tephra-go.sh test .` runs the unit\ntests. `sdk/` is tephra's Go SDK \
                         (module `tephra.dev/sdk`) and `wit/` the contract, copied from tephra;\nthe build needs Go \
                         1.24+, cargo (it installs wit-bindgen-cli once) and `tephra` (set `TEPHRA` when it is\nnot \
                         on PATH).\n"
                    ),
                    false,
                ),
                (
                    "test.sh".into(),
                    test(
                        "WIT_DIR=\"$HERE/wit\" \"$HERE/sdk/tephra-go.sh\" test \"$HERE\"",
                        "ml/tune-t-0 → gpu-b\nml/tune-t-1 → gpu-b\ndata/etl-t-0 → cpu-1",
                    ),
                    true,
                ),
                ("wit/scheduler.wit".into(), WIT.to_string(), false),
                (".gitignore".into(), "out/\n".into(), false),
            ];
            files.extend(GO_SDK.iter().map(|(f, text)| (format!("sdk/{f}"), text.to_string(), f.ends_with(".sh"))));
            files
        }
        other => bail!("--lang {other:?}: use rust, python, js or go"),
    };
    let mut written = Vec::new();
    for (rel, text, exe) in files {
        write(dir, &rel, &text, exe)?;
        written.push(rel);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files of `dir` with one of these extensions, recursively, relative to it.
    fn files(dir: &Path, exts: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                out.extend(files(&path, exts).into_iter().map(|f| format!("{rel}/{f}")));
            } else if exts.iter().any(|x| rel.ends_with(x)) {
                out.push(rel);
            }
        }
        out.sort();
        out
    }

    /// A project gets every file of each SDK: one added to an SDK and not
    /// here would build in the repository and fail in every project.
    #[test]
    fn projects_copy_every_sdk_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let listed = |l: &[(&str, &str)]| {
            let mut v: Vec<String> = l.iter().map(|(f, _)| f.to_string()).collect();
            v.sort();
            v
        };
        assert_eq!(listed(&RUST_SDK), files(&root.join("sdk/src"), &[".rs"]));
        assert_eq!(listed(&PY_SDK), files(&root.join("sdk/python/tephra_sdk"), &[".py"]));
        let mut go = files(&root.join("sdk/go"), &[".go", ".sh", "go.mod"]);
        go.retain(|f| !f.starts_with("codegen"));
        assert_eq!(listed(&GO_SDK), go);
    }
}
