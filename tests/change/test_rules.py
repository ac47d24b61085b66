"""Tests of ocr_hook.change.rules: built-in rule data, brace expansion, layered resolution, rule files.

Everything is real: the shipped config/rules data, JSON and TOML parsing, pathspec matching.
Rule files that a rule.json names are served by a dict-backed ``read_md``, as the caller's
HEAD-confined reader would serve them.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocr_hook.change import rules
from ocr_hook.change.rules import (
    RULE_FILE_MAX_BYTES,
    RuleEntry,
    RuleMatch,
    RuleSource,
    builtin_rules,
    expand_braces,
    group_rule_text,
    parse_rule_json,
    parse_rule_map,
    parse_rule_mapping,
    resolve,
)
from ocr_hook.errors import ConfigError
from tests.support.paths import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

RULES_DIR = ROOT / "config" / "rules"


RULE_FILES = sorted(p.name for p in RULES_DIR.glob("*.md"))
RULE_MAP = json.loads((RULES_DIR / "rule_map.json").read_text(encoding="utf-8"))

REQUIRED_RULES = {  # spec §5: at least these kinds
    "python.md", "javascript.md", "java.md", "kotlin.md", "go.md", "c.md", "cpp.md",
    "csharp.md", "rust.md", "ruby.md", "php.md", "swift.md", "sql.md", "shell.md",
    "dockerfile.md", "terraform.md", "config.md", "github_actions.md", "html.md", "default.md",
}

# Every supported extension, with the rule it must get. "default.md" entries are deliberate:
# languages without a checklist of their own (or ambiguous ones such as .m) get the general one.
EXPECTED_BY_EXT = {
    ".py": "python.md", ".pyi": "python.md", ".ipynb": "python.md",
    ".js": "javascript.md", ".jsx": "javascript.md", ".ts": "javascript.md",
    ".tsx": "javascript.md", ".mjs": "javascript.md", ".cjs": "javascript.md",
    ".mts": "javascript.md", ".cts": "javascript.md", ".vue": "javascript.md",
    ".svelte": "javascript.md", ".astro": "javascript.md",
    ".java": "java.md",
    ".kt": "kotlin.md", ".kts": "kotlin.md",
    ".go": "go.md",
    ".c": "c.md", ".h": "c.md",
    ".cpp": "cpp.md", ".cc": "cpp.md", ".cxx": "cpp.md", ".hpp": "cpp.md", ".hxx": "cpp.md",
    ".cs": "csharp.md",
    ".rs": "rust.md",
    ".rb": "ruby.md", ".rake": "ruby.md", ".gemspec": "ruby.md",
    ".php": "php.md", ".phtml": "php.md",
    ".swift": "swift.md",
    ".sql": "sql.md",
    ".sh": "shell.md", ".bash": "shell.md", ".zsh": "shell.md", ".fish": "shell.md",
    ".dockerfile": "dockerfile.md",
    ".tf": "terraform.md", ".tfvars": "terraform.md", ".hcl": "terraform.md",
    ".bicep": "terraform.md",
    ".yaml": "config.md", ".yml": "config.md", ".json": "config.md", ".json5": "config.md",
    ".toml": "config.md", ".ini": "config.md", ".cfg": "config.md", ".conf": "config.md",
    ".properties": "config.md", ".xml": "config.md", ".env": "config.md",
    ".jsonnet": "config.md", ".libsonnet": "config.md",
    ".html": "html.md", ".htm": "html.md", ".j2": "html.md", ".jinja": "html.md",
    ".jinja2": "html.md", ".njk": "html.md", ".liquid": "html.md", ".hbs": "html.md",
    ".mustache": "html.md", ".ejs": "html.md", ".erb": "html.md", ".haml": "html.md",
    ".slim": "html.md", ".twig": "html.md", ".tpl": "html.md", ".ftl": "html.md",
    ".ftlh": "html.md", ".ftlx": "html.md",
    # deliberately the general checklist
    ".capnp": "default.md", ".thrift": "default.md", ".proto": "default.md",
    ".clj": "default.md", ".cljc": "default.md", ".cljs": "default.md", ".edn": "default.md",
    ".cmake": "default.md", ".css": "default.md", ".less": "default.md", ".sass": "default.md",
    ".scss": "default.md", ".dart": "default.md", ".elm": "default.md", ".erl": "default.md",
    ".hrl": "default.md", ".ets": "default.md", ".ex": "default.md", ".exs": "default.md",
    ".fs": "default.md", ".fsi": "default.md", ".fsx": "default.md", ".gql": "default.md",
    ".graphql": "default.md", ".gradle": "default.md", ".groovy": "default.md",
    ".hs": "default.md", ".lhs": "default.md", ".jl": "default.md", ".lua": "default.md",
    ".m": "default.md", ".mm": "default.md", ".nim": "default.md", ".nimble": "default.md",
    ".nims": "default.md", ".nix": "default.md", ".pl": "default.md", ".pm": "default.md",
    ".po": "default.md", ".pot": "default.md", ".prisma": "default.md", ".ps1": "default.md",
    ".psm1": "default.md", ".r": "default.md", ".rego": "default.md", ".scala": "default.md",
    ".sol": "default.md", ".vy": "default.md", ".sv": "default.md", ".v": "default.md",
    ".vh": "default.md", ".vhd": "default.md", ".vhdl": "default.md", ".vb": "default.md",
    ".zig": "default.md",
}

EXPECTED_BY_NAME = {
    "Dockerfile": "dockerfile.md", "Containerfile": "dockerfile.md",
    "Rakefile": "ruby.md", "Vagrantfile": "ruby.md",
    "Gemfile": "config.md", "Podfile": "config.md", "Brewfile": "config.md",
    # deliberately the general checklist
    "Makefile": "default.md", "GNUmakefile": "default.md", "makefile": "default.md",
    "Jenkinsfile": "default.md", "Procfile": "default.md", "CMakeLists.txt": "default.md",
    "BUILD": "default.md", "BUILD.bazel": "default.md", "WORKSPACE": "default.md",
    "Justfile": "default.md", "justfile": "default.md", "Tiltfile": "default.md",
}

EXPECTED_BY_PREFIX = {
    "Dockerfile.": "dockerfile.md", "Containerfile.": "dockerfile.md", "Makefile.": "default.md",
}

NO_DELETE = "Always filter DELETE."

FALLBACK_EXTENSIONS = [  # used only while config/supported_file_types.json does not exist
    ".py", ".js", ".ts", ".tsx", ".java", ".kt", ".go", ".c", ".h", ".cpp", ".cs", ".rs", ".rb",
    ".php", ".swift", ".sql", ".sh", ".tf", ".yaml", ".yml", ".json", ".toml", ".html", ".vue",
]


def _supported() -> dict[str, list[str]]:
    path = ROOT / "config" / "supported_file_types.json"
    if not path.exists():
        return {"extensions": FALLBACK_EXTENSIONS, "file_names": [], "file_name_prefixes": []}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: list(data.get(k, [])) for k in ("extensions", "file_names", "file_name_prefixes")}


SUPPORTED = _supported()


def _builtin_origin(path: str) -> str:
    return resolve(path, [builtin_rules()]).origin


def _text(name: str) -> str:
    return (RULES_DIR / name).read_text(encoding="utf-8").strip()


def _reader(files: dict[str, str]) -> rules.ReadMd:
    return files.get


def _src(layer: str, *entries: tuple[str, str]) -> RuleSource:
    return RuleSource(layer, tuple(RuleEntry((p,), t) for p, t in entries))


# --- built-in data --------------------------------------------------------------------------


def test_every_rule_file_is_mapped_and_every_mapped_rule_exists() -> None:
    mapped = {item["rule"] for item in RULE_MAP}
    assert sorted(mapped) == RULE_FILES
    assert REQUIRED_RULES <= set(RULE_FILES)


def test_rule_map_ends_with_catch_all_default() -> None:
    assert RULE_MAP[-1] == {"patterns": ["**/*"], "rule": "default.md"}
    assert all(item["patterns"] != ["**/*"] for item in RULE_MAP[:-1])


def test_github_actions_precede_generic_yaml_in_rule_map() -> None:
    order = [item["rule"] for item in RULE_MAP]
    assert order.index("github_actions.md") < order.index("config.md")


@pytest.mark.parametrize("name", sorted(REQUIRED_RULES))
def test_rule_file_has_severities_and_do_not_report_section(name: str) -> None:
    text = _text(name)
    words = len(text.split())
    assert 250 <= words <= 800, words
    for heading in ("### Critical", "### High", "### Medium", "## Do not report"):
        assert heading in text, heading


def test_builtin_rules_loads_the_package_data() -> None:
    source = builtin_rules()
    from_files = parse_rule_map(
        (RULES_DIR / "rule_map.json").read_bytes(),
        lambda name: (RULES_DIR / name).read_text(encoding="utf-8"),
    )
    assert source._replace(entries=tuple(e._replace(regexes=()) for e in source.entries)) == (
        from_files)
    assert [len(e.regexes) for e in source.entries] == [len(e.patterns) for e in from_files.entries]
    assert source.layer == "builtin"
    assert len(source.entries) == len(RULE_MAP)
    assert builtin_rules() is source  # cached


@pytest.mark.parametrize("ext", SUPPORTED["extensions"])
def test_supported_extension_maps_to_its_rule(ext: str) -> None:
    assert ext in EXPECTED_BY_EXT, f"decide which rule {ext} files get (EXPECTED_BY_EXT)"
    assert _builtin_origin(f"src/pkg/file{ext}") == EXPECTED_BY_EXT[ext]
    assert _builtin_origin(f"file{ext}") == EXPECTED_BY_EXT[ext]


@pytest.mark.parametrize("name", SUPPORTED["file_names"])
def test_supported_file_name_maps_to_its_rule(name: str) -> None:
    assert name in EXPECTED_BY_NAME, f"decide which rule {name} gets (EXPECTED_BY_NAME)"
    assert _builtin_origin(f"sub/dir/{name}") == EXPECTED_BY_NAME[name]
    assert _builtin_origin(name) == EXPECTED_BY_NAME[name]


@pytest.mark.parametrize("prefix", SUPPORTED["file_name_prefixes"])
def test_supported_file_name_prefix_maps_to_its_rule(prefix: str) -> None:
    assert prefix in EXPECTED_BY_PREFIX, f"decide which rule {prefix}* gets (EXPECTED_BY_PREFIX)"
    assert _builtin_origin(f"deploy/{prefix}prod") == EXPECTED_BY_PREFIX[prefix]


@pytest.mark.parametrize(
    ("path", "origin"),
    [
        (".github/workflows/ci.yml", "github_actions.md"),
        (".github/workflows/Release.YAML", "github_actions.md"),
        ("actions/setup/action.yml", "github_actions.md"),
        (".github/dependabot.yml", "config.md"),
        ("docs/.github/workflows/ci.yml", "config.md"),  # GitHub reads only the root directory
        ("k8s/deploy.yaml", "config.md"),
        ("docker/Dockerfile", "dockerfile.md"),
        ("Dockerfile.dev", "dockerfile.md"),
        ("build/api.dockerfile", "dockerfile.md"),
        ("Containerfile", "dockerfile.md"),
        ("infra/main.tf.json", "terraform.md"),
        ("resources/views/home.blade.php", "html.md"),
        ("app/templates/page.html.erb", "html.md"),
        ("src/App.TSX", "javascript.md"),
        ("SRC/Main.PY", "python.md"),
        ("include/vec.hh", "cpp.md"),
        ("README.md", "default.md"),
        ("notes.txt", "default.md"),
    ],
)
def test_builtin_rule_for_path(path: str, origin: str) -> None:
    assert _builtin_origin(path) == origin


def test_python_file_gets_python_rules_not_java() -> None:
    match = resolve("app/service.py", [builtin_rules()])
    assert match == RuleMatch("builtin", "**/*.{py,pyi,pyw,ipynb}", _text("python.md"), "python.md")
    assert match.text.startswith("# Review checklist: Python\n")
    assert _text("java.md") not in match.text
    assert "ObjectInputStream" not in match.text


# --- brace expansion ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expanded"),
    [
        ("**/*.py", ["**/*.py"]),
        ("**/*.{js,ts}", ["**/*.js", "**/*.ts"]),
        ("**/*.{js,ts{,x}}", ["**/*.js", "**/*.ts", "**/*.tsx"]),
        ("{a,b}/{c,d}", ["a/c", "a/d", "b/c", "b/d"]),
        ("src/{a{1,2},b}/x", ["src/a1/x", "src/a2/x", "src/b/x"]),
        ("*.{py}", ["*.py"]),
        ("*.{,m}js", ["*.js", "*.mjs"]),
        ("*.{js,js}", ["*.js"]),
        ("x{a,b", ["x{a,b"]),
        ("x}a,b{", ["x}a,b{"]),
        (r"x\{a,b\}", [r"x\{a,b\}"]),
        (r"{a\,b,c}", [r"a\,b", "c"]),
    ],
)
def test_expand_braces(pattern: str, expanded: list[str]) -> None:
    assert expand_braces(pattern) == expanded


def test_expand_braces_refuses_combinatorial_explosion() -> None:
    with pytest.raises(ConfigError, match="expands to more than 1024 globs"):
        expand_braces("{a,b}" * 11)


# --- resolution -----------------------------------------------------------------------------


def test_each_layer_wins_over_the_next() -> None:
    cli = _src("cli", ("**/*.py", "cli rule"))
    repo = _src("repo", ("**/*.py", "repo rule"))
    user = _src("user", ("**/*.py", "user rule"))
    builtin = builtin_rules()
    assert resolve("a.py", [cli, repo, user, builtin]) == RuleMatch("cli", "**/*.py", "cli rule")
    assert resolve("a.py", [repo, user, builtin]) == RuleMatch("repo", "**/*.py", "repo rule")
    assert resolve("a.py", [user, builtin]) == RuleMatch("user", "**/*.py", "user rule")
    assert resolve("a.py", [builtin]).origin == "python.md"


def test_layer_without_a_match_falls_through() -> None:
    cli = _src("cli", ("**/*.go", "go only"))
    repo = _src("repo", ("src/**", "src rule"))
    assert resolve("src/a.py", [cli, repo, builtin_rules()]).text == "src rule"
    assert resolve("lib/a.py", [cli, repo, builtin_rules()]).origin == "python.md"


def test_first_entry_of_a_layer_wins() -> None:
    repo = _src("repo", ("src/**/*.py", "first"), ("**/*.py", "second"))
    assert resolve("src/x/a.py", [repo]) == RuleMatch("repo", "src/**/*.py", "first")
    assert resolve("tools/a.py", [repo]) == RuleMatch("repo", "**/*.py", "second")


def test_user_rule_replaces_builtin_by_default() -> None:
    repo = parse_rule_mapping({"rules": [{"path": "**/*.py", "rule": "Use our ORM."}]}, "repo",
                              _reader({}))
    assert resolve("a.py", [repo, builtin_rules()]) == RuleMatch("repo", "**/*.py", "Use our ORM.")


def test_merge_system_rule_appends_user_rule_to_builtin() -> None:
    repo = parse_rule_mapping(
        {"rules": [{"path": "**/*.py", "rule": "docs/team.md", "merge_system_rule": True}]},
        "repo",
        _reader({"docs/team.md": "Money is Decimal.\n"}),
    )
    match = resolve("pkg/a.py", [repo, builtin_rules()])
    assert match.layer == "repo"
    assert match.pattern == "**/*.py"
    assert match.origin == "python.md + docs/team.md"
    assert match.text == (
        _text("python.md")
        + "\n\n## Additional rules (from the repository)\n\n"
        + "These add to the checklist above and take precedence where they conflict.\n\n"
        + "Money is Decimal."
    )


def test_merge_with_empty_rule_keeps_builtin_text_and_empty_rule_without_merge_is_skipped() -> None:
    user = parse_rule_mapping(
        {"rules": [{"path": "a.py", "rule": ""}, {"path": "b.py", "merge_system_rule": True}]},
        "user",
        _reader({}),
    )
    assert resolve("a.py", [user, builtin_rules()]).layer == "builtin"
    assert resolve("b.py", [user, builtin_rules()]) == RuleMatch(
        "user", "b.py", _text("python.md"), "python.md + inline"
    )


def test_matching_is_case_insensitive_for_pattern_and_path() -> None:
    repo = _src("repo", ("Src/**/*.PY", "upper"))
    assert resolve("src/a/b.py", [repo]).text == "upper"
    assert resolve("SRC/A/B.Py", [repo]).text == "upper"


def test_brace_groups_and_pattern_lists_in_user_rules() -> None:
    repo = parse_rule_mapping(
        {"rules": [{"path": ["web/**/*.{js,ts{,x}}", "*.vue"], "rule": "front end"}]},
        "repo",
        _reader({}),
    )
    assert resolve("web/app/main.tsx", [repo]) == RuleMatch("repo", "web/**/*.{js,ts{,x}}",
                                                            "front end")
    assert resolve("ui/App.vue", [repo]) == RuleMatch("repo", "*.vue", "front end")
    assert resolve("web/app/main.py", [repo]) == RuleMatch("none", "", "", "")


def test_gitignore_negation_inside_one_entry() -> None:
    repo = RuleSource("repo", (RuleEntry(("**/*.py", "!migrations/**"), "app python"),))
    assert resolve("app/models.py", [repo]).pattern == "**/*.py"
    assert resolve("migrations/0001.py", [repo]).layer == "none"


# --- rule.json / TOML parsing ---------------------------------------------------------------


def test_parse_rule_json_reference_format() -> None:
    data = json.dumps({
        "include": ["scripts/**"],
        "exclude": ["**/*.gen.go", "vendor2/**"],
        "rules": [
            {"path": "**/*.go", "rule": "./docs//go-team.md"},
            {"path": ["**/*.sql"], "rule": NO_DELETE, "merge_system_rule": True},
        ],
    }).encode()
    source = parse_rule_json(data, "repo", _reader({"docs/go-team.md": "Go rules\n\n"}))
    assert source == RuleSource(
        "repo",
        (
            RuleEntry(("**/*.go",), "Go rules", False, "docs/go-team.md"),
            RuleEntry(("**/*.sql",), NO_DELETE, True, ""),
        ),
        ("scripts/**",),
        ("**/*.gen.go", "vendor2/**"),
    )


def test_toml_table_gives_the_same_source_as_json() -> None:
    toml_text = """
[rules]
file = "ignored-here.json"
include = ["scripts/**"]
[[rules.rules]]
path = "**/*.go"
rule = "docs/go-team.md"
[[rules.rules]]
path = ["**/*.sql"]
rule = "Always filter DELETE."
merge_system_rule = true
"""
    json_data = json.dumps({
        "include": ["scripts/**"],
        "rules": [
            {"path": "**/*.go", "rule": "docs/go-team.md"},
            {"path": ["**/*.sql"], "rule": NO_DELETE, "merge_system_rule": True},
        ],
    }).encode()
    read = _reader({"docs/go-team.md": "Go rules"})
    from_toml = parse_rule_mapping(tomllib.loads(toml_text)["rules"], "repo", read)
    assert from_toml == parse_rule_json(json_data, "repo", read)


def test_inline_text_that_mentions_a_md_file_is_not_read() -> None:
    calls: list[str] = []

    def read(relpath: str) -> str | None:
        calls.append(relpath)
        return None

    source = parse_rule_mapping({"rules": [{"path": "*", "rule": "Follow team.md"}]}, "repo", read)
    assert source.entries[0].text == "Follow team.md"
    assert calls == []


@pytest.mark.parametrize(
    "ref",
    ["../rules.md", "docs/../../rules.md", "..\\rules.md", "/etc/rules.md", "~/rules.md",
     "C:/rules/x.md", "C:\\rules\\x.md"],
)
def test_rule_file_outside_the_repository_is_rejected(ref: str) -> None:
    read = _reader({"rules.md": "x", "etc/rules.md": "x"})
    with pytest.raises(ConfigError, match=r"rule\.json: rules\[0\]\.rule: rule file"):
        parse_rule_json(json.dumps({"rules": [{"path": "*", "rule": ref}]}).encode(), "repo",
                        read, name=".opencodereview/rule.json")


def test_missing_rule_file_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"rules\[0\]\.rule: rule file 'docs/x\.md' not found"):
        parse_rule_mapping({"rules": [{"path": "*", "rule": "docs/x.md"}]}, "repo", _reader({}))


def test_rule_file_size_cap_is_512_kib() -> None:
    at_cap = "a" * RULE_FILE_MAX_BYTES
    source = parse_rule_mapping({"rules": [{"path": "*", "rule": "big.md"}]}, "user",
                                _reader({"big.md": at_cap}))
    assert len(source.entries[0].text) == 512 * 1024
    with pytest.raises(ConfigError, match=r"over 512 KB \(big\.md\)"):
        parse_rule_mapping({"rules": [{"path": "*", "rule": "big.md"}]}, "user",
                           _reader({"big.md": at_cap + "é"}))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", r"^repo rule file: invalid JSON: "),
        (b"[]", r"^repo rule file: expected a JSON object"),
        (b'{"rule": []}', r"^repo rule file: unknown key 'rule'"),
        (b'{"rules": {}}', r"^repo rule file: rules must be a list"),
        (b'{"rules": [{"rule": "x"}]}', r"rules\[0\]: path is required"),
        (b'{"rules": [{"path": "", "rule": "x"}]}', r"rules\[0\]\.path must be a glob"),
        (b'{"rules": [{"path": "*", "rule": 3}]}', r"rules\[0\]\.rule must be text"),
        (b'{"rules": [{"path": "*", "merge_system_rules": true}]}',
         r"rules\[0\]: unknown key 'merge_system_rules'"),
        (b'{"rules": [{"path": "*", "merge_system_rule": "yes"}]}',
         r"merge_system_rule must be true or false"),
        (b'{"exclude": [1]}', r"exclude must be a glob or a list"),
    ],
)
def test_invalid_rule_json_is_one_line_config_error(data: bytes, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_rule_json(data, "repo", _reader({}))
    assert "\n" not in str(info.value)


def test_schema_and_comment_keys_are_ignored_and_bom_accepted() -> None:
    data = b"\xef\xbb\xbf" + json.dumps({"$schema": "x", "_comment": "y", "rules": []}).encode()
    assert parse_rule_json(data, "cli", _reader({})) == RuleSource("cli", ())


def test_unknown_layer_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown rule layer 'project'"):
        parse_rule_mapping({}, "project", _reader({}))


# --- grouping -------------------------------------------------------------------------------


def test_group_with_one_shared_rule_gets_that_text_alone() -> None:
    assert group_rule_text(["a.py", "pkg/b.py"], [builtin_rules()]) == _text("python.md")


def test_group_with_several_rules_gets_one_block_per_distinct_text() -> None:
    repo = _src("repo", ("**/*.py", "PY"), ("**/*.go", "GO"), ("**/*.pyi", "PY"))
    text = group_rule_text(["a.py", "b.go", "c.py", 'we"ird&.py'], [repo])
    assert text == (
        '<rules for="a.py, c.py, we&quot;ird&amp;.py">\nPY\n</rules>\n\n'
        '<rules for="b.go">\nGO\n</rules>'
    )


def test_group_of_python_file_has_no_java_rules() -> None:
    text = group_rule_text(["service.py"], [builtin_rules()])
    assert "Review checklist: Python" in text
    assert "Review checklist: Java" not in text


def test_group_without_rules_is_empty() -> None:
    assert group_rule_text([], [builtin_rules()]) == ""
    assert group_rule_text(["a.py"], []) == ""
    assert group_rule_text(["a.py", "b.go"], [_src("repo", ("*.go", "GO"))]) == (
        '<rules for="b.go">\nGO\n</rules>'
    )


# --- literal pre-filter -------------------------------------------------------------------------

PREFILTER_PATHS = [
    "app.py", "src/Main.java", "Dockerfile", "docker/Dockerfile.dev", "infra/main.tf",
    ".github/workflows/ci.yml", "web/index.HTML", "a/b/c.tsx", "lib.rs", "README",
    "config/settings.yaml", "Gemfile", "x/Rakefile", "q.sql", "run.sh", "tpl/page.html.j2",
    "action.yml", "notes.txt", "src/a.c++", "deep/path/to/.env",
]


@pytest.mark.parametrize("path", PREFILTER_PATHS)
def test_literal_prefilter_never_changes_the_resolved_rule(path: str) -> None:
    user = parse_rule_mapping({"rules": [
        {"path": ["src/**/*.java", "!src/gen/**"], "rule": "Java team rule."},
        {"path": "**/*.{yml,yaml}", "rule": "YAML rule.", "merge_system_rule": True},
    ]}, "user", _reader({}))
    sources = [user, builtin_rules()]
    expected = resolve(path, sources)
    with pytest.MonkeyPatch.context() as mp:  # every entry compiled and asked
        mp.setattr(rules, "_needles", lambda patterns: None)
        assert resolve(path, sources) == expected


def test_resolving_a_python_path_compiles_no_glob_and_imports_no_pathspec() -> None:
    """In a fresh interpreter: the entries before python.md in the rule map hold none of their
    literal parts in ``app.py`` and are skipped; python.md's patterns are matched with their
    shipped regexes (``rule_regexes``), so pathspec is not imported."""
    import subprocess

    code = ("import sys\nfrom ocr_hook.change import rules\n"
            "m = rules.resolve('app.py', [rules.builtin_rules()])\n"
            "print(m.origin, m.pattern, rules._compile.cache_info().currsize,"
            " 'pathspec' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out == "python.md **/*.{py,pyi,pyw,ipynb} 0 False\n"


def test_shipped_rule_map_regexes_are_pathspecs_own() -> None:
    """config/rules/rule_map_regex.json is what pathspec builds from rule_map.json today
    (regenerate it with ``python -m tests.support.rule_map_regexes`` when either changes)."""
    from tests.support.rule_map_regexes import expected

    shipped = json.loads((RULES_DIR / "rule_map_regex.json").read_text(encoding="utf-8"))
    assert shipped == expected()


def _without_regexes() -> RuleSource:
    source = builtin_rules()
    return source._replace(entries=tuple(e._replace(regexes=()) for e in source.entries))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["src", "a", ".github", "workflows", "Dockerfile", "x.tf",
                                 "main.py", "App.JS", "lib.rs", "Gemfile", "README", ".env",
                                 "page.html.j2", "b.c++", "action.yml", "q.SQL", "run.sh",
                                 "Dockerfile.dev", "c.py", "d.py.bak", "x.tsx"]),
                min_size=1, max_size=4).map("/".join))
def test_shipped_regexes_resolve_like_pathspec(path: str) -> None:
    assert resolve(path, [builtin_rules()]) == resolve(path, [_without_regexes()])


@pytest.mark.parametrize("path", PREFILTER_PATHS)
def test_shipped_regexes_resolve_like_pathspec_on_known_paths(path: str) -> None:
    assert resolve(path, [builtin_rules()]) == resolve(path, [_without_regexes()])
