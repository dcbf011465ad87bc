//! The kernel's BPF object lists, read with `bpftool -j`: the links and
//! maps a set of programs holds, to check that none outlives its agent.
//!
//! Object ids are allocated cyclically, but another test's agent may load
//! objects at any time: a link is matched on its id, type and program, a
//! map on its id, type and name, so an id taken again by someone else's
//! object does not count as ours.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

const INSTALL: &str = "apt-get install bpftool; .ci/run does this";

/// `bpftool -j ARGS`: its JSON output, or `Err` with what it said when it
/// fails (e.g. no object of that id). Panics when bpftool cannot be run
/// or prints something other than JSON.
pub fn bpftool_json(args: &[&str]) -> Result<Value, String> {
    let o = Command::new("bpftool")
        .arg("-j")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run bpftool ({INSTALL}): {e}"));
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap_or_else(|e| {
            panic!(
                "`bpftool -j {}` printed something other than JSON ({e}): {out}{}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr)
            )
        })
    };
    if o.status.success() {
        Ok(v)
    } else {
        Err(format!(
            "`bpftool -j {}` failed ({}): {}{}",
            args.join(" "),
            o.status,
            v.get("error").and_then(Value::as_str).unwrap_or(""),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// One of the kernel's lists (`link list`, `map list`): an array, retried
/// a few times if bpftool fails (objects come and go while it walks them).
fn list(args: &[&str]) -> Vec<Value> {
    let mut last = String::new();
    for _ in 0..5 {
        match bpftool_json(args) {
            Ok(Value::Null) => return vec![],
            Ok(Value::Array(a)) => return a,
            Ok(v) => panic!("`bpftool -j {}`: not a list: {v}", args.join(" ")),
            Err(e) => last = e,
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{last}")
}

fn u32_of(v: &Value, key: &str) -> u32 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("bpftool: no `{key}` in {v}")) as u32
}

fn str_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

/// A BPF link as the kernel lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BpfLink {
    pub id: u32,
    pub kind: String,
    pub prog_id: u32,
}

/// A BPF map as the kernel lists it (its name as the kernel keeps it: 15
/// bytes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BpfMap {
    pub id: u32,
    pub kind: String,
    pub name: String,
}

/// A BPF program: its name and the maps it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfProg {
    pub id: u32,
    pub kind: String,
    pub name: String,
    pub map_ids: Vec<u32>,
}

/// Every link the kernel holds (`bpftool -j link list`).
pub fn bpf_links() -> Vec<BpfLink> {
    list(&["link", "list"])
        .iter()
        .map(|v| BpfLink {
            id: u32_of(v, "id"),
            kind: str_of(v, "type"),
            prog_id: u32_of(v, "prog_id"),
        })
        .collect()
}

/// Every map the kernel holds (`bpftool -j map list`).
pub fn bpf_maps() -> Vec<BpfMap> {
    list(&["map", "list"])
        .iter()
        .map(|v| BpfMap {
            id: u32_of(v, "id"),
            kind: str_of(v, "type"),
            name: str_of(v, "name"),
        })
        .collect()
}

/// Program `id` (`bpftool -j prog show id N`), or None when the kernel
/// holds no such program.
pub fn bpf_prog(id: u32) -> Option<BpfProg> {
    let v = bpftool_json(&["prog", "show", "id", &id.to_string()]).ok()?;
    Some(BpfProg {
        id: u32_of(&v, "id"),
        kind: str_of(&v, "type"),
        name: str_of(&v, "name"),
        map_ids: v["map_ids"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_u64)
                    .map(|x| x as u32)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// What the kernel holds for programs `progs` now: the links attaching
/// them and the maps they use.
pub fn bpf_objects_of(progs: &[u32]) -> (Vec<BpfLink>, Vec<BpfMap>) {
    let map_ids: BTreeSet<u32> = progs
        .iter()
        .filter_map(|id| bpf_prog(*id))
        .flat_map(|p| p.map_ids)
        .collect();
    let links = bpf_links()
        .into_iter()
        .filter(|l| progs.contains(&l.prog_id))
        .collect();
    let maps = bpf_maps()
        .into_iter()
        .filter(|m| map_ids.contains(&m.id))
        .collect();
    (links, maps)
}

/// Those of `links` and `maps` the kernel still holds (same id, type and
/// program or name).
pub fn bpf_still_held(links: &[BpfLink], maps: &[BpfMap]) -> (Vec<BpfLink>, Vec<BpfMap>) {
    let now_links = bpf_links();
    let now_maps = bpf_maps();
    (
        links
            .iter()
            .filter(|l| now_links.contains(l))
            .cloned()
            .collect(),
        maps.iter()
            .filter(|m| now_maps.contains(m))
            .cloned()
            .collect(),
    )
}
