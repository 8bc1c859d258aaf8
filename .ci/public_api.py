#!/usr/bin/env python3
"""Lists the public API of a crate from its rustdoc JSON (nightly `--output-format json`).

Walks the crate from its root module the way a user reaches items: through public modules and
`pub use` re-exports (globs included), skipping what rustdoc strips (`#[doc(hidden)]`, private
items). Prints one line per public path, sorted, with its kind; then a count by kind, the
number of paths and the number of distinct items (more paths than items means some item has
two paths). Inherent methods, associated items, public fields and enum variants are listed
under their type; trait impls are listed as `impl Trait for Type` (auto and blanket impls are
left out: they follow from the items themselves).

Usage: public_api.py CRATE.json > listing.txt
"""

import collections
import json
import sys


def kind_of(item):
    inner = item["inner"]
    return next(iter(inner)) if isinstance(inner, dict) else str(inner)


def render_type(ty):
    """A short rendering of a rustdoc JSON type (enough to name an impl's self type)."""
    if not isinstance(ty, dict):
        return str(ty)
    if "resolved_path" in ty:
        return ty["resolved_path"].get("path") or ty["resolved_path"].get("name", "?")
    if "primitive" in ty:
        return ty["primitive"]
    if "generic" in ty:
        return ty["generic"]
    if "borrowed_ref" in ty:
        return "&" + render_type(ty["borrowed_ref"]["type"])
    if "slice" in ty:
        return "[" + render_type(ty["slice"]) + "]"
    if "tuple" in ty:
        return "(" + ", ".join(render_type(t) for t in ty["tuple"]) + ")"
    if "dyn_trait" in ty:
        return "dyn " + " + ".join(t["trait"]["path"] for t in ty["dyn_trait"]["traits"])
    return next(iter(ty))


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    index = doc["index"]
    root = index[str(doc["root"])]
    crate = root["name"]
    lines = set()
    items_seen = set()
    paths_of = collections.defaultdict(set)
    kinds = collections.Counter()
    visiting = set()

    def get(item_id):
        return None if item_id is None else index.get(str(item_id))

    def is_public(item):
        return item.get("visibility") == "public"

    def emit(path, kind, item_id):
        line = f"{path} ({kind})"
        if line not in lines:
            lines.add(line)
            kinds[kind] += 1
            if item_id is not None:
                items_seen.add((item_id, kind))
                if kind not in ("field", "variant", "method") and not kind.startswith("trait "):
                    paths_of[item_id].add(path)

    def members(path, item):
        """Fields, variants, inherent items and trait impls of a type or trait at `path`."""
        kind = kind_of(item)
        inner = item["inner"][kind]
        if kind == "struct":
            sk = inner["kind"]
            if isinstance(sk, dict) and "plain" in sk:
                for fid in sk["plain"]["fields"]:
                    field = get(fid)
                    if field and is_public(field):
                        emit(f"{path}::{field['name']}", "field", fid)
                if sk["plain"].get("has_stripped_fields"):
                    emit(f"{path}::..", "private fields", None)
            elif isinstance(sk, dict) and "tuple" in sk:
                for i, fid in enumerate(sk["tuple"]):
                    if fid is not None:
                        emit(f"{path}::{i}", "field", fid)
        if kind == "enum":
            for vid in inner["variants"]:
                variant = get(vid)
                if variant:
                    emit(f"{path}::{variant['name']}", "variant", vid)
        if kind == "trait":
            for mid in inner["items"]:
                member = get(mid)
                if member:
                    emit(f"{path}::{member['name']}", "trait " + kind_of(member), mid)
            return
        for impl_id in inner.get("impls", []):
            impl = get(impl_id)
            if not impl:
                continue
            imp = impl["inner"]["impl"]
            if imp.get("is_synthetic") or imp.get("blanket_impl") is not None:
                continue
            trait_path = imp.get("trait") or imp.get("trait_")
            if trait_path is None:
                for mid in imp["items"]:
                    member = get(mid)
                    if member and is_public(member) and member.get("name"):
                        emit(f"{path}::{member['name']}", "method" if kind_of(member) == "function" else kind_of(member), mid)
            else:
                trait = trait_path.get("path") or trait_path.get("name")
                emit(f"impl {trait} for {path}", "trait impl", None)

    def walk(path, module):
        key = (module["id"], path)
        if key in visiting:
            return
        visiting.add(key)
        for child_id in module["inner"]["module"]["items"]:
            child = get(child_id)
            if child is None or not is_public(child):
                continue
            kind = kind_of(child)
            if kind == "use":
                use = child["inner"]["use"]
                target = get(use["id"])
                if use["is_glob"]:
                    if target is not None and kind_of(target) == "module":
                        walk(path, target)
                    elif target is not None and kind_of(target) == "enum":
                        for vid in target["inner"]["enum"]["variants"]:
                            variant = get(vid)
                            if variant:
                                emit(f"{path}::{variant['name']}", "variant", vid)
                    else:
                        emit(f"{path}::* (glob of {use['source']})", "re-export", None)
                    continue
                name = use["name"]
                if target is None:
                    # An item of another crate (or one rustdoc does not inline).
                    emit(f"{path}::{name} = {use['source']}", "re-export", None)
                    continue
                visit(f"{path}::{name}", target, use["id"])
            else:
                visit(f"{path}::{child['name']}", child, child_id)
        visiting.discard(key)

    def visit(path, item, item_id):
        kind = kind_of(item)
        emit(path, kind, item_id)
        if kind == "module":
            walk(path, item)
        elif kind in ("struct", "enum", "union", "trait"):
            members(path, item)

    walk(crate, root)

    for line in sorted(lines):
        print(line)
    print()
    # The prelude is a second path by design (a curated glob import); it is listed on its own
    # and does not count as an item with two paths.
    def owned(paths):
        return {p for p in paths if "::prelude::" not in p}

    multi = sorted(" = ".join(sorted(owned(p))) for p in paths_of.values() if len(owned(p)) > 1)
    prelude = sorted(p for ps in paths_of.values() for p in ps if "::prelude::" in p)
    print(f"# {crate}: {len(lines)} public paths, {len(items_seen)} distinct items with an id, "
          f"{len(multi)} items reachable by more than one path outside the prelude, "
          f"{len(prelude)} in the prelude")
    for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"#   {n:5} {kind}")
    for path in multi:
        print(f"#   more than one path: {path}")


if __name__ == "__main__":
    main()
