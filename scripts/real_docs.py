#!/usr/bin/env python3
"""Helper of scripts/real-docs.sh (Python 3 standard library only).

  real_docs.py reach ROOT BASE INDEX OUT.json
      Pages reachable from BASE+INDEX, served by nginx from ROOT: an
      independent parser (html.parser) follows <a>/<area> href, <link> href
      of document rels (next, prev, alternate, ..., not stylesheet) and
      <frame>/<iframe> src within BASE's host:port, strips fragments,
      honours <base href>, rel=nofollow, <meta name=robots content=nofollow>
      and robots.txt (for "crawldeck"),
      and keeps HTML pages only (files ending .html/.htm; a directory is its
      index.html, reached through nginx's 301 to the slash form).
  real_docs.py report NAME ROOT BASE REACH.json DATA SUMMARY.json BIN OUT.json
      Reads the crawl in DATA (`BIN pages DATA --json`, `--duplicates --json`)
      and the headless summary, prints the site's figures and details, and
      writes them to OUT.json.
  real_docs.py table ROW.json...
      One table of the rows written by `report`.
"""

import html.parser
import json
import os
import posixpath
import re
import subprocess
import sys
import urllib.parse
import urllib.robotparser
from collections import deque

# Mirrors crawldeck's defaults (src/engine/config.rs).
MAX_DEPTH = 20
MAX_LINKS_PER_PAGE = 1000
PRODUCT_TOKEN = "crawldeck"
# As crawldeck's extract.rs: <link> is followed only for document relations.
DOCUMENT_RELS = {
    "alternate", "amphtml", "canonical", "next", "prev", "previous", "first",
    "last", "up", "start", "index", "contents", "chapter", "section",
    "subsection", "appendix", "glossary", "help", "home", "copyright", "license",
}
RESOURCE_RELS = {
    "stylesheet", "icon", "preload", "prefetch", "preconnect", "dns-prefetch",
    "modulepreload", "manifest", "apple-touch-icon",
}
HTML_EXT = (".html", ".htm", ".xhtml")
GENUINE_JACCARD = 0.5


# ---------------------------------------------------------------- URLs

def url_key(url):
    """A comparable form of an absolute URL: scheme, host:port, the
    percent-decoded path and query (both crawldeck's and Python's encodings
    of one URL give the same key); no fragment."""
    p = urllib.parse.urlsplit(url)
    path = urllib.parse.unquote(p.path) or "/"
    query = urllib.parse.unquote(p.query)
    return f"{p.scheme}://{p.netloc.lower()}{path}" + (f"?{query}" if p.query else "")


def url_to_file(root, url):
    """(kind, path): how nginx (root ROOT, index index.html) answers URL.
    kind is 'file', 'redirect' (a directory without its slash; path is the
    new URL), or 'missing'."""
    p = urllib.parse.urlsplit(url)
    path = urllib.parse.unquote(p.path) or "/"
    norm = posixpath.normpath(path)
    if path.endswith("/") and norm != "/":
        norm += "/"
    full = os.path.join(root, norm.lstrip("/"))
    if norm.endswith("/"):
        index = os.path.join(full, "index.html")
        return ("file", index) if os.path.isfile(index) else ("missing", None)
    if os.path.isdir(full):
        return ("redirect", urllib.parse.urlunsplit((p.scheme, p.netloc, p.path + "/", p.query, "")))
    if os.path.isfile(full):
        return ("file", full)
    return ("missing", None)


def is_html(path):
    return path.lower().endswith(HTML_EXT)


# ---------------------------------------------------------------- parsing

class LinkParser(html.parser.HTMLParser):
    def __init__(self, base):
        super().__init__(convert_charrefs=True)
        self.base = base
        self.base_seen = False
        self.links = []  # (raw href, nofollow), document order
        self.meta_nofollow = False

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        rel = {t.lower() for t in a.get("rel", "").split()}
        if tag in ("a", "area", "link") and "href" in a:
            if tag == "link" and (not rel & DOCUMENT_RELS or rel & RESOURCE_RELS):
                return
            self.links.append((a["href"], "nofollow" in rel))
        elif tag in ("frame", "iframe") and "src" in a:
            self.links.append((a["src"], "nofollow" in rel))
        elif tag == "base" and "href" in a and not self.base_seen:
            self.base_seen = True
            self.base = urllib.parse.urljoin(self.base, a["href"].strip())
        elif tag == "meta" and a.get("name", "").lower() in ("robots", PRODUCT_TOKEN):
            content = {t.strip().lower() for t in a.get("content", "").split(",")}
            if content & {"nofollow", "none"}:
                self.meta_nofollow = True

    handle_startendtag = handle_starttag


def read_text(path):
    with open(path, "rb") as f:
        raw = f.read()
    m = re.search(rb'charset=["\']?([A-Za-z0-9_-]+)', raw[:2048])
    enc = m.group(1).decode() if m else "utf-8"
    try:
        return raw.decode(enc, errors="replace")
    except LookupError:
        return raw.decode("utf-8", errors="replace")


def page_links(path, url):
    """Absolute fragment-less links of the page, deduplicated in document
    order, with nofollow only if every occurrence says so."""
    p = LinkParser(url)
    try:
        p.feed(read_text(path))
        p.close()
    except Exception as e:  # noqa: BLE001 - a broken page has the links read so far
        print(f"warning: {path}: {e}", file=sys.stderr)
    if p.meta_nofollow:
        return []
    out = {}
    for href, nofollow in p.links:
        href = href.strip()
        if not href:
            continue
        try:
            absu = urllib.parse.urljoin(p.base, href)
        except ValueError:
            continue
        absu = urllib.parse.urldefrag(absu)[0]
        if not absu.startswith(("http://", "https://")):
            continue
        out[absu] = out.get(absu, True) and nofollow
    return list(out.items())


def reach(root, base, index, out):
    base_netloc = urllib.parse.urlsplit(base).netloc.lower()
    robots = None
    robots_file = os.path.join(root, "robots.txt")
    if os.path.isfile(robots_file):
        robots = urllib.robotparser.RobotFileParser()
        with open(robots_file, encoding="utf-8", errors="replace") as f:
            robots.parse(f.read().splitlines())
    start = urllib.parse.urljoin(base, index)
    seen = {url_key(start)}
    queue = deque([(start, 0)])
    pages = {}  # key -> {url, file, depth}
    missing = set()
    robots_denied = set()
    beyond_depth = 0
    capped_pages = 0  # pages with more distinct links than the crawler takes
    redirects = 0
    while queue:
        url, depth = queue.popleft()
        key = url_key(url)
        if robots is not None and not robots.can_fetch(PRODUCT_TOKEN, url):
            robots_denied.add(key)
            continue
        kind, path = url_to_file(root, url)
        hops = 0
        while kind == "redirect" and hops < 10:
            redirects += 1
            url = path
            key = url_key(url)
            kind, path = url_to_file(root, url)
            hops += 1
            if key in pages:
                kind = "known"
        if kind != "file":
            if kind == "missing":
                missing.add(key)
            continue
        if not is_html(path):
            continue
        if key in pages:
            continue
        pages[key] = {"url": url, "file": path, "depth": depth}
        if depth > MAX_DEPTH:
            beyond_depth += 1
        links = page_links(path, url)
        if len(links) > MAX_LINKS_PER_PAGE:
            capped_pages += 1
        for link, nofollow in links:
            if nofollow:
                continue
            if urllib.parse.urlsplit(link).netloc.lower() != base_netloc:
                continue
            k = url_key(link)
            if k in seen:
                continue
            seen.add(k)
            queue.append((link, depth + 1))
    result = {
        "root": root,
        "base": base,
        "index": start,
        "pages": pages,
        "missing": sorted(missing),
        "robots_denied": sorted(robots_denied),
        "beyond_depth": beyond_depth,
        "capped_pages": capped_pages,
        "redirects": redirects,
    }
    with open(out, "w") as f:
        json.dump(result, f)
    print(f"reachable: {len(pages)} HTML pages from {start} "
          f"(broken links {len(missing)}, robots-denied {len(robots_denied)}, "
          f"pages beyond depth {MAX_DEPTH}: {beyond_depth}, "
          f"pages with > {MAX_LINKS_PER_PAGE} links: {capped_pages})")


# ---------------------------------------------------------------- text

class TextParser(html.parser.HTMLParser):
    SKIP = {"script", "style", "template", "noscript"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skip = 0
        self.parts = []

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


WORD = re.compile(r"\w+", re.UNICODE)


def visible_words(text):
    p = TextParser()
    p.feed(text)
    p.close()
    return WORD.findall(" ".join(p.parts).lower())


def shingles(words, n=3):
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


# ---------------------------------------------------------------- report

def json_lines(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def report(name, root, base, reach_file, data, summary_file, binary, out):
    with open(reach_file) as f:
        r = json.load(f)
    reachable = r["pages"]
    summary = {}
    try:
        with open(summary_file) as f:
            for line in f:
                line = line.strip()
                if line.startswith('{"summary"'):
                    summary = json.loads(line)["summary"]
    except OSError:
        pass

    rows = json_lines([binary, "pages", data, "--json"])
    fetched = set()
    fetched_not_reachable = []
    fates = {}
    for row in rows:
        fate = row.get("fate")
        key = url_key(row["url"])
        fates[key] = (fate, row.get("status"), row.get("reason"))
        status = row.get("status") or 0
        ctype = (row.get("content_type") or "").lower()
        # A page that redirects by its meta refresh was fetched too (fate
        # redirect, status 2xx); the parser counts it as a page.
        refreshed = fate == "redirect" and row.get("reason") == "meta refresh"
        if (fate in ("fetched", "duplicate") or refreshed) and 200 <= status < 300 and "html" in ctype:
            if key in reachable:
                fetched.add(key)
            elif urllib.parse.urlsplit(row["url"]).netloc.lower() == urllib.parse.urlsplit(base).netloc.lower():
                fetched_not_reachable.append(row["url"])
    not_fetched = [k for k in reachable if k not in fetched]

    groups = json_lines([binary, "pages", data, "--duplicates", "--json"])
    near = [g for g in groups if g.get("kind") == "near"]
    exact = [g for g in groups if g.get("kind") != "near"]
    cache = {}

    def shingles_of(url):
        if url not in cache:
            kind, path = url_to_file(root, url)
            while kind == "redirect":
                kind, path = url_to_file(root, path)
            cache[url] = shingles(visible_words(read_text(path))) if kind == "file" else None
        return cache[url]

    bad_groups = []
    for g in near:
        first = shingles_of(g["first"])
        scores = []
        for u in g["urls"]:
            if u == g["first"]:
                continue
            s = shingles_of(u)
            scores.append((jaccard(first, s) if first is not None and s is not None else 0.0, u))
        worst = min(scores) if scores else (1.0, g["first"])
        if worst[0] < GENUINE_JACCARD:
            bad_groups.append({"group": g["group"], "size": len(g["urls"]), "first": g["first"],
                               "min_jaccard": round(worst[0], 3), "worst": worst[1],
                               "below": sum(1 for s, _ in scores if s < GENUINE_JACCARD)})
        if len(cache) > 4000:
            cache.clear()

    alerts = summary.get("open_alerts", [])
    row = {
        "site": name,
        "reachable": len(reachable),
        "fetched": len(fetched),
        "fetched_not_reachable": len(fetched_not_reachable),
        "coverage": round(100.0 * len(fetched) / len(reachable), 2) if reachable else 0.0,
        "alerts": len(alerts),
        "quarantined": summary.get("quarantined", "?"),
        "near_groups": len(near),
        "genuine": len(near) - len(bad_groups),
        "exact_groups": len(exact),
        "finish": summary.get("finish_reason", "no summary (timed out?)"),
        "elapsed_s": summary.get("elapsed_secs"),
    }
    with open(out, "w") as f:
        json.dump({"row": row, "alerts": alerts, "bad_groups": bad_groups,
                   "not_fetched": not_fetched, "fetched_not_reachable": fetched_not_reachable}, f)

    print(f"== {name}: {r['index']}  ({row['finish']}, {row['elapsed_s']} s)")
    print(f"   reachable {row['reachable']}  fetched {row['fetched']} ({row['coverage']} %)"
          f"  fetched-not-reachable {row['fetched_not_reachable']}  alerts {row['alerts']}"
          f"  quarantined {row['quarantined']}  near-dup groups {row['near_groups']}"
          f" (genuine {row['genuine']})  exact-dup groups {row['exact_groups']}")
    for a in alerts:
        print(f"   alert #{a.get('id')} {a.get('kind')}: evidence {a.get('evidence')}, parked {a.get('parked')},"
              f" rule {a.get('suggested_rule')}  {a.get('impact') or ''}")
        for s in a.get("samples", [])[:3]:
            print(f"      e.g. {s}")
    if not_fetched:
        # Where the crawl could have found the pages it never saw: the links
        # of the pages it fetched, the first MAX_LINKS_PER_PAGE of each
        # (the crawler's cap) and the rest.
        within, past = set(), set()
        for k in fetched:
            links = page_links(reachable[k]["file"], reachable[k]["url"])
            for i, (link, nofollow) in enumerate(links):
                if not nofollow:
                    (within if i < MAX_LINKS_PER_PAGE else past).add(url_key(link))
        why = {}
        for k in not_fetched:
            fate = fates.get(k)
            if fate:
                label = "/".join(str(x) for x in fate if x)
            elif k in within:
                label = "never seen, linked from a fetched page (parked)"
            elif k in past:
                label = f"never seen, linked only past a fetched page's first {MAX_LINKS_PER_PAGE} links"
            else:
                label = "never seen, linked only from pages not fetched"
            if "?" in k:
                label += ", with a query"
            why[label] = why.get(label, 0) + 1
        print(f"   {len(not_fetched)} reachable page(s) not fetched: "
              + "; ".join(f"{n} {label}" for label, n in sorted(why.items(), key=lambda x: -x[1])))
        print("   e.g.:")
        for k in not_fetched[:8]:
            fate = fates.get(k)
            print(f"      {reachable[k]['url']}  depth {reachable[k]['depth']}  "
                  f"crawl: {fate if fate else 'never seen'}")
    if fetched_not_reachable:
        print("   fetched but not reachable by the parser, e.g.: " + ", ".join(fetched_not_reachable[:4]))
    if bad_groups:
        print(f"   {len(bad_groups)} near-duplicate group(s) not genuine (min Jaccard of word 3-grams vs the first member):")
        for b in sorted(bad_groups, key=lambda b: -b["size"])[:12]:
            print(f"      group {b['group']}: {b['size']} pages, {b['below']} below {GENUINE_JACCARD},"
                  f" min {b['min_jaccard']} ({b['first']} vs {b['worst']})")


def table(files):
    cols = [("site", 26), ("reachable", 9), ("fetched", 8), ("cov %", 7), ("extra", 6),
            ("alerts", 6), ("quarant.", 8), ("near grp", 8), ("genuine", 7)]
    print(" ".join(f"{c:>{w}}" if i else f"{c:<{w}}" for i, (c, w) in enumerate(cols)))
    for f in files:
        with open(f) as fh:
            row = json.load(fh)["row"]
        vals = [row["site"], row["reachable"], row["fetched"], row["coverage"],
                row["fetched_not_reachable"], row["alerts"], row["quarantined"],
                row["near_groups"], row["genuine"]]
        print(" ".join(f"{str(v):>{w}}" if i else f"{str(v):<{w}}"
                       for i, (v, (_, w)) in enumerate(zip(vals, cols))))
    print("extra = HTML pages of the site fetched that the parser did not reach;"
          " genuine = near-duplicate groups whose members all share >= 50 % of"
          " their word 3-grams with the group's first page")


def main(argv):
    if len(argv) >= 2 and argv[1] == "reach" and len(argv) == 6:
        reach(*argv[2:])
    elif len(argv) >= 2 and argv[1] == "report" and len(argv) == 10:
        report(*argv[2:])
    elif len(argv) >= 3 and argv[1] == "table":
        table(argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
