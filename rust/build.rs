//! Finds libgcap, in this order: the folder `GCAP_LIB_DIR` names; `pkg-config gcap`; else the C
//! library of the checkout this crate sits in, built with Meson into Cargo's `OUT_DIR`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=GCAP_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dir = from_env().or_else(from_pkg_config).unwrap_or_else(build_checkout);
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=gcap");
    // Tests, examples and programs find the library where it was linked from.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:lib_dir={}", dir.display());
}

fn from_env() -> Option<PathBuf> {
    let dir = PathBuf::from(env::var_os("GCAP_LIB_DIR")?);
    if !dir.is_dir() {
        panic!("GCAP_LIB_DIR={} is not a folder", dir.display());
    }
    Some(dir)
}

fn from_pkg_config() -> Option<PathBuf> {
    let out = Command::new("pkg-config").args(["--variable=libdir", "gcap"]).output().ok()?;
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !dir.is_empty()).then(|| PathBuf::from(dir))
}

/// The C library of this checkout, built with Meson (only the library: no tests, tools or examples).
fn build_checkout() -> PathBuf {
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("..");
    if !root.join("meson.build").is_file() {
        panic!("libgcap not found: set GCAP_LIB_DIR to the folder of libgcap.so, install gcap (pkg-config gcap), \
                or build from a gcap checkout");
    }
    for part in ["meson.build", "meson_options.txt", "src", "include"] {
        println!("cargo:rerun-if-changed={}", root.join(part).display());
    }
    let build = PathBuf::from(env::var("OUT_DIR").unwrap()).join("gcap-build");
    if !build.join("build.ninja").is_file() {
        let options = ["-Dtests=disabled", "-Dexamples=disabled", "-Dbench=disabled", "-Dtools=disabled",
                       "-Dpython=disabled", "--buildtype=debugoptimized"];
        run(Command::new("meson").arg("setup").args(options).arg(&build).arg(&root));
    }
    run(Command::new("meson").arg("compile").arg("-C").arg(&build));
    build.join("src")
}

fn run(cmd: &mut Command) {
    let status = cmd.status().unwrap_or_else(|e| {
        panic!("could not run {:?} ({e}): install Meson and Ninja (tools/bootstrap.sh does), or set GCAP_LIB_DIR", cmd)
    });
    if !status.success() {
        panic!("{:?} failed ({status})", cmd);
    }
}
