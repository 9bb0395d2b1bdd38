"""The subject registry (`subjects.yaml` + built-in profiles) and its use from experiment.yaml."""

import stat
from pathlib import Path

import pytest

from conftest import case, write
from ix.domain.errors import ConfigError
from ix.domain.secrets import is_secret_key, looks_like_secret
from ix.lab.loader import load_experiment
from ix.lab.subjects import (
    BUILTIN,
    BUILTIN_PROFILES_VERSION,
    add_subject,
    builtin_profiles,
    load_registry,
    subjects_path,
)


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def registry_file(config_home: Path, text: str) -> Path:
    return write(config_home / "ix" / "subjects.yaml", text)


def experiment(lab: Path, subjects_yaml: str, runtime: str = "mock") -> Path:
    d = lab / "exp"
    write(d / "experiment.yaml", f"name: exp\nruntime: {runtime}\nsubjects:\n{subjects_yaml}")
    case(d, "must-001", "must_trigger")
    case(d, "not-001", "should_not_trigger")
    return d


# --------------------------------------------------------------------------- built-ins, merge

def test_builtin_profiles_are_the_documented_set():
    profiles = builtin_profiles()
    assert isinstance(BUILTIN_PROFILES_VERSION, int)
    expected = {
        "claude-sonnet": ("claude-code", "sonnet"), "claude-opus": ("claude-code", "opus"),
        "claude-haiku": ("claude-code", "haiku"),
        "claude-sonnet-api": ("anthropic", "claude-sonnet-4-5"), "gpt-4o": ("openai", "gpt-4o"),
        "random": ("random", None), "mock": ("mock", None),
    }
    assert {n: (p.kind, p.spec.model) for n, p in profiles.items()} == expected
    assert profiles["mock"].spec.runtime == {"kind": "mock", "default_rate": 0.5}
    assert all(p.source == BUILTIN and p.builtin for p in profiles.values())


def test_subjects_path_follows_xdg_config_home(tmp_path):
    assert subjects_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "ix" / "subjects.yaml"


def test_a_missing_file_gives_the_builtins_only(tmp_path):
    assert set(load_registry(tmp_path / "nope.yaml")) == set(builtin_profiles())


def test_user_entries_join_the_builtins_and_override_one_of_the_same_name(tmp_path):
    path = write(tmp_path / "subjects.yaml", """
        my-gpt:
          description: cheap
          runtime: {kind: openai, api_key_env: MY_KEY}
          model: gpt-4o-mini
        mock:
          runtime: {kind: mock, default_rate: 0.9}
    """)
    registry = load_registry(path)
    assert registry["my-gpt"].source == str(path)
    assert registry["my-gpt"].runtime_spec() == {"kind": "openai", "api_key_env": "MY_KEY",
                                                "model": "gpt-4o-mini"}
    assert registry["mock"].source == str(path)
    assert registry["mock"].spec.runtime["default_rate"] == 0.9
    assert registry["claude-sonnet"].builtin
    assert list(registry) == sorted(registry)


def test_a_runtime_given_as_a_kind_string_is_a_mapping(tmp_path):
    path = write(tmp_path / "subjects.yaml", "r2:\n  runtime: random\n")
    assert load_registry(path)["r2"].spec.runtime == {"kind": "random"}


# --------------------------------------------------------------------------- validation

@pytest.mark.parametrize(("text", "field", "words"), [
    ("x:\n  runtim: mock\n", "x.runtim", ["unknown key", "runtime"]),
    ("x:\n  description: no runtime\n", "x.runtime", ["missing"]),
    ("x:\n  runtime: {default_rate: 1}\n", "x.runtime", ["kind"]),
    ("x: mock\n", "x", ["mapping"]),
    ("x:\n  runtime: mock\n  skills: a\n", "x.skills", []),
    ("'bad name':\n  runtime: mock\n", "bad name", ["invalid subject name"]),
    ("x:\n  runtime: mock\nx:\n  runtime: random\n", "x", ["twice"]),
])
def test_a_bad_entry_names_the_file_and_the_field(tmp_path, text, field, words):
    path = write(tmp_path / "subjects.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert info.value.file == str(path)
    assert info.value.field == field
    for word in words:
        assert word in info.value.render()


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path):
    path = write(tmp_path / "subjects.yaml", "- a\n- b\n")
    with pytest.raises(ConfigError, match="map subject names"):
        load_registry(path)


@pytest.mark.parametrize(("runtime", "field"), [
    ("{kind: openai, api_key: abc}", "x.runtime.api_key"),
    ("{kind: openai, apiKey: abc}", "x.runtime.apiKey"),
    ("{kind: openai, token: abc}", "x.runtime.token"),
    ("{kind: openai, access_token: abc}", "x.runtime.access_token"),
    ("{kind: openai, client_secret: abc}", "x.runtime.client_secret"),
    ("{kind: openai, password: abc}", "x.runtime.password"),
    ("{kind: http, headers: {Authorization: Bearer abc}}", "x.runtime.headers.Authorization"),
    ("{kind: http, headers: {X-Api-Key: abc}}", "x.runtime.headers.X-Api-Key"),
    ("{kind: claude-code, env: {ANTHROPIC_API_KEY: abc}}", "x.runtime.env.ANTHROPIC_API_KEY"),
    ("{kind: openai, base_url: sk-proj-abcdefghijklmnopqrstuv}", "x.runtime.base_url"),
    ("{kind: openai, api_key_env: sk-ant-api03-abcdefghijkl}", "x.runtime.api_key_env"),
    ("{kind: openai, api_key_env: 'not a name'}", "x.runtime.api_key_env"),
])
def test_secrets_are_refused_on_load(tmp_path, runtime, field):
    path = write(tmp_path / "subjects.yaml", f"x:\n  runtime: {runtime}\n")
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert (info.value.file, info.value.field) == (str(path), field)
    assert "abcdefghijkl" not in info.value.render()  # an error never repeats the secret


def test_a_secret_in_config_is_refused_too(tmp_path):
    path = write(tmp_path / "subjects.yaml", "x:\n  runtime: openai\n  config: {secret: s}\n")
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert info.value.field == "x.config.secret"


def test_env_var_names_token_counts_and_env_templates_are_not_secrets(tmp_path):
    path = write(tmp_path / "subjects.yaml", """
        x:
          runtime: {kind: openai, api_key_env: MY_KEY, max_tokens: 50, tokens_per_minute: 9}
        y:
          runtime:
            kind: http
            url: http://127.0.0.1:9/
            headers: {Authorization: "Bearer {{ env.SVC_TOKEN }}"}
    """)
    registry = load_registry(path)
    assert registry["x"].spec.runtime["api_key_env"] == "MY_KEY"
    assert "env.SVC_TOKEN" in registry["y"].spec.runtime["headers"]["Authorization"]


@pytest.mark.parametrize(("key", "secret"), [
    ("api_key", True), ("apikey", True), ("API_KEY", True), ("openaiApiKey", True),
    ("token", True), ("auth_token", True), ("secret", True), ("client_secret", True),
    ("password", True), ("Authorization", True), ("aws_access_key_id", True),
    ("api_key_env", False), ("token_env", False), ("max_tokens", False), ("model", False),
    ("tokens_per_minute", False), ("skill", False), ("base_url", False),
])
def test_secret_key_names(key, secret):
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(("value", "secret"), [
    ("sk-ant-api03-abcdefghijklmnop", True), ("sk-proj-abcdefghijkl", True),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123", True), ("Bearer abcdefghijkl", True),
    ("AKIAABCDEFGHIJKLMNOP", True),
    ("sk-learn", False), ("gpt-4o", False), ("ANTHROPIC_API_KEY", False), ("sonnet", False),
])
def test_secret_looking_values(value, secret):
    assert looks_like_secret(value) is secret


# --------------------------------------------------------------------------- add

def test_add_writes_an_entry_and_keeps_the_others(tmp_path):
    path = tmp_path / "ix" / "subjects.yaml"
    add_subject("a", {"runtime": {"kind": "mock", "default_rate": 0.9}, "description": "A"},
                path)
    added = add_subject("b", {"runtime": {"kind": "openai", "api_key_env": "B_KEY"},
                              "model": "gpt-4o-mini"}, path)
    assert added.source == str(path)
    registry = load_registry(path)
    assert registry["a"].spec.description == "A"
    assert registry["b"].runtime_spec()["api_key_env"] == "B_KEY"
    add_subject("a", {"runtime": "random"}, path)  # replaces
    assert load_registry(path)["a"].kind == "random"
    assert [p.name for p in path.parent.iterdir()] == ["subjects.yaml"]  # no temp file left
    assert not path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO)


@pytest.mark.parametrize("entry", [
    {"runtime": {"kind": "openai", "api_key": "sk-abcdefghijklmnopqrst"}},
    {"runtime": {"kind": "openai", "base_url": "sk-abcdefghijklmnopqrst"}},
    {"runtime": {"kind": "openai"}, "config": {"token": "t"}},
])
def test_add_refuses_a_secret_and_writes_nothing(tmp_path, entry):
    path = tmp_path / "subjects.yaml"
    with pytest.raises(ConfigError, match=r"secret|key"):
        add_subject("leaky", entry, path)
    assert not path.exists()
    add_subject("fine", {"runtime": "mock"}, path)
    before = path.read_bytes()
    with pytest.raises(ConfigError):
        add_subject("leaky", entry, path)
    assert path.read_bytes() == before


def test_add_refuses_to_rewrite_an_invalid_file(tmp_path):
    path = write(tmp_path / "subjects.yaml", "x:\n  runtim: mock\n")
    with pytest.raises(ConfigError, match="runtim"):
        add_subject("y", {"runtime": "mock"}, path)
    assert path.read_text() == "x:\n  runtim: mock\n"


# --------------------------------------------------------------------------- experiment.yaml

def test_subjects_by_name_resolve_to_the_registry(lab, config_home):
    registry_file(config_home, """
        my-mock:
          description: mostly yes
          runtime: {kind: mock, default_rate: 0.9}
    """)
    exp = load_experiment(experiment(lab, "  - mock\n  - my-mock\n")).experiment
    mock, mine = exp.subjects
    assert (mock.name, mine.name) == ("mock", "my-mock")
    assert mock.config["runtime"] == {"kind": "mock", "default_rate": 0.5}
    assert mock.config["profile"] == "mock" and mock.config["profile_source"] == BUILTIN
    assert mine.config["runtime"] == {"kind": "mock", "default_rate": 0.9}
    assert mine.description == "mostly yes"
    assert mine.config["profile_source"] == str(config_home / "ix" / "subjects.yaml")


def test_a_flow_list_of_names_works(lab, config_home):
    d = lab / "exp"
    write(d / "experiment.yaml", "name: exp\nruntime: mock\nsubjects: [mock, random]\n")
    case(d, "must-001", "must_trigger")
    exp = load_experiment(d).experiment
    assert [s.config["runtime"]["kind"] for s in exp.subjects] == ["mock", "random"]


def test_a_profile_with_overrides(lab, config_home):
    write(lab / "skills" / "a" / "SKILL.md", "---\nname: a\ndescription: A skill\n---\nbody\n")
    exp = load_experiment(experiment(lab, """
  - name: sonnet-with-a
    profile: claude-sonnet
    skills: [a]
    config: {max_turns: 3}
  - name: plain
    profile: claude-sonnet
    description: mine
""", runtime="{kind: claude-code, max_turns: 1}")).experiment
    with_a, plain = exp.subjects
    assert with_a.config["runtime"] == {"kind": "claude-code", "max_turns": 3, "model": "sonnet"}
    assert with_a.config["model"] == "sonnet"
    assert [s["name"] for s in with_a.config["skills"]] == ["a"]
    assert with_a.config["profile"] == "claude-sonnet"
    assert with_a.description == "Claude Code CLI, Sonnet"
    assert plain.config["runtime"] == {"kind": "claude-code", "max_turns": 1, "model": "sonnet"}
    assert plain.description == "mine"


def test_a_subject_runtime_of_another_kind_replaces_the_profiles(lab, config_home):
    exp = load_experiment(experiment(lab, """
  - name: x
    profile: gpt-4o
    runtime: {kind: mock, default_rate: 1.0}
""")).experiment
    assert exp.subjects[0].config["runtime"] == {"kind": "mock", "default_rate": 1.0}
    assert exp.subjects[0].config["profile"] == "gpt-4o"


def test_profile_without_name_takes_the_profiles_name(lab, config_home):
    exp = load_experiment(experiment(lab, "  - profile: random\n    config: {p: 1.0}\n"))
    assert exp.experiment.subjects[0].name == "random"
    assert exp.experiment.subjects[0].config["runtime"] == {"kind": "random", "p": 1.0}


@pytest.mark.parametrize(("subjects", "field"), [
    ("  - mock\n  - nosuch\n", "subjects[1]"),
    ("  - name: x\n    profile: nosuch\n", "subjects[0].profile"),
])
def test_an_unknown_name_is_an_error_listing_the_known_ones(lab, config_home, subjects, field):
    path = experiment(lab, subjects)
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert info.value.field == field
    assert info.value.file == str(path / "experiment.yaml")
    assert "'nosuch'" in info.value.message
    assert "claude-sonnet" in info.value.message and "mock" in info.value.message


def test_a_name_listed_twice_is_an_error(lab, config_home):
    with pytest.raises(ConfigError, match="twice"):
        load_experiment(experiment(lab, "  - mock\n  - mock\n"))


def test_the_registry_file_is_read_only_when_a_name_is_used(lab, config_home):
    registry_file(config_home, "x:\n  runtim: broken\n")
    path = experiment(lab, "  - name: a\n  - name: b\n")
    assert [s.name for s in load_experiment(path).experiment.subjects] == ["a", "b"]
    with pytest.raises(ConfigError) as info:
        load_experiment(experiment(lab, "  - mock\n"))
    assert info.value.file == str(config_home / "ix" / "subjects.yaml")


def test_a_registry_skill_path_is_relative_to_the_registry_file(lab, config_home):
    write(config_home / "ix" / "skills" / "mine" / "SKILL.md",
          "---\nname: mine\ndescription: Mine\n---\nbody\n")
    registry_file(config_home, "lx:\n  runtime: lexical\n  skills: [./skills/mine]\n")
    exp = load_experiment(experiment(lab, "  - lx\n")).experiment
    assert [s["name"] for s in exp.subjects[0].config["skills"]] == ["mine"]


def test_the_experiment_file_still_rejects_unknown_subject_keys(lab, config_home):
    with pytest.raises(ConfigError) as info:
        load_experiment(experiment(lab, "  - name: a\n    profil: mock\n"))
    assert info.value.field == "subjects[0].profil"
    assert "profile" in info.value.message
