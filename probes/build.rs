//! Builds the BPF object `redoctor.bpf.o` into `OUT_DIR`.
//!
//! With clang (`$CLANG`, else `clang-19`, else `clang`) on the PATH the C
//! sources under `src/bpf/` are compiled (`-target bpf -mcpu=v3 -O2 -g`, CO-RE) and
//! stripped of DWARF with `llvm-strip -g` (BTF, which CO-RE needs, stays).
//! Without clang (or without the libbpf headers, `libbpf-dev`) the committed
//! `prebuilt/redoctor.bpf.o` is used, so `cargo build` works on machines
//! without a BPF compiler. `prebuilt/SOURCE_SHA256`
//! records the hash of the sources it was built from; `.ci/run` fails when it
//! no longer matches (refresh with `probes/build-bpf.sh`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCES: &[&str] = &["src/bpf/redoctor.bpf.c", "src/bpf/kernel_types.h"];

fn find_tool(env_var: &str, names: &[&str]) -> Option<String> {
    if let Ok(v) = env::var(env_var) {
        return Some(v);
    }
    names
        .iter()
        .find(|n| {
            Command::new(n)
                .arg("--version")
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        })
        .map(|n| n.to_string())
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("redoctor.bpf.o");
    for s in SOURCES {
        println!("cargo:rerun-if-changed={s}");
    }
    println!("cargo:rerun-if-changed=prebuilt/redoctor.bpf.o");
    println!("cargo:rerun-if-env-changed=CLANG");
    println!("cargo:rerun-if-env-changed=REDOCTOR_BPF_PREBUILT");
    println!("cargo:rerun-if-changed=/usr/include/bpf/bpf_helpers.h");

    let clang = if env::var_os("REDOCTOR_BPF_PREBUILT").is_some() {
        None
    } else if !Path::new("/usr/include/bpf/bpf_helpers.h").exists()
        && env::var_os("CLANG").is_none()
    {
        println!(
            "cargo:warning=libbpf headers missing (apt-get install libbpf-dev): using the prebuilt BPF object"
        );
        None
    } else {
        find_tool("CLANG", &["clang-19", "clang"])
    };
    match clang {
        Some(clang) => compile(&manifest, &clang, &out),
        None => {
            let pre = manifest.join("prebuilt/redoctor.bpf.o");
            std::fs::copy(&pre, &out).unwrap_or_else(|e| {
                panic!(
                    "no clang to compile the BPF programs and no prebuilt object at {}: {e}; \
                     install clang-19 (apt-get install clang-19 libbpf-dev)",
                    pre.display()
                )
            });
        }
    }
}

fn compile(manifest: &Path, clang: &str, out: &Path) {
    let src = manifest.join(SOURCES[0]);
    let status = Command::new(clang)
        .args([
            "-g",
            "-O2",
            "-target",
            "bpf",
            // BPF ISA v3 (kernel 5.1+): 32-bit atomics, for the
            // compare-and-swap that claims a thread's array entry.
            "-mcpu=v3",
            "-D__TARGET_ARCH_x86",
            "-Wall",
        ])
        .arg("-I")
        .arg(manifest.join("src/bpf"))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(out)
        .status()
        .unwrap_or_else(|e| panic!("running {clang}: {e}"));
    assert!(
        status.success(),
        "{clang} failed to compile {}; install libbpf-dev for <bpf/bpf_helpers.h>",
        src.display()
    );
    if let Some(strip) = find_tool("LLVM_STRIP", &["llvm-strip-19", "llvm-strip"]) {
        let status = Command::new(&strip)
            .arg("-g")
            .arg(out)
            .status()
            .unwrap_or_else(|e| panic!("running {strip}: {e}"));
        assert!(status.success(), "{strip} -g failed on {}", out.display());
    }
}
