#!/usr/bin/env python3
"""The largest import cycle among one crate's modules (KERNEL.md §1.2, "a 38-file knot").

Reads every `.rs` file under a crate's `src/`, takes its `use crate::...`, `use super::...`
and `use self::...` statements (brace groups and multi-line uses included), resolves each
path to the deepest module that exists as a file, and prints the strongly connected
components of that graph with more than one module, largest first. A module is a file;
`mod.rs`/`lib.rs` stand for their folder. `mod` declarations are not imports and are not
counted by themselves, but with `--paths` a path written in code counts too:
`crate::a::b`, `super::x`, and `child::item` for a child the file declares with `mod`
(a parent that calls into its child depends on it).

Why: a cycle means no module in it can be read, tested or moved without the others;
the size of the largest one is the number to drive down.

    python3 scripts/module-cycles.py stablecoin-server          # sizes and members
    python3 scripts/module-cycles.py stablecoin-server --paths  # `use` and inline paths
    python3 scripts/module-cycles.py stablecoin-server --quiet  # the largest size only
"""

import re
import sys
from pathlib import Path

USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M | re.S)
INLINE = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)")
MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)


def module_of(src: Path, file: Path) -> tuple:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def expand(tree: str) -> list:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (aliases and globs dropped)."""
    tree = re.sub(r"\s+", "", tree)
    depth, start, prefix = 0, None, ""
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start, prefix = i, tree[:i]
            depth += 1
        elif ch == "}":
            depth -= 1
    if start is None:
        return [re.sub(r"as\w+$", "", tree).replace("::*", "")]
    inner = tree[start + 1 : tree.rindex("}")]
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    out = []
    for item in filter(None, items):
        out += expand(prefix + item) if item != "self" else [prefix.rstrip(":")]
    return out


def resolve(path: str, here: tuple, is_dir_module: bool, modules: set):
    segs = path.split("::")
    base = here if is_dir_module else here[:-1]
    if segs[0] == "crate":
        base, segs = (), segs[1:]
    elif segs[0] in ("super", "self"):
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        if path.startswith("self"):
            base = here
    else:
        return None  # an external crate or a name in scope
    target = base
    for s in segs:
        if target + (s,) in modules:
            target = target + (s,)
        else:
            break
    return target


def graph(src: Path, inline: bool):
    files = sorted(src.rglob("*.rs"))
    modules = {module_of(src, f) for f in files}
    edges = {m: set() for m in modules}
    for f in files:
        here = module_of(src, f)
        is_dir = f.stem in ("mod", "lib", "main")
        text = re.sub(r"//[^\n]*", "", f.read_text())
        # Unit tests (`#[cfg(test)] mod tests { use super::*; }`, last in a file by the
        # house style) are not the module's dependencies, and their `super` is the file.
        text = re.split(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)[0]
        for m in USE.finditer(text):
            for p in expand(m.group(1)):
                t = resolve(p, here, is_dir, modules)
                if t is not None and t != here:
                    edges[here].add(t)
        if not inline:
            continue
        code = USE.sub("", text)
        paths = [m.group(1) for m in INLINE.finditer(code)]
        for child in MOD.findall(text):
            if re.search(rf"(?<![\w:]){child}::\w", code):
                paths.append(f"self::{child}")
        for p in paths:
            t = resolve(p, here, is_dir, modules)
            if t is not None and t != here:
                edges[here].add(t)
    return edges


def sccs(edges: dict) -> list:
    """Tarjan's algorithm, iterative (the server has hundreds of modules)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return sorted((c for c in out if len(c) > 1), key=len, reverse=True)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src = Path(args[0] if args else "stablecoin-server") / "src"
    comps = sccs(graph(src, "--paths" in sys.argv))
    if "--quiet" in sys.argv:
        print(len(comps[0]) if comps else 0)
        return
    print(f"{sum(1 for _ in src.rglob('*.rs'))} files; cycles (largest first):")
    for c in comps:
        names = sorted("::".join(m) or "crate" for m in c)
        print(f"  {len(c)}: {', '.join(names)}")


if __name__ == "__main__":
    main()
