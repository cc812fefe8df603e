//! Architecture rules, checked by reading the source tree:
//!
//! - the engine uses no terminal or command-line crate (the TUI, the headless
//!   printer and the CLI drive it, never the other way round);
//! - the top-level modules of `src/engine` import each other without a cycle,
//!   and so do those of `src/tui`, `src/cli` and `src/cluster`;
//! - only the engine root (`src/engine/mod.rs`) imports `engine::coordinator`;
//! - the control socket (`src/control`) uses no terminal or CLI crate either;
//! - the engine never refers to `crate::control`, which sits above it.
//!
//! A module's references are the `crate::…`, `super::…` and `self::…` paths in
//! its files (in `use` items, `use` groups and code alike, comments and string
//! literals excluded). Files are found the way rustc finds them, from the
//! `mod` declarations (including `#[path]` ones), so `src/tui/keys_tests.rs`
//! counts as part of `keys`, where `#[path]` puts it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::Path;

/// Crates the engine must not use, with why.
const ENGINE_FORBIDDEN_CRATES: [(&str, &str); 4] = [
    ("ratatui", "a terminal UI crate"),
    ("crossterm", "a terminal crate"),
    ("tui_input", "a terminal UI crate"),
    ("clap", "the CLI's argument parser"),
];

/// The module the engine root alone may import.
const COORDINATOR: &str = "coordinator";

// ---------------------------------------------------------------------------
// The rules, on the real tree.

#[test]
fn engine_uses_no_terminal_or_cli_crate() {
    let tree = scan_real_tree("engine");
    let found = tree.crate_uses(&ENGINE_FORBIDDEN_CRATES.map(|(name, _)| name));
    if !found.is_empty() {
        let mut message = String::from(
            "src/engine must not use terminal or CLI crates: the front ends drive the \
             engine through EngineHandle and map their own flags onto its settings.\n",
        );
        for (name, place) in &found {
            let why = ENGINE_FORBIDDEN_CRATES
                .iter()
                .find(|(n, _)| n == name)
                .map_or("", |(_, why)| why);
            let _ = writeln!(message, "  {place}: uses `{name}` ({why})");
        }
        panic!("{message}");
    }
}

/// The control socket's protocol is reused by other front ends and by
/// engines on other machines: it stays free of terminal and CLI crates too.
#[test]
fn control_uses_no_terminal_or_cli_crate() {
    let tree = scan_real_tree("control");
    let found = tree.crate_uses(&ENGINE_FORBIDDEN_CRATES.map(|(name, _)| name));
    assert!(
        found.is_empty(),
        "src/control must not use terminal or CLI crates: {found:?}"
    );
    assert_no_cycle(&tree);
}

/// `src/control` imports the engine; the engine serves its handle and its
/// reads without knowing of the socket, so the two never form a cycle.
#[test]
fn engine_does_not_reference_the_control_socket() {
    let found = scan_real_tree("engine").references_to("control");
    assert!(
        found.is_empty(),
        "src/engine must not refer to crate::control, which imports the engine: \
         move the client side up into src/control, or what both need down into \
         the engine.\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn engine_modules_have_no_import_cycle() {
    assert_no_cycle(&scan_real_tree("engine"));
}

#[test]
fn tui_modules_have_no_import_cycle() {
    assert_no_cycle(&scan_real_tree("tui"));
}

#[test]
fn cli_and_cluster_modules_have_no_import_cycle() {
    assert_no_cycle(&scan_real_tree("cli"));
    assert_no_cycle(&scan_real_tree("cluster"));
}

#[test]
fn only_the_engine_root_imports_the_coordinator() {
    let tree = scan_real_tree("engine");
    if let Err(message) = tree.check_only_root_imports(COORDINATOR) {
        panic!("{message}");
    }
}

fn assert_no_cycle(tree: &Tree) {
    let report = tree.cycle_report();
    if !report.is_empty() {
        panic!("{report}");
    }
}

/// Scans `src/<root>`, checking that the scan saw a real tree, so that the
/// rules above cannot pass because nothing was found.
fn scan_real_tree(root: &str) -> Tree {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_rs_files(&src, &src.join(root), &mut files);
    let tree = Tree::scan(root, &files);
    let (min_modules, min_edges) = match root {
        "engine" => (20, 20),
        "control" => (6, 8),
        "cli" => (4, 4),
        _ => (8, 8),
    };
    assert!(
        tree.modules.len() >= min_modules && tree.edge_count() >= min_edges,
        "the scan of src/{root} found only {} top-level modules and {} edges; \
         the scanner no longer understands the tree",
        tree.modules.len(),
        tree.edge_count()
    );
    let unreached: Vec<_> = files
        .keys()
        .filter(|file| !tree.files.contains_key(*file))
        .collect();
    assert!(
        unreached.is_empty(),
        "no `mod` declaration reaches these files, so rustc does not compile them \
         and this scan cannot place them (remove them or declare them): {unreached:?}"
    );
    tree
}

/// Every `.rs` file under `dir`, keyed by its path relative to `src` with `/`.
fn read_rs_files(src: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            read_rs_files(src, &path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let key = path
                .strip_prefix(src)
                .expect("under src")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.insert(key, text);
        }
    }
}

// ---------------------------------------------------------------------------
// Lexer: just enough Rust to drop comments and literals and keep paths.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// A string literal's raw text (needed for `#[path = "…"]`).
    Str(String),
    /// `::`
    PathSep,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn tokenize(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let start_line = line;
            let (text, next) = quoted_string(&chars, i + 1, &mut line);
            tokens.push(Token {
                tok: Tok::Str(text),
                line: start_line,
            });
            i = next;
        } else if c == '\'' {
            i = char_or_lifetime(&chars, i);
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_continue(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let start_line = line;
            let hashes_then_quote = {
                let mut j = i;
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            };
            if matches!(word.as_str(), "r" | "br" | "cr") && hashes_then_quote {
                // Raw strings: r"…", r#"…"#, br"…", cr"…".
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1; // the opening quote
                let body_start = i;
                while i < chars.len()
                    && !(chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#'))
                {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
                let text: String = chars[body_start..i.min(chars.len())].iter().collect();
                i += 1 + hashes;
                tokens.push(Token {
                    tok: Tok::Str(text),
                    line: start_line,
                });
            } else if word == "r" && at(i) == '#' && is_ident_start(at(i + 1)) {
                // Raw identifiers keep their `r#`, so `r#mod` is no keyword.
                let name_start = i + 1;
                i += 1;
                while i < chars.len() && is_ident_continue(chars[i]) {
                    i += 1;
                }
                let name: String = chars[name_start..i].iter().collect();
                tokens.push(Token {
                    tok: Tok::Ident(format!("r#{name}")),
                    line,
                });
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                let (text, next) = quoted_string(&chars, i + 1, &mut line);
                tokens.push(Token {
                    tok: Tok::Str(text),
                    line: start_line,
                });
                i = next;
            } else if word == "b" && at(i) == '\'' {
                i = char_or_lifetime(&chars, i);
            } else {
                tokens.push(Token {
                    tok: Tok::Ident(word),
                    line,
                });
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && is_ident_continue(chars[i]) {
                i += 1;
            }
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            tokens.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        }
    }
    tokens
}

/// Reads a `"…"` body starting after the opening quote; returns the raw text
/// and the index after the closing quote.
fn quoted_string(chars: &[char], mut i: usize, line: &mut usize) -> (String, usize) {
    let start = i;
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\' {
            i += 1;
        }
        if i < chars.len() && chars[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    let text = chars[start..i.min(chars.len())].iter().collect();
    (text, i + 1)
}

/// Skips a char literal (`'x'`, `'\n'`, `'\u{1F600}'`, `'{'`) or a lifetime
/// or label (`'a`) starting at the quote; returns the index after it.
fn char_or_lifetime(chars: &[char], quote: usize) -> usize {
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let i = quote + 1;
    if at(i) == '\\' {
        let mut j = i + 2; // the escaped char may itself be a quote
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        j + 1
    } else if at(i + 1) == '\'' {
        i + 2
    } else {
        let mut j = i;
        while j < chars.len() && is_ident_continue(chars[j]) {
            j += 1;
        }
        j
    }
}

// ---------------------------------------------------------------------------
// One file: its `mod` declarations and the module paths it refers to.

/// `mod name;` found in a file, inside `inline` nested `mod x { … }` blocks.
#[derive(Debug)]
struct ModDecl {
    name: String,
    inline: Vec<String>,
    path_attr: Option<String>,
}

/// A path in the source, resolved to an absolute module path (no `crate`).
#[derive(Debug, Clone)]
struct Reference {
    /// The module the path is written in (file module plus inline modules).
    from: Vec<String>,
    target: Vec<String>,
    line: usize,
    /// The path as written, for messages.
    text: String,
}

#[derive(Debug, Default)]
struct FileScan {
    decls: Vec<ModDecl>,
    references: Vec<Reference>,
    /// Identifiers and their lines, for the crate-use check.
    idents: Vec<(String, usize)>,
}

fn ident(tokens: &[Token], i: usize) -> Option<&str> {
    match tokens.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(name)) => Some(name),
        _ => None,
    }
}

fn is(tokens: &[Token], i: usize, tok: &Tok) -> bool {
    tokens.get(i).is_some_and(|t| &t.tok == tok)
}

fn scan_file(src: &str, module: &[String]) -> FileScan {
    let tokens = tokenize(src);
    let mut scan = FileScan::default();
    // Inline `mod x { … }` blocks open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let here = |inline: &[(String, usize)]| {
            let mut path = module.to_vec();
            path.extend(inline.iter().map(|(name, _)| name.clone()));
            path
        };
        match &tokens[i].tok {
            Tok::Punct('{') => {
                depth += 1;
                path_attr = None;
            }
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
                path_attr = None;
            }
            Tok::Punct(';') => path_attr = None,
            Tok::Punct('#') => {
                // #[path = "…"] (or #![…]) before a `mod` declaration.
                let open = if is(&tokens, i + 1, &Tok::Punct('!')) {
                    i + 2
                } else {
                    i + 1
                };
                if is(&tokens, open, &Tok::Punct('['))
                    && ident(&tokens, open + 1) == Some("path")
                    && is(&tokens, open + 2, &Tok::Punct('='))
                {
                    if let Some(Tok::Str(path)) = tokens.get(open + 3).map(|t| &t.tok) {
                        path_attr = Some(path.clone());
                    }
                }
            }
            Tok::Ident(word) => {
                scan.idents.push((word.clone(), tokens[i].line));
                let after_sep = i > 0 && is(&tokens, i - 1, &Tok::PathSep);
                let dollar_crate = word == "crate" && i > 0 && is(&tokens, i - 1, &Tok::Punct('$'));
                if word == "mod" {
                    if let Some(name) = ident(&tokens, i + 1) {
                        if is(&tokens, i + 2, &Tok::Punct(';')) {
                            scan.decls.push(ModDecl {
                                name: name.to_string(),
                                inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                                path_attr: path_attr.take(),
                            });
                        } else if is(&tokens, i + 2, &Tok::Punct('{')) {
                            inline.push((name.to_string(), depth + 1));
                        }
                    }
                } else if matches!(word.as_str(), "crate" | "super" | "self")
                    && (!after_sep || dollar_crate)
                    && is(&tokens, i + 1, &Tok::PathSep)
                {
                    let from = here(&inline);
                    let mut leaves = Vec::new();
                    let next = parse_path_tree(&tokens, i, Vec::new(), &mut leaves);
                    for (segments, line) in leaves {
                        if let Some(target) = resolve(&from, &segments) {
                            scan.references.push(Reference {
                                from: from.clone(),
                                target,
                                line,
                                text: segments.join("::"),
                            });
                        }
                    }
                    // Identifiers inside the path still count for the crate check.
                    for token in &tokens[i + 1..next] {
                        if let Tok::Ident(name) = &token.tok {
                            scan.idents.push((name.clone(), token.line));
                        }
                    }
                    i = next;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// Parses a path (with `use` groups) starting at `i`, pushing every leaf as
/// its full segment list; returns the index after the path.
fn parse_path_tree(
    tokens: &[Token],
    mut i: usize,
    mut segments: Vec<String>,
    leaves: &mut Vec<(Vec<String>, usize)>,
) -> usize {
    let line = tokens.get(i).map_or(0, |t| t.line);
    while let Some(name) = ident(tokens, i) {
        segments.push(name.to_string());
        i += 1;
        if !is(tokens, i, &Tok::PathSep) {
            break;
        }
        i += 1;
        if is(tokens, i, &Tok::Punct('{')) {
            i += 1;
            while i < tokens.len() && !is(tokens, i, &Tok::Punct('}')) {
                let before = i;
                i = parse_path_tree(tokens, i, segments.clone(), leaves);
                if is(tokens, i, &Tok::Punct(',')) {
                    i += 1;
                } else if i == before {
                    i += 1; // not a path: step over it
                }
            }
            return i + 1;
        }
        if is(tokens, i, &Tok::Punct('*')) {
            i += 1;
            break;
        }
    }
    if ident(tokens, i) == Some("as") && ident(tokens, i + 1).is_some() {
        i += 2;
    }
    if !segments.is_empty() {
        leaves.push((segments, line));
    }
    i
}

/// Resolves `segments` written in module `from` to an absolute module path
/// (without `crate`); `None` for paths that do not start at `crate`,
/// `super` or `self` (extern crates, locals).
fn resolve(from: &[String], segments: &[String]) -> Option<Vec<String>> {
    let (mut path, rest) = match segments.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &segments[1..]),
        Some("super" | "self") => (from.to_vec(), segments),
        _ => return None,
    };
    for segment in rest {
        match segment.as_str() {
            "self" => {}
            "super" => {
                path.pop();
            }
            name => path.push(name.to_string()),
        }
    }
    Some(path)
}

// ---------------------------------------------------------------------------
// A subtree (`src/engine`, `src/tui`): its files, top-level modules and edges.

/// Where one reference from a module to another is written.
#[derive(Debug, Clone)]
struct Evidence {
    file: String,
    line: usize,
    text: String,
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "src/{}:{} ({})", self.file, self.line, self.text)
    }
}

#[derive(Debug)]
struct Tree {
    root: String,
    /// File (relative to `src`) → its module path, e.g. `["engine", "frontier", "ops"]`.
    files: BTreeMap<String, Vec<String>>,
    /// The root's child modules.
    modules: BTreeSet<String>,
    /// Module → module it refers to → the first place it does.
    edges: BTreeMap<String, BTreeMap<String, Evidence>>,
    /// References written in the root module itself, by target module.
    root_edges: BTreeMap<String, Evidence>,
    /// Identifiers with their places, for the crate-use check.
    idents: Vec<(String, String, usize)>,
    /// References to modules outside the root, with where they are written.
    outside: Vec<(Vec<String>, Evidence)>,
}

impl Tree {
    /// Scans the module tree rooted at `<root>/mod.rs` among `files` (paths
    /// relative to `src`, `/`-separated), following `mod` declarations.
    fn scan(root: &str, files: &BTreeMap<String, String>) -> Tree {
        let mut tree = Tree {
            root: root.to_string(),
            files: BTreeMap::new(),
            modules: BTreeSet::new(),
            edges: BTreeMap::new(),
            root_edges: BTreeMap::new(),
            idents: Vec::new(),
            outside: Vec::new(),
        };
        let mut references = Vec::new();
        let mut queue = VecDeque::from([(format!("{root}/mod.rs"), vec![root.to_string()])]);
        while let Some((file, module)) = queue.pop_front() {
            let Some(text) = files.get(&file) else {
                continue;
            };
            if tree.files.contains_key(&file) {
                continue;
            }
            let scan = scan_file(text, &module);
            for decl in &scan.decls {
                let mut child = module.clone();
                child.extend(decl.inline.iter().cloned());
                child.push(decl.name.clone());
                if let Some(found) = decl_file(&file, decl, files) {
                    queue.push_back((found, child));
                }
            }
            // Inline modules of the root are top-level modules too.
            for reference in &scan.references {
                if reference.from.len() >= 2 {
                    tree.modules.insert(reference.from[1].clone());
                }
            }
            if module.len() >= 2 {
                tree.modules.insert(module[1].clone());
            } else {
                for decl in &scan.decls {
                    if decl.inline.is_empty() {
                        tree.modules.insert(decl.name.clone());
                    }
                }
            }
            for (name, line) in scan.idents {
                tree.idents.push((name, file.clone(), line));
            }
            references.extend(scan.references.into_iter().map(|r| (file.clone(), r)));
            tree.files.insert(file, module);
        }
        for (file, reference) in references {
            let evidence = Evidence {
                file,
                line: reference.line,
                text: reference.text,
            };
            if reference.target.first() != Some(&tree.root) {
                tree.outside.push((reference.target, evidence));
                continue;
            }
            let Some(target) = reference.target.get(1) else {
                continue;
            };
            if !tree.modules.contains(target) {
                continue;
            }
            match reference.from.get(1) {
                None => {
                    tree.root_edges.entry(target.clone()).or_insert(evidence);
                }
                Some(source) if source != target => {
                    tree.edges
                        .entry(source.clone())
                        .or_default()
                        .entry(target.clone())
                        .or_insert(evidence);
                }
                Some(_) => {}
            }
        }
        tree
    }

    fn edge_count(&self) -> usize {
        self.edges.values().map(BTreeMap::len).sum()
    }

    /// Places where one of `crates` is named, as `(crate, "src/file:line")`.
    fn crate_uses(&self, crates: &[&str]) -> Vec<(String, String)> {
        self.idents
            .iter()
            .filter(|(name, _, _)| crates.contains(&name.as_str()))
            .map(|(name, file, line)| (name.clone(), format!("src/{file}:{line}")))
            .collect()
    }

    /// Places where the tree refers to the crate's top-level module `module`.
    fn references_to(&self, module: &str) -> Vec<String> {
        self.outside
            .iter()
            .filter(|(target, _)| target.first().is_some_and(|first| first == module))
            .map(|(_, evidence)| evidence.to_string())
            .collect()
    }

    /// Fails when a top-level module other than the root refers to `module`;
    /// passes when there is no such module.
    fn check_only_root_imports(&self, module: &str) -> Result<(), String> {
        let offenders: Vec<_> = self
            .edges
            .iter()
            .filter_map(|(source, targets)| targets.get(module).map(|e| (source, e)))
            .collect();
        if offenders.is_empty() {
            return Ok(());
        }
        let mut message = format!(
            "only src/{root}/mod.rs may import {root}::{module}; other modules get what \
             they need from it passed in, or from a module below it.\n",
            root = self.root
        );
        for (source, evidence) in offenders {
            let _ = writeln!(message, "  {source} -> {module}: {evidence}");
        }
        Err(message)
    }

    /// Groups of modules that import each other (strongly connected components
    /// with more than one module), each sorted, the groups in order.
    fn cycle_groups(&self) -> Vec<Vec<String>> {
        let nodes: Vec<&String> = self.modules.iter().collect();
        let index_of: BTreeMap<&String, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let successors: Vec<Vec<usize>> = nodes
            .iter()
            .map(|n| {
                self.edges
                    .get(*n)
                    .map(|targets| targets.keys().map(|t| index_of[t]).collect())
                    .unwrap_or_default()
            })
            .collect();
        let mut groups: Vec<Vec<String>> = tarjan(&successors)
            .into_iter()
            .filter(|group| group.len() > 1)
            .map(|group| {
                let mut names: Vec<String> = group.iter().map(|&i| nodes[i].clone()).collect();
                names.sort();
                names
            })
            .collect();
        groups.sort();
        groups
    }

    /// The shortest cycle through `start` inside `group`, as
    /// `[start, …, start]` (breadth-first search back to `start`).
    fn shortest_cycle(&self, start: &str, group: &[String]) -> Vec<String> {
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            for target in self.edges.get(node).into_iter().flat_map(|t| t.keys()) {
                if !group.contains(target) {
                    continue;
                }
                if target == start {
                    let mut chain = vec![start.to_string()];
                    let mut at = node;
                    while at != start {
                        chain.push(at.to_string());
                        at = previous[at];
                    }
                    chain.push(start.to_string());
                    chain.reverse();
                    return chain;
                }
                if target != start && !previous.contains_key(target.as_str()) {
                    previous.insert(target, node);
                    queue.push_back(target);
                }
            }
        }
        Vec::new()
    }

    /// Every cycle group, its distinct shortest cycles (one through each
    /// member) and the edges inside it with where they are written; empty
    /// when there is no cycle.
    fn cycle_report(&self) -> String {
        let groups = self.cycle_groups();
        if groups.is_empty() {
            return String::new();
        }
        let mut report = format!(
            "the top-level modules of src/{} import each other in cycles; \
             break each cycle by moving what both sides need into a module \
             below them or by passing it in.\n",
            self.root
        );
        for group in &groups {
            let _ = writeln!(report, "\ncycle group: {}", group.join(", "));
            let mut seen = BTreeSet::new();
            for member in group {
                let cycle = self.shortest_cycle(member, group);
                // One rotation per cycle: start it at its smallest module.
                let body = &cycle[..cycle.len() - 1];
                let smallest = (0..body.len()).min_by_key(|&i| &body[i]).unwrap_or(0);
                let mut canonical: Vec<String> = body[smallest..]
                    .iter()
                    .chain(&body[..smallest])
                    .cloned()
                    .collect();
                canonical.push(canonical[0].clone());
                let chain = canonical.join(" -> ");
                if seen.insert(chain.clone()) {
                    let _ = writeln!(report, "  cycle: {chain}");
                }
            }
            let _ = writeln!(report, "  edges inside the group:");
            for source in group {
                for (target, evidence) in self.edges.get(source).into_iter().flatten() {
                    if group.contains(target) {
                        let _ = writeln!(report, "    {source} -> {target}: {evidence}");
                    }
                }
            }
        }
        report
    }
}

/// Finds `file`'s `mod` declaration's file among `files`, as rustc would.
fn decl_file(file: &str, decl: &ModDecl, files: &BTreeMap<String, String>) -> Option<String> {
    let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
    // A `mod.rs` file's children live beside it; `x.rs`'s live in `x/`.
    let children = if name == "mod.rs" {
        dir.to_string()
    } else {
        format!("{dir}/{}", name.trim_end_matches(".rs"))
    };
    let candidates = match &decl.path_attr {
        // Outside inline modules, #[path] is relative to the file's directory.
        Some(path) if decl.inline.is_empty() => vec![format!("{dir}/{path}")],
        Some(path) => vec![format!("{children}/{}/{path}", decl.inline.join("/"))],
        None => {
            let mut base = children;
            for inline in &decl.inline {
                base = format!("{base}/{inline}");
            }
            vec![
                format!("{base}/{}.rs", decl.name),
                format!("{base}/{}/mod.rs", decl.name),
            ]
        }
    };
    candidates
        .into_iter()
        .map(|candidate| normalize_path(&candidate))
        .find(|candidate| files.contains_key(candidate))
}

/// Resolves `.` and `..` segments.
fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// Tarjan's strongly connected components over adjacency lists.
fn tarjan(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        successors: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.successors[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let n = successors.len();
    let mut state = State {
        successors,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.components
}

// ---------------------------------------------------------------------------
// The scanner itself, on small trees in memory.

fn tree_of(root: &str, files: &[(&str, &str)]) -> Tree {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .collect();
    Tree::scan(root, &files)
}

fn edges_of(tree: &Tree) -> Vec<String> {
    tree.edges
        .iter()
        .flat_map(|(source, targets)| targets.keys().map(move |t| format!("{source}->{t}")))
        .collect()
}

#[test]
fn scanner_finds_a_cycle_and_names_it() {
    let tree = tree_of(
        "engine",
        &[
            ("engine/mod.rs", "mod a;\nmod b;\npub mod c;\nmod d;\n"),
            ("engine/a.rs", "use super::b::Thing;\n"),
            ("engine/b.rs", "fn f() { crate::engine::c::g(); }\n"),
            ("engine/c.rs", "use super::a;\nuse super::d;\n"),
            ("engine/d.rs", "pub fn h() {}\n"),
        ],
    );
    assert_eq!(edges_of(&tree), ["a->b", "b->c", "c->a", "c->d"]);
    assert_eq!(tree.cycle_groups(), [["a", "b", "c"]]);
    let report = tree.cycle_report();
    assert!(report.contains("cycle: a -> b -> c -> a"), "{report}");
    assert!(
        report.contains("b -> c: src/engine/b.rs:1 (crate::engine::c::g)"),
        "{report}"
    );
    assert!(!report.contains("-> d"), "{report}");
}

#[test]
fn scanner_reports_every_short_cycle_of_a_group() {
    let tree = tree_of(
        "tui",
        &[
            ("tui/mod.rs", "mod a; mod b; mod c;"),
            ("tui/a.rs", "use super::{b, c};"),
            ("tui/b.rs", "use super::a;"),
            ("tui/c.rs", "use crate::tui::a;"),
        ],
    );
    let report = tree.cycle_report();
    assert!(report.contains("cycle group: a, b, c"), "{report}");
    assert!(report.contains("cycle: a -> b -> a"), "{report}");
    assert!(report.contains("cycle: a -> c -> a"), "{report}");
}

#[test]
fn scanner_ignores_comments_and_strings() {
    let tree = tree_of(
        "engine",
        &[
            ("engine/mod.rs", "mod a;\nmod x;\nmod y;\nmod z;\nmod w;\n"),
            (
                "engine/a.rs",
                "// use super::x;\n\
                 /// See [`super::y`].\n\
                 /* use super::z; /* nested */ use super::z; */\n\
                 const S: &str = \"super::w::f\";\n\
                 const R: &str = r#\"crate::engine::w\"#;\n\
                 fn f() {}\n",
            ),
        ],
    );
    assert_eq!(edges_of(&tree), Vec::<String>::new());
}

#[test]
fn scanner_reads_use_groups_over_lines() {
    let tree = tree_of(
        "engine",
        &[
            ("engine/mod.rs", "mod a; mod b; mod c; mod d; mod e; mod x;"),
            ("engine/x.rs", "use super::{a, b::c};\n"),
            (
                "engine/e.rs",
                "use crate::engine::{\n    c::{One, Two as Deux},\n    self,\n    d::*,\n};\n",
            ),
        ],
    );
    assert_eq!(edges_of(&tree), ["e->c", "e->d", "x->a", "x->b"]);
}

#[test]
fn scanner_resolves_super_from_nested_files_and_inline_modules() {
    let tree = tree_of(
        "engine",
        &[
            (
                "engine/mod.rs",
                "pub mod frontier;\nmod politeness;\nmod store;\nmod ops;",
            ),
            ("engine/frontier/mod.rs", "mod ops;\nmod queue;\n"),
            (
                "engine/frontier/ops.rs",
                // super:: is frontier; super::super:: is the engine.
                "use super::queue::Q;\nuse super::super::politeness::Gate;\n\
                 fn f() { let _ = super::ops::g; }\n",
            ),
            ("engine/frontier/queue.rs", "pub struct Q;"),
            (
                "engine/politeness.rs",
                "fn f<'a>(s: &'a str) -> char { '}' }\n\
                 #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::store;\n    \
                 fn g() -> char { '{' }\n}\n\
                 use super::ops;\n",
            ),
            ("engine/store.rs", ""),
            ("engine/ops.rs", ""),
        ],
    );
    assert_eq!(
        edges_of(&tree),
        [
            "frontier->politeness",
            "politeness->ops",
            "politeness->store"
        ]
    );
}

#[test]
fn scanner_follows_path_attributes() {
    let tree = tree_of(
        "tui",
        &[
            ("tui/mod.rs", "mod keys;\nmod model;\n"),
            (
                "tui/keys.rs",
                "#[cfg(test)]\n#[path = \"keys_tests.rs\"]\nmod tests;\n",
            ),
            (
                "tui/keys_tests.rs",
                "use super::*;\nuse super::super::model::M;\n",
            ),
            ("tui/model.rs", "pub struct M;"),
        ],
    );
    assert_eq!(tree.files["tui/keys_tests.rs"], ["tui", "keys", "tests"]);
    assert_eq!(
        tree.modules,
        BTreeSet::from(["keys".into(), "model".into()])
    );
    assert_eq!(edges_of(&tree), ["keys->model"]);
}

#[test]
fn scanner_checks_who_imports_the_coordinator() {
    let without = tree_of(
        "engine",
        &[
            ("engine/mod.rs", "mod a;\n"),
            ("engine/a.rs", "use super::b;\n"),
        ],
    );
    assert_eq!(without.check_only_root_imports(COORDINATOR), Ok(()));
    let with = tree_of(
        "engine",
        &[
            ("engine/mod.rs", "mod a;\nmod coordinator;\nuse coordinator::build;\nfn f() { self::coordinator::go(); }\n"),
            ("engine/a.rs", "use super::coordinator::Coordinator;\n"),
            ("engine/coordinator/mod.rs", "mod boot;\nuse crate::engine::coordinator::boot;\n"),
            ("engine/coordinator/boot.rs", "use super::super::a;\n"),
        ],
    );
    assert!(with.root_edges.contains_key("coordinator"));
    let message = with.check_only_root_imports(COORDINATOR).unwrap_err();
    assert!(
        message.contains("a -> coordinator: src/engine/a.rs:1 (super::coordinator::Coordinator)"),
        "{message}"
    );
    assert_eq!(message.matches(" -> coordinator").count(), 1, "{message}");
}

#[test]
fn scanner_finds_references_to_a_module_outside_the_root() {
    let tree = tree_of(
        "engine",
        &[
            ("engine/mod.rs", "mod a;\nmod b;\npub mod control;\n"),
            (
                "engine/a.rs",
                // super::control is the engine's own module, not the crate's.
                "use crate::control::client::socket_path;\nuse super::control::Command;\n\
                 // crate::control in a comment\n",
            ),
            (
                "engine/b.rs",
                "fn f() { crate::control::read_client::read(); }\n\
                 fn g() { let _ = super::super::control::X; }\n",
            ),
            ("engine/control.rs", "pub struct Command;\n"),
        ],
    );
    assert_eq!(
        tree.references_to("control"),
        [
            "src/engine/a.rs:1 (crate::control::client::socket_path)",
            "src/engine/b.rs:1 (crate::control::read_client::read)",
            "src/engine/b.rs:2 (super::super::control::X)",
        ]
    );
    assert_eq!(tree.references_to("tui"), Vec::<String>::new());
}

#[test]
fn scanner_finds_forbidden_crates_but_not_in_comments() {
    let tree = tree_of(
        "engine",
        &[
            ("engine/mod.rs", "mod a;\n// ratatui is not used here\n"),
            (
                "engine/a.rs",
                "use ratatui::text::Line;\nfn f() { let _ = ::crossterm::event::read(); }\n\
                 const DOC: &str = \"tui_input\";\n",
            ),
        ],
    );
    let found = tree.crate_uses(&ENGINE_FORBIDDEN_CRATES.map(|(name, _)| name));
    assert_eq!(
        found,
        [
            ("ratatui".to_string(), "src/engine/a.rs:1".to_string()),
            ("crossterm".to_string(), "src/engine/a.rs:2".to_string()),
        ]
    );
}
