#!/usr/bin/env bash
# The documentation holds together: every relative link in the tracked
# markdown files (README.md, docs/, bench/results/, ...) names a file or
# directory that exists, every #anchor names a heading of its target (as
# GitHub makes anchors from headings), and every docs/*.md is linked from
# README.md. First on a made-up tree, where a broken link, a broken anchor
# and an unlinked doc must each be reported, then on the repository.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # check ROOT FILE...: print each problem, exit 1 if any
	python3 - "$@" <<'PY'
import os, re, sys
root, files = sys.argv[1], sys.argv[2:]
link = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)')

def slug(h):
    h = re.sub(r'[`*_]', '', h.strip().lower())
    h = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', h)
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')

anchors = {}
def heads(path):
    if path not in anchors:
        seen, out, fence = {}, set(), False
        for l in open(path, encoding='utf-8'):
            if l.startswith('```'):
                fence = not fence
            m = None if fence else re.match(r'#{1,6}\s+(.*)', l)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f'{s}-{n}')
        anchors[path] = out
    return anchors[path]

bad = []
for f in files:
    fence = False
    for ln, l in enumerate(open(os.path.join(root, f), encoding='utf-8'), 1):
        if l.startswith('```'):
            fence = not fence
        if fence:
            continue
        for m in link.finditer(re.sub(r'`[^`]*`', '', l)):
            t = m.group(1) or m.group(2)
            if re.match(r'[a-z]+:', t):
                continue
            path, _, anchor = t.partition('#')
            target = os.path.normpath(os.path.join(root, os.path.dirname(f), path)) if path \
                else os.path.join(root, f)
            if not os.path.exists(target):
                bad.append(f'{f}:{ln}: {t}: no such file')
            elif anchor and target.endswith('.md') and anchor not in heads(target):
                bad.append(f'{f}:{ln}: {t}: no heading makes #{anchor}')
readme = os.path.join(root, 'README.md')
if os.path.exists(readme):
    text = open(readme, encoding='utf-8').read()
    d = os.path.join(root, 'docs')
    for doc in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if doc.endswith('.md') and f'](docs/{doc}' not in text:
            bad.append(f'README.md: docs/{doc} is not linked')
for b in bad:
    print(b)
print(f'{len(files)} files, {len(bad)} problems')
sys.exit(1 if bad else 0)
PY
}

# The made-up tree: one good link and anchor, then each fault alone.
mkdir -p "$tmp/t/docs"
printf '# Top\n\n## A `b` section\n\nsee [x](docs/x.md#the-x) and [s](#a-b-section)\n' > "$tmp/t/README.md"
printf '# The X\n\nback to [top](../README.md#top)\n' > "$tmp/t/docs/x.md"
out=$(check "$tmp/t" README.md docs/x.md) || { echo "$out"; echo "FAIL: good tree refused"; exit 1; }
expect_bad() { # expect_bad WHAT PATTERN: the tree as changed must be refused, naming PATTERN
	if out=$(check "$tmp/t" README.md docs/*.md); then
		echo "FAIL: $1 not reported"
		exit 1
	fi
	grep -q -- "$2" <<< "$out" || { echo "$out"; echo "FAIL: $1 reported without '$2'"; exit 1; }
	echo "self-check: $1 reported"
}
cp "$tmp/t/docs/x.md" "$tmp/x.md"
printf 'and [gone](../missing.md)\n' >> "$tmp/t/docs/x.md"
(cd "$tmp/t" && expect_bad "a missing file" "missing.md: no such file")
cp "$tmp/x.md" "$tmp/t/docs/x.md"
printf 'and [wrong](../README.md#a-c-section)\n' >> "$tmp/t/docs/x.md"
(cd "$tmp/t" && expect_bad "a missing anchor" "#a-c-section")
cp "$tmp/x.md" "$tmp/t/docs/x.md"
printf '# Y\n' > "$tmp/t/docs/y.md"
(cd "$tmp/t" && expect_bad "an unlinked doc" "docs/y.md is not linked")

cd "$repo"
mapfile -t files < <(git ls-files '*.md')
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no tracked markdown"; exit 1; }
check "$repo" "${files[@]}"
