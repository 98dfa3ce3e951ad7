#!/usr/bin/env python3
"""Fails when a crate imports across a forbidden line (docs/architecture.md).

The executable form of docs/architecture.md's dependency rules, run by `scripts/test`
next to `cargo fmt`. Python 3.11 standard library only; reads the Cargo.toml files and
the library sources (no build), in well under a second.

What it checks:

1. Crates: the workspace crates each package lists in `[dependencies]` (dev-dependencies
   are free: a test may use anything), the core features a library may force on, and
   the outside crates only one crate may know (SQL drivers, chain SDKs).
2. Layers: which of stablecoin-core's top modules (`domain`, `ports`, `error`, `kernel`,
   `engine`, `memory`, `testkit`) each core layer and each other crate's library code
   may name, from its `use` lines and paths (`crate::...`, `super::...`,
   `stablecoin_core::...`). Comments, string literals and `#[cfg(test)]` items are not
   library code and are skipped; a `testkit` module (test support behind a feature) may
   also name core's `memory` and `testkit`.

Today's known violations are listed in KNOWN, each with what removes it: the script
passes on them and fails on any new one. An entry that no longer matches fails too
("stale"): delete it, the line it allowed is now kept.

    python3 scripts/check-layers.py          check the workspace (exit 1 on a violation)
    python3 scripts/check-layers.py --list   also print every import edge it found
"""

from __future__ import annotations

import bisect
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CORE = "stablecoin-core"

# 1. The workspace crates each package may list in [dependencies].
CRATE_DEPS: dict[str, set[str]] = {
    "stablecoin-core": set(),
    "stablecoin-rails": {CORE},
    "stablecoin-store": {CORE},
    "stablecoin-webhooks": {CORE},
    "stablecoin-escrow": {CORE},
    "stablecoin-checkout": {CORE},
    "stablecoin-providers": {CORE},
    "stablecoin-signer": {CORE},
    # The dev-only TRON node stands in for a chain: it knows none of ours.
    "stablecoin-tron-node": set(),
    "stablecoin-server": {
        CORE,
        "stablecoin-rails",
        "stablecoin-store",
        "stablecoin-webhooks",
        "stablecoin-escrow",
        "stablecoin-checkout",
        "stablecoin-providers",
        "stablecoin-signer",
    },
    # The facade re-exports every library, the server's included (feature `server`).
    "stablecoin": {
        CORE,
        "stablecoin-rails",
        "stablecoin-store",
        "stablecoin-webhooks",
        "stablecoin-escrow",
        "stablecoin-checkout",
        "stablecoin-signer",
        "stablecoin-server",
    },
}

# Core features only these packages may force in [dependencies]: the in-memory adapters
# are the server's development mode and the signing service's key holder, not a
# library's need (a feature list such as `evm-test = [.., "stablecoin-core/memory"]`
# for test support is fine).
CORE_FEATURES_FORCED_BY = {
    "memory": {"stablecoin-server", "stablecoin-signer"},
    "testkit": set(),
}

# Outside crates only one part of the workspace may know ([dependencies]).
OUTSIDE_ONLY_IN: list[tuple[re.Pattern[str], set[str], str]] = [
    (re.compile(r"^(rusqlite|sqlx|postgres|tokio-postgres|libsqlite3-sys)$"),
     {"stablecoin-store"}, "SQL is the store's"),
    (re.compile(r"^(solana-.*|spl-.*|litesvm|prost|alloy.*|ethers.*|web3)$"),
     {"stablecoin-rails", "stablecoin-tron-node"}, "a chain SDK is the rails'"),
]

# 2. The core modules each core layer may name (itself included).
CORE_LAYERS: dict[str, set[str]] = {
    # Pure and synchronous: the leaf.
    "domain": {"domain"},
    # The traits adapters implement and their value types.
    "ports": {"domain", "ports"},
    # The error vocabulary (CoreError wraps the domain's and the ports' own errors;
    # kernel/error.rs classes them).
    "error": {"domain", "ports", "kernel", "error"},
    # The shared runtime every product stands on (KERNEL.md).
    "kernel": {"domain", "ports", "error", "kernel"},
    # The wallet product.
    "engine": {"domain", "ports", "error", "kernel", "engine"},
    # The in-memory adapters: adapters of the ports, never of the engine.
    "memory": {"domain", "ports", "error", "kernel", "memory"},
    # The public conformance suites (they run adapters through the ports).
    "testkit": {"domain", "ports", "error", "kernel", "memory", "testkit"},
}
CORE_MODULES = set(CORE_LAYERS)
# What `stablecoin_core::X` names at the crate root when X is not a module.
CORE_ROOT_ITEMS = {"CoreError": "error", "CoreResult": "error"}

# core's domain is pure (`shared/ARCHITECTURE.md` §3): no async, no clock read, no randomness, no
# I/O. Time and ids come in as arguments.
IMPURE = re.compile(
    r"(?<![\w:])(?:tokio|async_trait|futures_util|futures|getrandom|rand|reqwest|k256)\s*::"
    r"|\basync\b|\.await\b|\b(?:SystemTime|Instant)\s*::\s*now\b|\bnow_utc\b"
    r"|\bstd\s*::\s*(?:fs|net|process|env|thread)\b"
)

# The core modules each other crate's library code may name.
PRODUCTS = {"domain", "ports", "error", "kernel"}
CORE_USE: dict[str, set[str]] = {
    "stablecoin-rails": {"domain", "ports", "error"},
    "stablecoin-store": {"domain", "ports", "error"},
    "stablecoin-webhooks": {"domain", "ports", "error"},
    "stablecoin-providers": {"domain", "ports", "error"},
    # The signing service keeps its keys in core's LocalSigner.
    "stablecoin-signer": {"domain", "ports", "error", "memory"},
    "stablecoin-escrow": PRODUCTS,
    "stablecoin-checkout": PRODUCTS,
    "stablecoin-tron-node": set(),
    "stablecoin-server": CORE_MODULES,
    "stablecoin": CORE_MODULES,
}
TEST_SUPPORT_EXTRA = {"memory", "testkit"}

# Today's known violations: (file, core module it may not name) -> what removes it.
# KERNEL.md is the design of issue #45 (`shared/KERNEL.md` of the project).
KNOWN: dict[tuple[str, str], str] = {
}


# ---------------------------------------------------------------- source reading

_NEXT = re.compile(r"""//|/\*|(?<!\w)b?r(#*)"|"|'""")
_STR_REST = re.compile(r'(?:[^"\\]|\\.)*"', re.S)
_CHAR = re.compile(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'")
_NOT_NL = re.compile(r"[^\n]")
_BLOCK = re.compile(r"/\*|\*/")
_NEWLINE = re.compile(r"\n")


def _spaces(text: str) -> str:
    return _NOT_NL.sub(" ", text)


def blank(text: str) -> str:
    """The source with comments and the contents of string and char literals replaced by
    spaces (newlines kept, so offsets keep their line numbers)."""
    out, i, n = [], 0, len(text)
    while (m := _NEXT.search(text, i)) is not None:
        s, tok = m.start(), m.group(0)
        out.append(text[i:s])
        if tok == "//":
            j = text.find("\n", s)
            j = n if j < 0 else j
        elif tok == "/*":
            depth, j = 1, s + 2
            while depth and (b := _BLOCK.search(text, j)) is not None:
                depth += 1 if b.group(0) == "/*" else -1
                j = b.end()
            j = j if depth == 0 else n
        elif tok == '"':
            rest = _STR_REST.match(text, s + 1)
            j = rest.end() if rest else n
            out.append('"' + _spaces(text[s + 1 : j - 1]) + '"')
            i = j
            continue
        elif tok == "'":
            c = _CHAR.match(text, s)
            j = c.end() if c else s + 1  # a lifetime or a label when no char literal
            out.append("'" + _spaces(text[s + 1 : j - 1]) + "'" if c else "'")
            i = j
            continue
        else:  # a raw string: r"..", r#".."#, br".."
            close = '"' + m.group(1)
            k = text.find(close, m.end())
            j = n if k < 0 else k + len(close)
            out.append(tok + _spaces(text[m.end() : j - len(close)]) + close)
            i = j
            continue
        out.append(_spaces(text[s:j]))
        i = j
    out.append(text[i:])
    return "".join(out)


_CFG_TEST = re.compile(r"#\[cfg\((?:test|all\(test\b[^\]]*)\)\]")
_ATTR = re.compile(r"\s*#\[[^\]]*\]")
_MOD_DECL = re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def strip_test_items(code: str) -> tuple[str, list[str]]:
    """`code` without its `#[cfg(test)]` items, and the names of the `mod x;` files they
    declare (test-only files)."""
    out = list(code)
    test_mods: list[str] = []
    for m in _CFG_TEST.finditer(code):
        i = m.end()
        while (a := _ATTR.match(code, i)):
            i = a.end()
        if (d := _MOD_DECL.match(code, i)):
            test_mods.append(d.group(1))
            continue
        brace, semi = code.find("{", i), code.find(";", i)
        if brace < 0 or (0 <= semi < brace):
            end = semi + 1
        else:
            depth, j = 0, brace
            while j < len(code):
                if code[j] == "{":
                    depth += 1
                elif code[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            end = j + 1
        for k in range(m.start(), min(end, len(code))):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out), test_mods


_USE = re.compile(r"\buse\s+([^;]+);")
_PATH = re.compile(r"\b((?:crate|self|super|stablecoin_\w+)(?:\s*::\s*\w+)+)")


def use_paths(tree: str) -> list[list[str]]:
    """The leaf paths of one `use` tree (`a::{b, c::{d}}` -> a::b, a::c::d)."""
    tokens = re.findall(r"::|\{|\}|,|\*|\w+", re.sub(r"\bas\s+\w+", "", tree))
    pos = 0

    def parse(prefix: list[str]) -> list[list[str]]:
        nonlocal pos
        paths: list[list[str]] = []
        cur = list(prefix)
        while pos < len(tokens):
            t = tokens[pos]
            pos += 1
            if t == "{":
                paths += parse(cur)
                cur = None  # type: ignore[assignment]
            elif t in (",", "}"):
                if cur is not None and cur != prefix:
                    paths.append(cur)
                if t == "}":
                    return paths
                cur = list(prefix)
            elif t != "::" and cur is not None:
                cur.append(t)
        if cur is not None and cur != prefix:
            paths.append(cur)
        return paths

    return parse([])


def module_path(crate_dir: Path, file: Path) -> list[str]:
    """The module path of `file` inside its crate (`src/engine/swaps.rs` -> engine, swaps)."""
    parts = list(file.relative_to(crate_dir / "src").with_suffix("").parts)
    if parts and parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return parts


def targets(crate: str, mod: list[str], path: list[str]) -> str | None:
    """The stablecoin-core top module a path names, or None (not core, or not a module)."""
    head, rest = path[0], path[1:]
    if crate == CORE and head in ("crate", "super", "self"):
        base = [] if head == "crate" else list(mod)
        if head == "super":
            base = base[:-1]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
        full = base + rest
    elif head == "stablecoin_core":
        full = rest
    else:
        return None
    if not full:
        return None
    if full[0] in CORE_MODULES:
        return full[0]
    return CORE_ROOT_ITEMS.get(full[0])


def edges(crate: str, crate_dir: Path, file: Path, text: str) -> tuple[dict[str, int], list[str]]:
    """Every core module `file`'s library code names, with its first line; and the test
    files it declares."""
    code, test_mods = strip_test_items(blank(text))
    mod = module_path(crate_dir, file)
    found: dict[str, int] = {}
    newlines = [m.start() for m in _NEWLINE.finditer(code)]

    def line(offset: int) -> int:
        return bisect.bisect_left(newlines, offset) + 1

    def add(path: list[str], offset: int) -> None:
        t = targets(crate, mod, path)
        if t is not None and t not in found:
            found[t] = line(offset)

    if crate == CORE and mod[:1] == ["domain"] and (m := IMPURE.search(code)):
        found["<impure>"] = line(m.start())
    for m in _USE.finditer(code):
        for p in use_paths(m.group(1)):
            add(p, m.start())
    for m in _PATH.finditer(code):
        add([s.strip() for s in m.group(1).split("::")], m.start())
    return found, test_mods


# ---------------------------------------------------------------- the checks


def packages() -> dict[str, Path]:
    root = tomllib.loads((ROOT / "Cargo.toml").read_text())
    dirs = {root["package"]["name"]: ROOT}
    for member in root["workspace"]["members"]:
        meta = tomllib.loads((ROOT / member / "Cargo.toml").read_text())
        dirs[meta["package"]["name"]] = ROOT / member
    return dirs


def normal_deps(meta: dict) -> dict[str, dict]:
    deps = dict(meta.get("dependencies", {}))
    for target in meta.get("target", {}).values():
        deps.update(target.get("dependencies", {}))
    return {k: (v if isinstance(v, dict) else {}) for k, v in deps.items()}


def check_crates(dirs: dict[str, Path]) -> list[str]:
    errors = []
    for name, d in sorted(dirs.items()):
        if name not in CRATE_DEPS:
            errors.append(f"{name}: a package docs/architecture.md does not place (add its rules)")
            continue
        deps = normal_deps(tomllib.loads((d / "Cargo.toml").read_text()))
        for dep, spec in sorted(deps.items()):
            if dep in dirs and dep not in CRATE_DEPS[name]:
                errors.append(f"{name}/Cargo.toml: depends on {dep}, across a forbidden line")
            if dep == CORE:
                for feat in spec.get("features", []):
                    if feat in CORE_FEATURES_FORCED_BY and name not in CORE_FEATURES_FORCED_BY[feat]:
                        errors.append(f"{name}/Cargo.toml: forces {CORE}'s `{feat}` in [dependencies]")
            for pattern, owners, why in OUTSIDE_ONLY_IN:
                if pattern.match(dep) and name not in owners:
                    errors.append(f"{name}/Cargo.toml: depends on {dep} ({why})")
    return errors


def layer_of(crate: str, mod: list[str]) -> str:
    """The rule set a file follows: a core layer, or another crate's name."""
    if crate == CORE:
        return mod[0] if mod and mod[0] in CORE_LAYERS else "root"
    return crate


def allowed(crate: str, mod: list[str]) -> set[str]:
    if crate == CORE:
        layer = layer_of(crate, mod)
        return CORE_MODULES if layer == "root" else CORE_LAYERS[layer]
    extra = TEST_SUPPORT_EXTRA if "testkit" in mod else set()
    return CORE_USE[crate] | extra


def check_sources(dirs: dict[str, Path], list_edges: bool) -> list[str]:
    errors, seen = [], set()
    for name, d in sorted(dirs.items()):
        src = d / "src"
        if name not in CORE_USE and name != CORE:
            continue
        files = sorted(src.rglob("*.rs"))
        test_files: set[Path] = set()
        for f in files:
            if f in test_files:
                continue
            rel = f.relative_to(ROOT).as_posix()
            found, test_mods = edges(name, d, f, f.read_text(encoding="utf-8"))
            home = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") else f.with_suffix("")
            for t in test_mods:
                test_files.update({home / f"{t}.rs", home / t / "mod.rs"})
            mod = module_path(d, f)
            ok = allowed(name, mod)
            for target, line in sorted(found.items()):
                key = (rel, target)
                if list_edges:
                    note = f"  KNOWN: {KNOWN[key]}" if key in KNOWN else ""
                    print(f"{layer_of(name, mod)} -> core::{target}  ({rel}:{line}){note}")
                if target in ok:
                    continue
                if key in KNOWN:
                    seen.add(key)
                    continue
                if target == "<impure>":
                    errors.append(f"{rel}:{line}: core's domain/ is pure: no async, clock, "
                                  f"randomness or I/O (docs/architecture.md)")
                    continue
                who = f"core's {layer_of(name, mod)}/" if name == CORE else name
                errors.append(f"{rel}:{line}: {who} may not import core's {target} "
                              f"(docs/architecture.md)")
    for key in sorted(set(KNOWN) - seen):
        errors.append(f"{key[0]}: no longer imports core's {key[1]}: delete its entry from "
                      f"KNOWN in scripts/check-layers.py and docs/architecture.md")
    return errors


def check_doc() -> list[str]:
    """Every known violation is written down in docs/architecture.md."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return [f"docs/architecture.md: does not list the known violation {f} -> {t}"
            for f, t in sorted(KNOWN) if f"`{f}`" not in doc]


def main() -> int:
    list_edges = "--list" in sys.argv[1:]
    dirs = packages()
    errors = check_crates(dirs) + check_sources(dirs, list_edges) + check_doc()
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check-layers: {len(errors)} line(s) crossed; the rules are in "
              f"docs/architecture.md", file=sys.stderr)
        return 1
    print(f"check-layers: {len(dirs)} packages keep docs/architecture.md's lines "
          f"({len(KNOWN)} known violations allowed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
