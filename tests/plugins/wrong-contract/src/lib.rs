//! A component built against a future contract (`tephra:scheduler@9.0.0`):
//! the host must refuse it at load with a message naming the version.

// The generated bindings' exports are `unsafe` (the SDK's are allowed in the SDK).
#![allow(unsafe_code)]

wit_bindgen::generate!({
    inline: r#"
        package tephra:scheduler@9.0.0;
        interface policy {
            info: func() -> string;
        }
        world plugin {
            export policy;
        }
    "#,
    world: "plugin",
});

struct Future;

impl exports::tephra::scheduler::policy::Guest for Future {
    fn info() -> String {
        "from the future".into()
    }
}

#[cfg(target_arch = "wasm32")]
export!(Future);
