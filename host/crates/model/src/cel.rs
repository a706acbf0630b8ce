//! Device selectors in CEL, as DRA evaluates them: a `device` variable with
//! its `driver`, `attributes` and `capacity` (each keyed by domain, then by
//! name), Kubernetes' quantity functions, and a cost budget checked before
//! an expression ever runs, so a selector cannot stall a cycle.

use crate::devices::{Attr, Device};
use crate::resource::parse_quantity;
use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr};
use cel::extractors::This;
use cel::{Context, IdedExpr, Program, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The API server's limit on a selector's length.
pub const MAX_LENGTH: usize = 10 * 1024;
/// The API server's limit on a selector's estimated cost.
pub const MAX_COST: u64 = 1_000_000;
/// What one pass of a comprehension is taken to cost at most: a device has
/// at most 32 attributes and capacities together (the API's limit), so no
/// map or list a selector can walk is larger, save literals it writes out.
const LOOP_BOUND: u64 = 32;

/// A compiled selector (or why it does not compile), shared by every cycle.
pub type Compiled = Result<Arc<Program>, String>;

/// Compiles `source` once per process (sources come from the cluster's
/// classes and claims; the cache is dropped when it grows past 4,096).
pub fn compile(source: &str) -> Compiled {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(c) = cache.lock().ok().and_then(|m| m.get(source).cloned()) {
        return c;
    }
    let compiled = compile_uncached(source);
    if let Ok(mut m) = cache.lock() {
        if m.len() >= 4096 {
            m.clear();
        }
        m.insert(source.to_string(), compiled.clone());
    }
    compiled
}

fn compile_uncached(source: &str) -> Compiled {
    if source.len() > MAX_LENGTH {
        return Err(format!("is {} bytes long, more than the limit of {MAX_LENGTH}", source.len()));
    }
    // The parser reports a syntax error over several lines; its first says it.
    let program = Program::compile(source)
        .map_err(|e| format!("does not compile: {}", e.to_string().lines().next().unwrap_or("syntax error").trim()))?;
    let cost = cost(program.expression());
    if cost > MAX_COST {
        return Err(format!("estimated cost {cost} exceeds the budget of {MAX_COST}"));
    }
    Ok(Arc::new(program))
}

/// An upper bound of an expression's evaluation cost: one per node, a
/// comprehension's body once per element it may walk (nested ones multiply).
pub fn cost(e: &IdedExpr) -> u64 {
    match &e.expr {
        Expr::Call(c) => 1 + c.target.as_deref().map_or(0, cost) + c.args.iter().map(cost).sum::<u64>(),
        Expr::Comprehension(c) => {
            let passes = match &c.iter_range.expr {
                Expr::List(l) => l.elements.len() as u64,
                _ => LOOP_BOUND,
            };
            let body = cost(&c.loop_cond).saturating_add(cost(&c.loop_step));
            cost(&c.iter_range) + cost(&c.accu_init) + cost(&c.result) + passes.saturating_mul(body)
        }
        Expr::List(l) => 1 + l.elements.iter().map(cost).sum::<u64>(),
        Expr::Map(m) => 1 + entries(&m.entries),
        Expr::Select(s) => 1 + cost(&s.operand),
        Expr::Struct(s) => 1 + entries(&s.entries),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => 1,
    }
}

fn entries(es: &[IdedEntryExpr]) -> u64 {
    es.iter()
        .map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => cost(&m.key) + cost(&m.value),
            EntryExpr::StructField(f) => cost(&f.value),
        })
        .sum()
}

/// The functions selectors may call besides CEL's own: Kubernetes'
/// `quantity("40Gi")` and the methods of a quantity (a number here).
pub fn root() -> Context<'static, 'static> {
    let mut ctx = Context::default();
    // None of these names is CEL's own, so none is refused.
    let _ = ctx.add_function("quantity", |s: Arc<String>| -> Result<f64, cel::ExecutionError> {
        parse_quantity(&s).map_err(|e| cel::ExecutionError::function_error("quantity", e))
    });
    let _ = ctx.add_function("compareTo", |This(a): This<f64>, b: f64| a.partial_cmp(&b).map_or(0, |o| o as i64));
    let _ = ctx.add_function("isGreaterThan", |This(a): This<f64>, b: f64| a > b);
    let _ = ctx.add_function("isLessThan", |This(a): This<f64>, b: f64| a < b);
    let _ = ctx.add_function("asInteger", |This(a): This<f64>| a as i64);
    let _ = ctx.add_function("asApproximateFloat", |This(a): This<f64>| a);
    ctx
}

/// The `device` variable of `d`, published by `driver`: attributes and
/// capacities keyed by domain (an unqualified name is the driver's), then
/// by name.
pub fn device_value(driver: &str, d: &Device) -> Value {
    fn split<'a>(driver: &'a str, name: &'a str) -> (&'a str, &'a str) {
        name.rsplit_once('/').unwrap_or((driver, name))
    }
    let mut attributes: HashMap<String, HashMap<String, Value>> = HashMap::new();
    for (name, a) in &d.attributes {
        let (domain, id) = split(driver, name);
        let v = match a {
            Attr::Int(i) => Value::Int(*i),
            Attr::Bool(b) => Value::Bool(*b),
            Attr::Str(s) | Attr::Version(s) => Value::from(s.as_str()),
        };
        attributes.entry(domain.to_string()).or_default().insert(id.to_string(), v);
    }
    let mut capacity: HashMap<String, HashMap<String, Value>> = HashMap::new();
    for (name, q) in &d.capacity {
        let (domain, id) = split(driver, name);
        capacity.entry(domain.to_string()).or_default().insert(id.to_string(), Value::Float(*q));
    }
    let mut device: HashMap<String, Value> = HashMap::new();
    device.insert("driver".into(), Value::from(driver));
    device.insert("attributes".into(), Value::from(attributes));
    device.insert("capacity".into(), Value::from(capacity));
    Value::from(device)
}

/// Whether `program` selects the device `device` (a [`device_value`]):
/// an error when it fails or yields something other than a boolean.
pub fn selects(root: &Context, program: &Program, device: &Value) -> Result<bool, String> {
    let mut ctx = root.new_inner_scope();
    ctx.add_variable_from_value("device", device.clone());
    match program.execute(&ctx) {
        Ok(Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("yields {other:?}, not a boolean")),
        Err(e) => Err(format!("fails: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn gpu(model: &str, memory: &str) -> Value {
        let d = Device {
            name: "gpu-0".into(),
            attributes: BTreeMap::from([("model".into(), Attr::Str(model.into()))]),
            capacity: BTreeMap::from([("memory".into(), parse_quantity(memory).unwrap())]),
            tainted: false,
        };
        device_value("gpu.example.com", &d)
    }

    fn eval(src: &str, d: &Value) -> Result<bool, String> {
        let program = compile(src)?;
        selects(&root(), &program, d)
    }

    #[test]
    fn selectors_read_attributes_capacity_and_quantities() {
        let big = gpu("A100", "80Gi");
        let small = gpu("T4", "16Gi");
        let src = r#"device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "A100""#;
        assert_eq!(eval(src, &big), Ok(true));
        assert_eq!(eval(src, &small), Ok(false));
        let src = r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0"#;
        assert_eq!(eval(src, &big), Ok(true));
        assert_eq!(eval(src, &small), Ok(false));
    }

    #[test]
    fn bad_selectors_say_why() {
        let d = gpu("A100", "80Gi");
        assert!(eval("device.driver ==", &d).unwrap_err().starts_with("does not compile"));
        assert!(eval(r#"device.attributes["gpu.example.com"].cores > 2"#, &d).unwrap_err().starts_with("fails"));
        assert!(eval(r#"device.driver"#, &d).unwrap_err().contains("not a boolean"));
        assert!(eval(r#"quantity("lots") > 1.0"#, &d).unwrap_err().starts_with("fails"));
        // Four nested walks of a device's maps: 32^4 passes, over budget.
        let nested = "[1].all(a, device.attributes.all(b, device.attributes.all(c, \
            device.attributes.all(d, device.attributes.all(e, true)))))";
        assert!(eval(nested, &d).unwrap_err().contains("exceeds the budget"));
        let long = format!("{}true", "true && ".repeat(MAX_LENGTH / 8));
        assert!(eval(&long, &d).unwrap_err().contains("limit"));
    }
}
