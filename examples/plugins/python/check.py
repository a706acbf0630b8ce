#!/usr/bin/env python3
"""Load a tephra policy component with wasmtime 50 (PyPI `wasmtime`, the
engine version the tephra host links) and check it against the contract.

    check.py [--wasi full|traps] [--bench] [--wit DIR] FILE.wasm...

For each component:
  1. lists its imports and exports;
  2. checks, structurally, that it exports `tephra:scheduler/policy@0.5.0`
     with exactly the functions and types of `interface policy` in
     wit/scheduler.wit, and that its `host` import (if any) matches
     `interface host`;
  3. instantiates it (WASI p2 plus the `host` interface, as the tephra host
     does; with `--wasi traps` every WASI import is a trapping stub instead,
     which shows whether the guest calls WASI at all while serving calls);
  4. calls `info` and runs the scenario for its plugin name (fair-team,
     spread-label) plus every other export once, checking neutral answers.

Exits non-zero on the first failed check. Does not need cargo.
"""

import argparse
import importlib.metadata
import math
import os
import re
import sys
import time
from types import SimpleNamespace

import wasmtime
import wasmtime.component as wc

NONE = 0xFFFFFFFF
POLICY = "tephra:scheduler/policy@0.5.0"
HOST = "tephra:scheduler/host@0.5.0"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_WIT = os.path.normpath(os.path.join(HERE, "..", "..", "..", "wit"))


class CheckFailed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise CheckFailed(what)


# --- A small reader for the subset of WIT that scheduler.wit uses ----------


def _strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def _blocks(text, keyword):
    """{name: body} for every `keyword name { body }` (bodies hold no braces
    except the nested type blocks of an interface, handled by depth)."""
    out = {}
    for m in re.finditer(rf"\b{keyword}\s+([a-z][a-z0-9-]*)\s*\{{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out[m.group(1)] = text[m.end(): i - 1]
    return out


def _split_top(s, sep=","):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


class Wit:
    """Type definitions and function signatures of the contract, rendered as
    structural strings comparable with wasmtime's component types."""

    PRIMS = {"bool", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
             "f32", "f64", "char", "string"}

    def __init__(self, wit_dir):
        text = _strip_comments(open(os.path.join(wit_dir, "scheduler.wit")).read())
        self.version = re.search(r"package\s+[a-z-]+:[a-z-]+@([0-9.]+)\s*;", text).group(1)
        self.interfaces = _blocks(text, "interface")
        self.types = {}
        for body in self.interfaces.values():
            for name, fields in _blocks(body, "enum").items():
                self.types[name] = ("enum", [c.strip() for c in fields.split(",") if c.strip()])
            for name, fields in _blocks(body, "record").items():
                self.types[name] = ("record", [
                    tuple(x.strip() for x in f.split(":", 1)) for f in _split_top(fields)
                ])
            for name, cases in _blocks(body, "variant").items():
                # `case` or `case(payload)`: (name, payload type or None).
                self.types[name] = ("variant", [
                    (m.group(1), m.group(2))
                    for m in (re.fullmatch(r"([a-z][a-z0-9-]*)\s*(?:\((.*)\))?", c, re.S)
                              for c in _split_top(cases))
                ])

    def render(self, ty):
        ty = ty.strip()
        if ty in self.PRIMS:
            return ty
        m = re.fullmatch(r"(list|option|tuple|result)\s*<(.*)>", ty, re.S)
        if m:
            kind, args = m.group(1), [self.render(a) if a != "_" else "_" for a in _split_top(m.group(2))]
            if kind == "result" and len(args) == 1:
                args.append("_")
            return f"{kind}<{','.join(args)}>"
        if ty == "result":
            return "result<_,_>"
        kind, body = self.types[ty]
        if kind == "enum":
            return "enum{" + ",".join(body) + "}"
        if kind == "variant":
            return "variant{" + ",".join(
                n if t is None else f"{n}({self.render(t)})" for n, t in body) + "}"
        return "record{" + ",".join(f"{n}:{self.render(t)}" for n, t in body) + "}"

    def functions(self, interface):
        """{name: (params [(name, rendered type)], rendered result or None)}."""
        body = self.interfaces[interface]
        # Drop nested type blocks, keep `name: func(...) -> T;` items.
        body = re.sub(r"\b(enum|record|variant)\s+[a-z0-9-]+\s*\{[^}]*\}", "", body)
        out = {}
        for m in re.finditer(r"([a-z][a-z0-9-]*)\s*:\s*func\s*\((.*?)\)\s*(?:->\s*([^;]+))?;", body, re.S):
            params = [tuple(x.strip() for x in p.split(":", 1)) for p in _split_top(m.group(2))]
            out[m.group(1)] = (
                [(n, self.render(t)) for n, t in params],
                self.render(m.group(3)) if m.group(3) else None,
            )
        return out


def render_valtype(t):
    """wasmtime component ValType -> the same structural string as Wit.render."""
    prims = {wc.Bool: "bool", wc.S8: "s8", wc.S16: "s16", wc.S32: "s32", wc.S64: "s64",
             wc.U8: "u8", wc.U16: "u16", wc.U32: "u32", wc.U64: "u64", wc.F32: "f32",
             wc.F64: "f64", wc.Char: "char", wc.String: "string"}
    for cls, name in prims.items():
        if isinstance(t, cls):
            return name
    if isinstance(t, wc.ListType):
        return f"list<{render_valtype(t.element)}>"
    if isinstance(t, wc.OptionType):
        return f"option<{render_valtype(t.payload)}>"
    if isinstance(t, wc.TupleType):
        return "tuple<" + ",".join(render_valtype(e) for e in t.elements) + ">"
    if isinstance(t, wc.ResultType):
        ok = render_valtype(t.ok) if t.ok is not None else "_"
        err = render_valtype(t.err) if t.err is not None else "_"
        return f"result<{ok},{err}>"
    if isinstance(t, wc.EnumType):
        return "enum{" + ",".join(t.names) + "}"
    if isinstance(t, wc.RecordType):
        return "record{" + ",".join(f"{n}:{render_valtype(v)}" for n, v in t.fields) + "}"
    if isinstance(t, wc.VariantType):
        return "variant{" + ",".join(
            n if v is None else f"{n}({render_valtype(v)})" for n, v in t.cases) + "}"
    return f"<unsupported {type(t).__name__}>"


def check_interface(engine, inst_type, wit, interface, label):
    expected = wit.functions(interface)
    # wasmtime-py wraps an item's type in a `ComponentExtern` (`.ty`).
    items = getattr(inst_type, "ty", inst_type).exports(engine)
    items = {n: getattr(v, "ty", v) for n, v in items.items()}
    funcs = {n: v for n, v in items.items() if isinstance(v, wc.FuncType)}
    missing = sorted(set(expected) - set(funcs))
    extra = sorted(set(funcs) - set(expected))
    expect(not missing, f"{label}: functions missing: {missing}")
    expect(not extra, f"{label}: functions not in the contract: {extra}")
    for name, (params, result) in expected.items():
        ft = funcs[name]
        got_params = [(n, render_valtype(t)) for n, t in ft.params]
        got_result = render_valtype(ft.result) if ft.result is not None else None
        expect(got_params == params, f"{label}.{name}: params {got_params} != contract {params}")
        expect(got_result == result, f"{label}.{name}: result {got_result} != contract {result}")
    return len(expected)


# --- Running a component -----------------------------------------------------


class Plugin:
    def __init__(self, engine, component, wasi, logs):
        self.store = wasmtime.Store(engine)
        linker = wc.Linker(engine)
        if wasi == "full":
            cfg = wasmtime.WasiConfig()
            cfg.inherit_stdout()
            cfg.inherit_stderr()
            self.store.set_wasi(cfg)
            linker.add_wasip2()
        with linker.root() as root:
            with root.add_instance(HOST) as host:
                host.add_func("log", lambda _s, level, msg: logs.append((level, msg)))
                host.add_func("name", lambda _s, kind, id: f"{kind}-{id}")
        if wasi != "full":
            linker.define_unknown_imports_as_traps(component)
        t = time.perf_counter()
        self.instance = linker.instantiate(self.store, component)
        self.instantiate_s = time.perf_counter() - t
        self.policy = self.instance.get_export_index(self.store, POLICY)
        expect(self.policy is not None, f"no export {POLICY}")
        self._funcs = {}

    def call(self, name, *args):
        f = self._funcs.get(name)
        if f is None:
            idx = self.instance.get_export_index(self.store, name, self.policy)
            expect(idx is not None, f"no function {name} in {POLICY}")
            f = self._funcs[name] = self.instance.get_func(self.store, idx)
        out = f(self.store, *args)
        f.post_return(self.store)
        return out


def snapshot(**cols):
    """A snapshot record: every column empty unless given."""
    s = SimpleNamespace(
        dims=["cpu", "memory", "pods"], strings=[""], total=[0.0, 0.0, 0.0], now_ms=0,
        node_allocatable=[], node_used=[], node_releasing=[], node_pipelined=[],
        node_unschedulable=[], node_labels=[], node_taints=[],
        node_locked_job=[], node_locked_queue=[],
        queue_parent=[], queue_weight=[], queue_priority=[], queue_reclaimable=[],
        queue_state=[], queue_capability=[], queue_deserved=[], queue_guarantee=[],
        queue_annotations=[], queue_affinity=[], queue_guaranteed=[], queue_reserve_percentage=[],
        job_queue=[], job_min_available=[], job_has_min_resources=[], job_min_resources=[],
        job_min_task_member=[], job_priority=[], job_phase=[], job_created_ms=[],
        job_annotations=[], reservation_targets=[],
        task_job=[], task_status=[], task_node=[], task_resreq=[], task_priority=[],
        task_preemptable=[], task_role=[], task_namespace=[], task_priority_class=[],
        task_created_ms=[], task_started_ms=[], task_estimated_ms=[],
        task_node_selector=[], task_tolerations=[], task_affinity=[],
        node_name=[], resident_node=[], resident_namespace=[], pod_labels=[], pod_terms=[],
        pod_ports=[], task_spread=[], node_images=[], task_images=[], pod_attachments=[],
        node_attach_limits=[],
    )
    for k, v in cols.items():
        expect(hasattr(s, k), f"unknown snapshot column {k}")
        setattr(s, k, v)
    d = len(s.dims)
    nodes, jobs, tasks = len(s.node_unschedulable), len(s.job_queue), len(s.task_job)
    # Fill the per-entity columns not given, consistently sized.
    fill = {
        "node_allocatable": [4000.0, 8e9, 110.0] * nodes, "node_used": [0.0] * (d * nodes),
        "node_releasing": [0.0] * (d * nodes), "node_pipelined": [0.0] * (d * nodes),
        "node_locked_job": [NONE] * nodes, "node_locked_queue": [NONE] * nodes,
        "node_name": [0] * nodes,
        "job_min_available": [1] * jobs, "job_has_min_resources": [False] * jobs,
        "job_priority": [0] * jobs, "job_phase": ["pending"] * jobs, "job_created_ms": [0] * jobs,
        "task_status": ["pending"] * tasks, "task_node": [NONE] * tasks,
        "task_resreq": [100.0, 1e8, 1.0] * tasks, "task_priority": [0] * tasks,
        "task_preemptable": [False] * tasks, "task_role": [0] * tasks, "task_namespace": [0] * tasks,
        "task_priority_class": [0] * tasks, "task_created_ms": [0] * tasks,
        "task_started_ms": [0] * tasks, "task_estimated_ms": [0] * tasks,
    }
    for k, v in fill.items():
        if k not in cols:
            setattr(s, k, v)
    if "queue_parent" not in cols and jobs:
        s.queue_parent, s.queue_weight, s.queue_priority = [NONE], [1.0], [0]
        s.queue_reclaimable, s.queue_state = [True], ["open"]
    if "queue_guaranteed" not in cols:
        s.queue_guaranteed = [False] * len(s.queue_parent)
    return rec(s)


def rec(ns):
    """A record value for wasmtime-py, which names fields as in WIT (kebab-case)."""
    out = SimpleNamespace()
    for k, v in vars(ns).items():
        setattr(out, k.replace("_", "-"), v)
    return out


def label(owner, key, value):
    return rec(SimpleNamespace(owner=owner, key=key, value=value))


def event(kind, task, node, status):
    return rec(SimpleNamespace(kind=kind, task=task, node=node, status=status))


def check_neutral(p, point):
    """Every export the plugin does not list answers Volcano's neutral value."""
    p.call("on-events", [])
    checks = {
        "node-order one": (lambda: p.call("node-score", 0, 1), 0.0),
        "predicate one": (lambda: p.call("predicate-node", 0, 1), 0),
        "queue-order": (lambda: p.call("queue-order", [0, 1]), [0.0, 0.0]),
        "job-order": (lambda: p.call("job-order", [0, 1]), [0.0, 0.0]),
        "task-order": (lambda: p.call("task-order", [0, 1, 2]), [0.0, 0.0, 0.0]),
        "victim-queue-order": (lambda: p.call("victim-queue-order", [0], 0), [0.0]),
        "node-order": (lambda: p.call("node-order", 0, [0, 1]), [0.0, 0.0]),
        "overused": (lambda: p.call("overused", 0), False),
        "allocatable": (lambda: p.call("allocatable", 0, 0), True),
        "preemptive": (lambda: p.call("preemptive", 0, 0), True),
        "job-valid": (lambda: p.call("job-valid", 0), None),
        "job-ready": (lambda: p.call("job-ready", 0), True),
        "job-pipelined": (lambda: p.call("job-pipelined", 0), "abstain"),
        "job-enqueueable": (lambda: p.call("job-enqueueable", 0), "abstain"),
        "job-enqueued": (lambda: p.call("job-enqueued", 0), None),
        "job-starving": (lambda: p.call("job-starving", 0), False),
        "victim-tasks": (lambda: p.call("victim-tasks", [0, 1]), []),
        "target-job": (lambda: p.call("target-job", [0, 1]), None),
        # lock-owner's cases share a payload type: wasmtime-py wants a tagged
        # Variant. The ok list of result<list<u32>, string> comes back bare.
        "reserved-nodes": (lambda: p.call("reserved-nodes", wc.Variant("job", 0), [0, 1]), []),
        "reserved-nodes queue": (lambda: p.call("reserved-nodes", wc.Variant("queue", 0), [1]), []),
    }
    for name, (run, want) in checks.items():
        if name.split()[0] == point:
            continue
        got = run()
        # (A string is an err of a result: never a neutral list.)
        expect(not isinstance(got, str) and list(got) == want if isinstance(want, list) else got == want,
               f"{name}: neutral answer expected {want!r}, got {got!r}")
    fit = p.call("predicate", 0, [0, 1, 2])
    expect(bytes(fit.codes) == bytes(3) and list(fit.reasons) == [], f"predicate: {fit.__dict__}")
    for name in ("preemptable", "reclaimable"):
        v = p.call(name, 0, [1, 2])
        expect(list(v.tasks) == [] and v.vote == "abstain", f"{name}: {v.__dict__}")
    qs = p.call("queue-status", [0, 1])
    expect(len(qs.deserved) == 2 * 3 and all(math.isnan(x) for x in qs.deserved)
           and list(qs.share) == [0.0, 0.0], f"queue-status: {qs.__dict__}")


def scenario_fair_team(p, logs):
    # strings: 1 team-a, 2 team-b, 3 team-c. Jobs 0..3; job 3 has no task.
    snap = snapshot(
        strings=["", "team-a", "team-b", "team-c"],
        node_unschedulable=[False, False],
        job_queue=[0, 0, 0, 0],
        # Task 0 is job 1's first task (team-b); task 2 of job 1 is in team-a
        # but does not decide: the job's first task does.
        task_job=[1, 0, 1, 2, 0],
        task_namespace=[2, 1, 1, 3, 1],
    )
    args = [("usage.team-a", "120"), ("usage.team-b", " 30.5 "), ("other", "x")]
    expect(p.call("open-session", snap, args) is None, "open-session failed")
    keys = list(p.call("job-order", [0, 1, 2, 3]))
    expect(keys == [120.0, 30.5, 0.0, 0.0], f"job-order keys {keys}")
    keys = list(p.call("job-order", [3, 1]))
    expect(keys == [0.0, 30.5], f"job-order subset {keys}")
    expect(list(p.call("job-order", [])) == [], "job-order of no job")
    check_neutral(p, "job-order")
    p.call("close-session")
    # A bad argument is an open-session error naming it.
    err = p.call("open-session", snap, [("usage.team-a", "lots")])
    expect(isinstance(err, str) and "usage.team-a" in err, f"bad argument: {err!r}")
    err = p.call("open-session", snap, [("usage.team-a", "inf")])
    expect(isinstance(err, str) and "usage.team-a" in err, f"infinite argument: {err!r}")
    # A new session replaces the previous one's keys.
    expect(p.call("open-session", snap, []) is None, "open-session without arguments")
    expect(list(p.call("job-order", [0, 1])) == [0.0, 0.0], "keys of a session without usage")
    p.call("close-session")
    return "job-order keys = team usage; bad/infinite usage rejected; neutral answers elsewhere"


def scenario_spread_label(p, logs):
    # strings: 1 zone, 2 east, 3 west, 4 disk, 5 ssd. Nodes 0..3: 0 and 2 are
    # zone=east, 1 is zone=west, 3 has disk=ssd only.
    strings = ["", "zone", "east", "west", "disk", "ssd"]
    node_labels = [label(0, 1, 2), label(1, 1, 3), label(2, 1, 2), label(3, 4, 5), label(2, 4, 5)]
    # Jobs 0, 1. Tasks: 0 (job 0, running on node 0), 1 (job 0, pipelined on
    # node 0), 2 (job 0, pending), 3 (job 1, running on node 1), 4 (job 0,
    # succeeded on node 2: not placed), 5 (job 0, pending).
    snap = snapshot(
        strings=strings,
        node_unschedulable=[False] * 4,
        node_labels=node_labels,
        job_queue=[0, 0],
        task_job=[0, 0, 0, 1, 0, 0],
        task_status=["running", "pipelined", "pending", "running", "succeeded", "pending"],
        task_node=[0, 0, NONE, 1, 2, NONE],
    )
    nodes = [0, 1, 2, 3]

    def scores(task):
        return list(p.call("node-order", task, nodes))

    expect(p.call("open-session", snap, [("label", "zone=east")]) is None, "open-session failed")
    got = scores(2)
    expect(got == [8.0, 0.0, 10.0, 0.0], f"zone=east, job 0: {got}")
    got = scores(3)  # job 1: its own task on node 1
    expect(got == [10.0, -1.0, 10.0, 0.0], f"zone=east, job 1: {got}")
    got = list(p.call("node-order", 2, [3, 2]))
    expect(got == [0.0, 10.0], f"node subset: {got}")
    # Events: task 2 allocated on node 2, task 5 pipelined on node 3, task 0
    # evicted (deallocate), task 1 moved from node 0 to node 1 (deallocate
    # then allocate, as the host logs a move).
    p.call("on-events", [
        event("allocate", 2, 2, "allocated"),
        event("allocate", 5, 3, "pipelined"),
        event("deallocate", 0, 0, "releasing"),
        event("deallocate", 1, 0, "pending"),
        event("allocate", 1, 1, "allocated"),
    ])
    got = scores(5)
    expect(got == [10.0, -1.0, 9.0, -1.0], f"after events, job 0: {got}")
    got = scores(3)
    expect(got == [10.0, -1.0, 10.0, 0.0], f"after events, job 1: {got}")
    one = [p.call("node-score", 5, n) for n in nodes]
    expect(one == [10.0, -1.0, 9.0, -1.0], f"node-score one node at a time, job 0: {one}")
    # One event by value: task 2 leaves node 2.
    p.call("on-event", event("deallocate", 2, 2, "releasing"))
    got = scores(5)
    expect(got == [10.0, -1.0, 10.0, -1.0], f"after on-event, job 0: {got}")
    check_neutral(p, "node-order")
    p.call("close-session")

    # Key alone: any value of the key; no label: spread only.
    expect(p.call("open-session", snap, [("label", "disk")]) is None, "label key only")
    got = scores(2)
    expect(got == [-2.0, 0.0, 10.0, 10.0], f"label disk: {got}")
    p.call("close-session")
    expect(p.call("open-session", snap, []) is None, "no label")
    got = scores(2)
    expect(got == [-2.0, 0.0, 0.0, 0.0], f"no label: {got}")
    p.call("close-session")
    expect(p.call("open-session", snap, [("label", "zone=north")]) is None, "unknown value")
    expect(scores(2) == [-2.0, 0.0, 0.0, 0.0], "label value absent from the cluster")
    p.call("close-session")
    err = p.call("open-session", snap, [("label", "=east")])
    expect(isinstance(err, str) and "label" in err, f"bad label: {err!r}")
    return "label bonus +10, -1 per placed task of the job, events applied; neutral answers elsewhere"


SCENARIOS = {"fair-team": scenario_fair_team, "spread-label": scenario_spread_label}


def bench(p, nodes=1000, jobs=1000, tasks_per_job=5, teams=20, reps=15):
    """Rough timings on a synthetic cluster. Every figure includes wasmtime-py's
    value conversion in Python (ctypes), which the Rust host does not pay; the
    `baseline` line (a neutral export with the same list shapes) estimates it."""
    import random
    rnd = random.Random(1)
    strings = ["", "zone", "east", "west"] + [f"team-{i}" for i in range(teams)]
    tasks = jobs * tasks_per_job
    task_job = [t // tasks_per_job for t in range(tasks)]
    running = [rnd.random() < 0.5 for _ in range(tasks)]
    snap = snapshot(
        strings=strings,
        node_unschedulable=[False] * nodes,
        node_labels=[label(n, 1, 2 + n % 2) for n in range(nodes)],
        job_queue=[0] * jobs,
        task_job=task_job,
        task_namespace=[4 + (t // tasks_per_job) % teams for t in range(tasks)],
        task_status=["running" if r else "pending" for r in running],
        task_node=[rnd.randrange(nodes) if r else NONE for r in running],
    )
    args = [(f"usage.team-{i}", str(i * 10)) for i in range(teams)] + [("label", "zone=east")]
    job_ids, node_ids = list(range(jobs)), list(range(nodes))
    pending = next(t for t in range(tasks) if not running[t])
    events = [event("allocate", t, t % nodes, "allocated") for t in range(tasks) if not running[t]][:100]

    def median(f):
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        return sorted(ts)[len(ts) // 2] * 1000

    rows = [
        (f"open-session ({nodes} nodes, {jobs} jobs, {tasks} tasks)", lambda: p.call("open-session", snap, args)),
        (f"job-order ({jobs} jobs)", lambda: p.call("job-order", job_ids)),
        (f"node-order (1 task, {nodes} nodes)", lambda: p.call("node-order", pending, node_ids)),
        (f"baseline: queue-order ({nodes} ids, neutral)", lambda: p.call("queue-order", node_ids)),
        ("on-events (100 events)", lambda: p.call("on-events", events)),
        ("baseline: on-events (0 events)", lambda: p.call("on-events", [])),
        ("job-ready (empty call)", lambda: p.call("job-ready", 0)),
    ]
    p.call("open-session", snap, args)
    out = []
    for name, f in rows:
        out.append((name, median(f)))
    p.call("close-session")
    return out


def check(path, wit, wasi, do_bench=False):
    engine = wasmtime.Engine()
    size = os.path.getsize(path)
    print(f"== {path} ({size:,} bytes, {size / 2**20:.1f} MiB)")
    t = time.perf_counter()
    component = wc.Component.from_file(engine, path)
    print(f"compile: {time.perf_counter() - t:.2f} s (wasmtime {importlib.metadata.version('wasmtime')})")
    ty = component.type
    imports = ty.imports(engine)
    exports = ty.exports(engine)
    print("imports:")
    for name in imports:
        print(f"  {name}")
    print("exports:")
    for name in exports:
        print(f"  {name}")

    expect(POLICY in exports, f"does not export {POLICY}")
    n = check_interface(engine, exports[POLICY], wit, "policy", POLICY)
    print(f"contract: {POLICY} exports all {n} functions with the contract's types")
    if HOST in imports:
        n = check_interface(engine, imports[HOST], wit, "host", HOST)
        print(f"contract: {HOST} import matches ({n} functions)")
    others = [e for e in exports if e not in (POLICY, "tephra:scheduler/types@0.5.0")]
    if others:
        print(f"note: exports beyond the world: {others}")

    logs = []
    p = Plugin(engine, component, wasi, logs)
    print(f"instantiate: {p.instantiate_s * 1000:.1f} ms (WASI: {wasi})")
    info = p.call("info")
    print(f"info: name={info.name} version={info.version} contract={info.contract} points={list(info.points)}")
    expect(info.contract == wit.version, f"contract {info.contract} != {wit.version}")
    scenario = SCENARIOS.get(info.name)
    expect(scenario is not None, f"no scenario for plugin {info.name!r}")
    t = time.perf_counter()
    summary = scenario(p, logs)
    print(f"scenario: {summary} ({(time.perf_counter() - t) * 1000:.0f} ms)")
    for level, msg in logs[:3]:
        print(f"host.log: [{level}] {msg}")
    if do_bench:
        print("bench (median ms, including wasmtime-py's Python-side value conversion):")
        for name, ms in bench(p):
            print(f"  {ms:9.3f}  {name}")
    print("OK")
    return info.name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--wit", default=DEFAULT_WIT, help="the contract's WIT directory")
    ap.add_argument("--wasi", choices=["full", "traps"], default="full",
                    help="full: link WASI p2 as the host does; traps: every WASI import traps")
    ap.add_argument("--bench", action="store_true",
                    help="also time open-session and the hot calls on a synthetic cluster")
    a = ap.parse_args()
    wit = Wit(a.wit)
    failed = 0
    for f in a.files:
        try:
            check(f, wit, a.wasi, a.bench)
        except (CheckFailed, wasmtime.WasmtimeError) as e:
            print(f"FAILED: {f}: {e}", file=sys.stderr)
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
