"""Tests for ocr_hook.secrets.redaction: secret detection and redaction on literal texts and diffs.

Nothing is faked: the real rule file (config/secret_patterns.json) is loaded. Fixture secrets are
made up and assembled from pieces at import time, so this file itself contains no string that a
secret scanner (ours or a forge's push protection) would flag.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocr_hook.secrets.redaction import ALLOW_MARKER, SecretHit, find_secrets, redact
from tests.secrets.shape_corpus import CLEAN, SHAPES
from tests.support.paths import ROOT
from tests.support.secret_corpus import CASES


def _j(*parts: str) -> str:
    return "".join(parts)


AWS_KEY_ID = _j("AKIA", "Z3MSJV4WZXXT5Q2N")  # not AWS's documented ...EXAMPLE key
AWS_SECRET = _j("Zk3m9Qp2Lr7Tw1Xv5Bn8", "Cd4Fg6Hj0Ks2Mu7Ny3Pq")
GITHUB_PAT = _j("gh", "p_", "R4nd0mT0k3nV4lu3Abc1234567890XyZwQpL")
GITHUB_FINE = _j("github", "_pat_", "11ABCDEFG0Zq8Lm3Np5Rt7_",
                 "Vw9Yb2Cd4Fg6Hj8Kl0Mn2Pq4Rs6Tu8Wx0Yz")
GITLAB_PAT = _j("gl", "pat-", "Xy9z8W7v6U5t4S3r2Q1p")
GOOGLE_KEY = _j("AI", "za", "SyD3x9Kq7Lm2Np5Rt8Vw1Yz4Bc6Df0Gh3Jk")
GCP_CLIENT_SECRET = _j("GOC", "SPX-", "Qx7Lm2Np5Rt8Vw1Yz4Bc6Df0Gh3J")
AZURE_KEY = _j("Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9rS1uV3xZ5a",
               "C7eG9iK1mO3qS5uW7yA9cE1gI3kM5oQ7s==")
AZURE_SB_KEY = _j("q8Z3kLm9Pv2Rt7Wx1Yb4Cd6", "Fg8Hj0Kl2Mn4Pq6Rs8Tu0W=")
AZURE_SIG = _j("Zq8Lm3Np5Rt7Vw9Yb2Cd4Fg6", "Hj8Kl0Mn2Pq4Rs6%2BTu8%3D")
SLACK_TOKEN = _j("xo", "xb-", "1234567890-1234567890123-", "Qz8Lm3Np5Rt7Vw9Yb2Cd4Fg6")
SLACK_HOOK_PATH = _j("T024BE7LD/", "B01ABCDEF12/", "Zq8Lm3Np5Rt7Vw9Yb2Cd4Fg6")
STRIPE_KEY = _j("sk", "_live_", "51HqLyjWDarjtT1zdp7dc4eC39")
OPENAI_KEY = _j("sk-", "proj-", "Zq8Lm3Np5Rt7Vw9Yb2Cd", "T3Blbk", "FJ", "Hj8Kl0Mn2Pq4Rs6Tu8Wx0")
ANTHROPIC_KEY = _j("sk-", "ant-", "api03-", "Zq8Lm3Np5Rt7Vw9Yb2Cd4Fg6Hj8Kl0Mn2Pq4Rs6Tu8Wx0Yz" * 2)
JWT = _j("eyJ", "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", ".eyJ", "zdWIiOiIxMjM0NTY3ODkwIn0",
         ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
DB_PASSWORD = "Pa55w0rd-x9Lq"
GENERIC = "Xk9#mP2$vL8@qR4!z"  # 17 characters, high entropy

PEM_BEGIN = _j("-----BEGIN ", "RSA PRIVATE KEY-----")
PEM_END = _j("-----END ", "RSA PRIVATE KEY-----")
PEM_BODY = [
    "MIIEowIBAAKCAQEA1c7x9z5Pad7OejecsQ0bu3aumGd1Y3dLxt4Z1kU2ZkPq3l2Z",
    "GRmYjA4ZTI3ZjQ2OWM4NzE2ZGE0OGI3NTdkNjE1ZTk4N2Q5YWJjZGVmMDEyMzQ1",
    "Njc4OWFiY2RlZg==",
]
PEM = "\n".join([PEM_BEGIN, *PEM_BODY, PEM_END]) + "\n"
OPENSSH = "\n".join([
    _j("-----BEGIN ", "OPENSSH PRIVATE KEY-----"),
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACBqZ3VtcHMgb3ZlciB0aGUgbGF6eSBkb2cgYWdhaW4AAAAAAAAAAAAAAA==",
    _j("-----END ", "OPENSSH PRIVATE KEY-----"),
])
ENCRYPTED_PEM = "\n".join([
    PEM_BEGIN, "Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,3F17F5316E2BAC89", "",
    *PEM_BODY, PEM_END,
])
GCP_PEM = _j("-----BEGIN ", "PRIVATE KEY-----\\n", PEM_BODY[0], "\\n", PEM_BODY[2], "\\n",
             "-----END ", "PRIVATE KEY-----\\n")

# (text, type, line of the single hit)
POSITIVES: list[tuple[str, str, int]] = [
    (f'aws_access_key_id = "{AWS_KEY_ID}"\n', "aws-access-key", 1),
    (f"[default]\nregion = eu-west-1\nkey = {AWS_KEY_ID}\n", "aws-access-key", 3),
    (f"# creds\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", "aws-secret-key", 2),
    (f'{{\n  "SecretAccessKey": "{AWS_SECRET}"\n}}\n', "aws-secret-key", 2),
    ("x = 1\n" + PEM, "private-key", 2),
    (OPENSSH + "\n", "private-key", 1),
    ("key: |\n" + ENCRYPTED_PEM, "private-key", 2),
    ('{\n  "type": "service_account",\n'
     '  "private_key_id": "3f2a9c0d5e7b1a4c8f6e2d9b0a7c5e3f1d8b6a4c",\n'
     f'  "private_key": "{GCP_PEM}",\n  "client_email": "svc@proj.iam.gserviceaccount.com"\n}}\n',
     "gcp-service-account-key", 4),
    (f'GOOGLE_MAPS = "{GOOGLE_KEY}"\n', "google-api-key", 1),
    (f'client_secret = "{GCP_CLIENT_SECRET}"\n', "gcp-oauth-client-secret", 1),
    (f"conn = DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE_KEY};"
     "EndpointSuffix=core.windows.net\n", "azure-storage-key", 1),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
     f"SharedAccessKey={AZURE_SB_KEY}\n", "azure-shared-access-key", 1),
    ("url: https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r"
     f"&se=2030-01-01T00:00:00Z&sig={AZURE_SIG}\n", "azure-sas-signature", 1),
    (f"steps:\n  - run: gh auth login\n    env:\n      GH_TOKEN: {GITHUB_PAT}\n",
     "github-token", 4),
    (f"curl -H 'Authorization: token {GITHUB_FINE}' https://api.github.com\n", "github-token", 1),
    (f'GITLAB = "{GITLAB_PAT}"\n', "gitlab-token", 1),
    (f"SLACK_BOT_TOKEN={SLACK_TOKEN}\n", "slack-token", 1),
    (f'hook = "https://hooks.slack.com/services/{SLACK_HOOK_PATH}"\n', "slack-webhook", 1),
    (f'stripe.api_key = "{STRIPE_KEY}"\n', "stripe-live-key", 1),
    (f"OCR_LLM_TOKEN={OPENAI_KEY}\n", "openai-api-key", 1),
    (f'client = Anthropic(api_key="{ANTHROPIC_KEY}")\n', "anthropic-api-key", 1),
    (f"GET /v1/me\nAuthorization: Bearer {JWT}\n", "jwt", 2),
    (f"DATABASE_URL=postgres://app:{DB_PASSWORD}@db.internal:5432/app\n", "url-password", 1),
    (f'cache = redis.from_url("redis://:{DB_PASSWORD}@cache:6379/0")\n', "url-password", 1),
    (f'password = "{GENERIC}"\n', "generic-secret", 1),
    (f"db:\n  host: db\n  password: {GENERIC}\n", "generic-secret", 3),
    ('{"client_secret": "q8Z3kLm9Pv2Rt7Wx1Yb4"}\n', "generic-secret", 1),
    ("export AUTH_TOKEN=Zq8Lm3Np5Rt7Vw9Y\n", "generic-secret", 1),
    ("const apiKey = 'a9f8e7d6c5b4a39281706f5e4d3c2b1a';\n", "generic-secret", 1),
    ('SECRET_KEY: str = "django-insecure-7k$#(2x!q9zv@m%w"\n', "generic-secret", 1),
    ("spring.datasource.password=Zq8Lm3Np5Rt7Vw9Yb2\n", "generic-secret", 1),
    ("http_auth: Basic dXNlcjpQYXNzdzByZF8xMjM0NQ==\n", "generic-secret", 1),
    ('connect(host="db", passwd="Tr0ub4dor&3xyzzy!")\n', "generic-secret", 1),
]

NEGATIVES: list[str] = [
    'token = os.environ["GITHUB_TOKEN"]\n',
    'api_key = os.getenv("API_KEY")\n',
    'secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")\n',
    "const apiKey = process.env.API_KEY;\n",
    "const token = process.env.GITHUB_TOKEN\n",
    "        token: ${{ secrets.GITHUB_TOKEN }}\n",
    "password = get_password()\n",
    "password = get_password_from_vault(name)\n",
    "token = None\n",
    'password = "changeme"\n',
    'api_key = "<your-api-key>"\n',
    'password = "your_password_here_123"\n',
    "API_KEY=${API_KEY}\n",
    "GITHUB_TOKEN=$GITHUB_TOKEN_FROM_CI_SECRETS\n",
    'secret = "example"\n',
    'SECRET_KEY = "xxxxxxxxxxxxxxxxxxxxxxxx"\n',
    'password: "{{ vault_db_password }}"\n',
    'password = "aaaaaaaaaaaaaaaaaaaa"\n',
    'token = "abababababababab"\n',
    'password = "passwordpassword"\n',
    'SECRET_NAME = "MY_APP_SECRET_KEY_V2"\n',
    'token_url = "https://oauth2.googleapis.com/token"\n',
    'tokenizer = "bert-base-uncased-v2-large"\n',
    'password_field = "password_confirmation"\n',
    "def check_password(password: str, expected_hash: bytes) -> bool:\n",
    "secret = self.settings.client_secret_value\n",
    "private_key: Ed25519PrivateKey | None = None\n",
    "def sign(private_key: PKCS7PrivateKeyTypes, data: bytes) -> bytes:\n",
    "for token in tokens:\n    yield token.strip()\n",
    'author = "Jane Doe <jane@example.org>"\n',
    'INVALID_TOKEN = "The token is invalid"\n',
    _j('aws_access_key_id = "AKIA', 'IOSFODNN7EXAMPLE"\n'),  # AWS's documented example pair
    _j('aws_secret_access_key = "wJalrXUtnFEMI/', 'K7MDENG/bPxRfiCYEXAMPLEKEY"\n'),
    _j('_SK_START = b"-----BEGIN ', 'OPENSSH PRIVATE KEY-----"\n',
       '_SK_END = b"-----END ', 'OPENSSH PRIVATE KEY-----"\n'),
    "DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost/db\n",
    "BROKER = 'amqp://guest:guest@localhost:5672//'\n",
    'url = f"redis://:{password}@{host}:6379"\n',
    "see https://user@example.com and http://localhost:8080/path\n",
    '"NextToken": "eyJNYXJrZXIiOiBudWxsfQ=="\n',
    '"ClientRequestToken": "a8ca07e4-61ec-4399-99f4-19853801bcd5"\n',
    '"integrity": "sha512-Zq8Lm3Np5Rt7Vw9Yb2Cd4Fg6Hj8Kl0Mn2Pq4Rs6Tu8Wx0Yz=="\n',
    "PWD=/home/user/projects/ocr-hook\n",
    "secret_path: /run/secrets/db_password_file\n",
    'ENCRYPTION_KEY = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd"\n',
    "hook = 'https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX'\n",
    # the password rule (any length) leaves schemas, lookups, lengths and plain words alone
    '"password": {"type": "string", "minLength": 8}\n',
    'password = request.form["password"]\n',
    'if password == "":\n',
    "password: ********\n",
    "PASSWORD_MIN_LENGTH = 12\n",
    'password = "letmein"\n',
    "password = hash_password(raw, salt)\n",
    '"password":\n  "{{ .Values.db.password }}"\n',
    "DEBUG=1 TOKEN_TTL=3600 ./run.sh\n",
    "def __init__(self, password: bytes):\n",
    "return BasicAuth(username=username, password=password)\n",
    "def load_cert_chain(self, certfile, keyfile=None, password=None):\n",
    "    password: SecretStr\n",
    # joined string literals are checked joined, and ordinary text stays
    'msg = ("the quick brown "\n       "fox jumps")\n',
    'KEY_ID = ("AKIA" +\n          "IOSFODNN7EXAMPLE")\n',
]


@pytest.mark.parametrize(("text", "type_", "line"), POSITIVES)
def test_finds_each_secret_type_on_its_line(text: str, type_: str, line: int) -> None:
    hits = find_secrets(text)
    assert [(h.type, h.line) for h in hits] == [(type_, line)]
    hit = hits[0]
    assert text.split("\n")[line - 1][hit.start_col:hit.end_col] == hit.value.split("\n")[0]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ignores_identifiers_env_lookups_placeholders_and_low_entropy(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(("text", "type_", "line"), POSITIVES)
def test_redaction_leaves_no_secret_value(text: str, type_: str, line: int) -> None:
    values = [h.value for h in find_secrets(text)]
    redacted, count = redact(text)
    assert count == 1
    assert f"[REDACTED:{type_}]" in redacted
    for value in values:
        for piece in value.replace("\\n", "\n").split("\n"):
            if len(piece) >= 8:
                assert piece not in redacted
    assert redacted.count("\n") == text.count("\n")


def test_redaction_replaces_only_the_value() -> None:
    text = f'    password = "{GENERIC}"  # prod\nuser = "app"\n'
    assert redact(text) == ('    password = "[REDACTED:generic-secret]"  # prod\nuser = "app"\n', 1)


def test_url_password_is_redacted_but_user_and_host_are_kept() -> None:
    text = f"DATABASE_URL=postgres://app:{DB_PASSWORD}@db.internal:5432/app\n"
    assert redact(text) == (
        "DATABASE_URL=postgres://app:[REDACTED:url-password]@db.internal:5432/app\n", 1)


def test_pem_block_keeps_armor_lines_and_line_count() -> None:
    text = "x = 1\n" + PEM + "y = 2\n"
    assert redact(text) == (
        "x = 1\n"
        f"{PEM_BEGIN}\n"
        "[REDACTED:private-key]\n[REDACTED:private-key]\n[REDACTED:private-key]\n"
        f"{PEM_END}\n"
        "y = 2\n", 1)
    [hit] = find_secrets(text)
    assert (hit.line, hit.start_col, hit.end_col) == (2, len(PEM_BEGIN), len(PEM_BEGIN))
    assert all(body_line in hit.value for body_line in PEM_BODY)


def test_pem_block_in_diff_keeps_markers_and_hunk_lines() -> None:
    diff = (
        "diff --git a/id_rsa b/id_rsa\n"
        "new file mode 100600\n"
        "index 0000000..e69de29\n"
        "--- /dev/null\n"
        "+++ b/id_rsa\n"
        "@@ -0,0 +1,5 @@\n"
        + "".join(f"+{line}\n" for line in [PEM_BEGIN, *PEM_BODY, PEM_END])
    )
    redacted, count = redact(diff)
    assert count == 1
    assert redacted == diff.replace(
        "".join(f"+{line}\n" for line in PEM_BODY), "+[REDACTED:private-key]\n" * 3)
    assert [(h.type, h.line) for h in find_secrets(diff)] == [("private-key", 7)]


def test_pem_block_split_over_two_hunks_keeps_the_hunk_header() -> None:
    diff = (
        "@@ -1,3 +1,3 @@\n"
        f" {PEM_BEGIN}\n"
        f"-{PEM_BODY[0]}\n"
        f"+{PEM_BODY[1]}\n"
        "@@ -20,2 +20,2 @@ def f():\n"
        f" {PEM_BODY[2]}\n"
        f" {PEM_END}\n"
    )
    redacted, count = redact(diff)
    assert count == 1
    assert redacted == (
        "@@ -1,3 +1,3 @@\n"
        f" {PEM_BEGIN}\n"
        "-[REDACTED:private-key]\n"
        "+[REDACTED:private-key]\n"
        "@@ -20,2 +20,2 @@ def f():\n"
        " [REDACTED:private-key]\n"
        f" {PEM_END}\n"
    )


def test_pem_block_without_end_line_is_redacted_up_to_its_last_body_line() -> None:
    diff = "@@ -0,0 +1,3 @@\n" + "".join(f"+{line}\n" for line in [PEM_BEGIN, *PEM_BODY[:2]])
    diff += "@@ -9,1 +11,1 @@\n-old\n+new\n"
    redacted, count = redact(diff)
    assert count == 1
    assert redacted == (
        f"@@ -0,0 +1,3 @@\n+{PEM_BEGIN}\n+[REDACTED:private-key]\n+[REDACTED:private-key]\n"
        "@@ -9,1 +11,1 @@\n-old\n+new\n")


def test_escaped_single_line_pem_is_replaced_in_place() -> None:
    text = f'KEY = "{GCP_PEM}"\n'
    redacted, count = redact(text)
    assert count == 1
    assert redacted.startswith('KEY = "-----BEGIN ') and PEM_BODY[0] not in redacted
    assert redacted.endswith('[REDACTED:private-key]-----END PRIVATE KEY-----\\n"\n')


def test_diff_markers_and_headers_are_preserved() -> None:
    old_key = "a9f8e7d6c5b4a39281706f5e4d3c2b1a"
    diff = (
        "diff --git a/app/settings.py b/app/settings.py\n"
        "index 3b18e51..a9c2f0d 100644\n"
        "--- a/app/settings.py\n"
        "+++ b/app/settings.py\n"
        "@@ -1,4 +1,4 @@ import os\n"
        " DEBUG = False\n"
        f'-API_KEY = "{old_key}"\n'
        f'+API_KEY = "{GITHUB_PAT}"\n'
        f' AWS_KEY_ID = "{AWS_KEY_ID}"\n'
        " TIMEOUT_S = 30\n"
    )
    redacted, count = redact(diff)
    assert count == 3
    assert redacted == (
        diff.replace(old_key, "[REDACTED:generic-secret]")
        .replace(GITHUB_PAT, "[REDACTED:github-token]")
        .replace(AWS_KEY_ID, "[REDACTED:aws-access-key]"))
    assert [(h.type, h.line) for h in find_secrets(diff)] == [
        ("generic-secret", 7), ("github-token", 8), ("aws-access-key", 9)]


def test_allow_marker_removes_the_finding_of_its_line_but_not_the_redaction() -> None:
    text = (f'TEST_KEY_ID = "{AWS_KEY_ID}"  # {ALLOW_MARKER}\n'
            f'REAL_KEY_ID = "{AWS_KEY_ID}"\n')
    assert [(h.type, h.line) for h in find_secrets(text)] == [("aws-access-key", 2)]
    assert redact(text) == (
        f'TEST_KEY_ID = "[REDACTED:aws-access-key]"  # {ALLOW_MARKER}\n'
        'REAL_KEY_ID = "[REDACTED:aws-access-key]"\n', 2)


def test_allow_list_accepts_literal_values_and_regexes() -> None:
    text = f'a = "{AWS_KEY_ID}"\nb = "{GITHUB_PAT}"\npassword = "{GENERIC}"\n'
    assert len(find_secrets(text)) == 3
    assert [h.type for h in find_secrets(text, allow=[AWS_KEY_ID])] == [
        "github-token", "generic-secret"]
    assert [h.type for h in find_secrets(text, allow=[r"gh[pousr]_\w+", "Xk9#.*"])] == [
        "aws-access-key"]
    # An entry is matched against the whole value, and a bad regex is still a literal.
    assert len(find_secrets(text, allow=["AKIA", "[unclosed"])) == 3
    assert find_secrets(text, allow=[AWS_KEY_ID, GITHUB_PAT, GENERIC]) == []
    # allowed values are not findings, but they are never sent: redaction has no allow-list
    assert redact(text) == ('a = "[REDACTED:aws-access-key]"\nb = "[REDACTED:github-token]"\n'
                            'password = "[REDACTED:generic-secret]"\n', 3)


def test_overlapping_rules_give_one_hit_typed_by_the_most_specific_rule() -> None:
    text = f"GITHUB_TOKEN={GITHUB_PAT}\n"
    assert [(h.type, h.value) for h in find_secrets(text)] == [("github-token", GITHUB_PAT)]
    assert redact(text) == ("GITHUB_TOKEN=[REDACTED:github-token]\n", 1)


def test_hit_fields_locate_the_value() -> None:
    text = f"first\n  key = '{AWS_KEY_ID}'\n"
    assert find_secrets(text) == [SecretHit("aws-access-key", 2, 9, 29, AWS_KEY_ID)]


def test_crlf_text_keeps_its_line_endings() -> None:
    text = f"a = 1\r\npassword = {GENERIC}\r\n" + PEM.replace("\n", "\r\n")
    redacted, count = redact(text)
    assert count == 2
    assert redacted.count("\r\n") == text.count("\r\n") and redacted.count("\n") == text.count("\n")
    assert "password = [REDACTED:generic-secret]\r\n" in redacted
    assert "\r\n[REDACTED:private-key]\r\n" in redacted
    assert [h.line for h in find_secrets(text)] == [2, 3]


def test_redaction_is_idempotent_and_count_matches_hits() -> None:
    text = "\n".join(t for t, _, _ in POSITIVES)
    redacted, count = redact(text)
    assert count == len(find_secrets(text)) == len(POSITIVES)
    assert redact(redacted) == (redacted, 0)


def test_every_rule_type_has_a_positive_example() -> None:
    rules_file = ROOT / "config" / "secret_patterns.json"
    types = {rule["type"] for rule in json.loads(rules_file.read_text(encoding="utf-8"))}
    assert types == ({type_ for _, type_, _ in POSITIVES} | {c.type for c in CASES}
                     | {s.type for s in SHAPES})


_FRAGMENTS = st.sampled_from([
    "\n", "\r\n", "\r", "+", "-", " ", "@@ -1,2 +1,2 @@\n", "password = ", "TOKEN=", '"', "'",
    "://u:", "@", "x" * 16, PEM_BEGIN + "\n", PEM_END, PEM_BODY[0] + "\n", "AccountKey=",
    "ghp_", "eyJ", ".", "${", "}", "\u2028", "\\n", ALLOW_MARKER,
])
_TEXTS = st.lists(st.one_of(st.text(max_size=40), _FRAGMENTS), max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=_TEXTS)
def test_redact_never_raises_and_never_adds_lines(text: str) -> None:
    redacted, count = redact(text)
    found = len(find_secrets(text))  # a marked line's values are redacted but not findings
    assert count == found if ALLOW_MARKER not in text else count >= found
    assert redacted.count("\n") == text.count("\n")
    assert len(redacted.splitlines()) <= len(text.splitlines())
    if count == 0:
        assert redacted == text


@settings(max_examples=200, deadline=None)
@given(before=_TEXTS, after=_TEXTS,
       left=st.sampled_from([" ", "\n", '"', "'", "=", ": ", "\t", "(", ",", "+"]),
       right=st.sampled_from([" ", "\n", '"', "'", ";", "\t", ")", ","]))
def test_an_inserted_aws_key_never_survives(before: str, after: str, left: str,
                                            right: str) -> None:
    text = before + left + AWS_KEY_ID + right + after
    if ALLOW_MARKER in text:
        return
    redacted, count = redact(text)
    assert AWS_KEY_ID not in redacted
    assert count >= 1


def test_every_rule_match_in_the_examples_passes_its_rules_prefilter() -> None:
    """The keyword and assignment pre-filters skip a rule on a text they say it cannot match:
    sound only when every match passes them on its own (checked on every positive example, both
    corpora and the negatives)."""
    from ocr_hook.secrets.patterns import rules

    texts = ([t for t, _, _ in POSITIVES] + [c.text for c in CASES] + NEGATIVES
             + [s.text for s in SHAPES] + [c.text for c in CLEAN])
    checked = set()
    for rule in rules():
        for text in texts:
            for m in rule.pattern.finditer(text):
                checked.add(rule.type)
                assert rule.may_match(m.group(0).lower()), (rule.type, text)
    assert len(checked) == len({r.type for r in rules()})


_KEYWORD_FRAGMENTS = st.sampled_from([
    "password", "Pass", "pwd", "token", "_KEY", "secret", "auth", "credentials", " = ", ": ",
    "=", '"', "'", "Xk9#mP2$vL8@qR4!z", "Zq8Lm3Np5Rt7Vw9Yb2", "T7r!abc9", "\n", "\r\n", "+",
    "export ", " ", "#", ";", "Password=",
])


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.one_of(st.text(max_size=12), _KEYWORD_FRAGMENTS), max_size=40).map(
    "".join))
def test_keyword_lines_find_what_a_full_scan_finds(text: str) -> None:
    """Heuristic rules run only on the lines around their keywords; a trailing line with a
    character whose lower case is longer ("\u0130") forces the full scan of every rule."""
    full = redact(text + "\n\u0130")[0]
    assert redact(text)[0] + "\n\u0130" == full
