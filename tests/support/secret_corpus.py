"""A corpus of realistic but FAKE secrets in the forms they take in real files, shared
by the tests (``tests/secrets/test_corpus.py``) and ``bench/bench_secrets.py``.

No token appears literally in this source: every random part is derived from a seed with
SHA-256 (``_chars``), and prefixes are joined at import time, so secret scanners (ours, GitHub
push protection, gitleaks) do not flag the repository itself (see commit 49e3b1a). The values
have the right shape (prefix, alphabet, length) but were never issued by anyone.

Each :class:`Case` is a snippet of one file; ``corpus_files()`` concatenates the snippets of each
file in order, and ``case_lines()`` says on which line of its file each case starts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import textwrap
from dataclasses import dataclass

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
ALNUM = _UPPER + _LOWER + _DIGITS
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
B32 = _UPPER + "234567"


def _chars(seed: str, n: int, alphabet: str = ALNUM) -> str:
    """``n`` characters of ``alphabet``, deterministic in ``seed`` (pseudo-random, not secret)."""
    out: list[str] = []
    counter = 0
    while len(out) < n:
        digest = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        out.extend(alphabet[b % len(alphabet)] for b in digest)
        counter += 1
    return "".join(out[:n])


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pem(kind: str, seed: str, lines: int = 6) -> tuple[str, tuple[str, ...]]:
    """A fake PEM block of ``kind`` ("RSA", "EC", "OPENSSH", "" for PKCS#8) and its body lines."""
    label = f"{kind} PRIVATE KEY" if kind else "PRIVATE KEY"
    first = "b3BlbnNzaC1rZXktdjEAAAAA" if kind == "OPENSSH" else "MIIEpAIBAAKCAQEA"
    body = [first + _chars(seed, 64 - len(first), B64)]
    body += [_chars(f"{seed}{i}", 64, B64) for i in range(1, lines - 1)]
    body.append(_chars(f"{seed}end", 28, B64) + "==")
    dashes = "-" * 5
    text = "\n".join([f"{dashes}BEGIN {label}{dashes}", *body, f"{dashes}END {label}{dashes}"])
    return text, tuple(body)


@dataclass(frozen=True)
class Case:
    """One secret in context. ``file``: the path it is staged at; ``text``: the snippet (its
    lines end with ``\\n``, or ``\\r\\n`` for CRLF cases); ``line``/``end_line``: 1-based lines of
    the secret within the snippet; ``leaks``: substrings that must never reach the model (the
    value, or each line/piece of a value written over several lines); ``type``: the placeholder
    type ours reports; ``finding``: False when the value is allow-listed (inline marker): no
    finding, but still redacted."""

    name: str
    file: str
    text: str
    line: int
    leaks: tuple[str, ...]
    type: str
    end_line: int = 0
    finding: bool = True

    @property
    def last_line(self) -> int:
        return self.end_line or self.line


def _c(name: str, file: str, text: str, value: str | tuple[str, ...], type_: str,
       finding: bool = True) -> Case:
    """A case whose secret starts on the first line of ``text`` that holds its first leak (for
    a PEM block: its BEGIN line, where scanners report it) and ends on the line that holds its
    last one (for a PEM block: its END line)."""
    leaks = (value,) if isinstance(value, str) else value
    rows = text.split("\n")
    start = "PRIVATE KEY-----" if type_ == "private-key" else leaks[0]
    first = next(i for i, r in enumerate(rows, 1) if start in r)
    end = "-----END" if type_ == "private-key" else leaks[-1]
    last = next(i for i, r in reversed(list(enumerate(rows, 1))) if end in r)
    return Case(name, file, text, first, leaks, type_, last if last != first else 0, finding)


PY = "app/settings.py"
SH = "deploy/publish.sh"
INI = "deploy/legacy.ini"  # written with CRLF line ends
DB_JSON = "config/database.json"
SA_JSON = "config/service-account.json"
JS = "web/clients.js"

AWS_ID = "AKIA" + _chars("aws-id", 16, B32)
AWS_SPLIT_ID = "AKIA" + _chars("aws-split", 16, B32)
AWS_SECRET = _chars("aws-secret", 40, B64)
GH_CLASSIC = "ghp" + "_" + _chars("ghp", 36)
GH_FINE = "github" + "_pat_" + _chars("pat1", 22) + "_" + _chars("pat2", 59)
GH_APP = "ghs" + "_" + _chars("ghs", 36)
GH_ALLOWED = "ghp" + "_" + _chars("ghp-allowed", 36)
GITLAB = "glpat" + "-" + _chars("glpat", 20, URLSAFE)
SLACK_BOT = "xoxb" + "-" + _chars("sb1", 12, _DIGITS) + "-" + _chars("sb2", 13, _DIGITS) + "-" \
    + _chars("sb3", 24)
SLACK_HOOK_PATH = "T" + _chars("sw1", 8, _UPPER + _DIGITS) + "/B" + _chars("sw2", 10, _UPPER) \
    + "/" + _chars("sw3", 24)
STRIPE_LIVE = "sk" + "_live_" + _chars("stripe", 99)
STRIPE_RESTRICTED = "rk" + "_live_" + _chars("rk", 99)
NPM = "npm" + "_" + _chars("npm", 36)
SENDGRID = "SG" + "." + _chars("sg1", 22, URLSAFE) + "." + _chars("sg2", 43, URLSAFE)
TWILIO_KEY = "SK" + _chars("twilio", 32, HEX)
TWILIO_TOKEN = _chars("twilio-token", 32, HEX)
MAILGUN = "key" + "-" + _chars("mailgun", 32, HEX)
GOOGLE = "AIza" + _chars("google", 35, URLSAFE)
AZURE_KEY = _chars("azure", 86, B64) + "=="
JWT = ".".join([
    _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()),
    _b64url(json.dumps({"sub": "svc-build", "iat": 1767225600}).encode()),
    _chars("jwt-sig", 43, URLSAFE),
])
RSA_PEM, RSA_BODY = _pem("RSA", "rsa")
EC_PEM, EC_BODY = _pem("EC", "ec", 4)
SSH_PEM, SSH_BODY = _pem("OPENSSH", "ssh", 7)
PKCS8_PEM, PKCS8_BODY = _pem("", "gcp", 8)
PEM_B64 = base64.b64encode(_pem("RSA", "b64")[0].encode()).decode()
URL_PW = _chars("url-pw", 14)
DB_PW = _chars("db-pw", 18)
ADO_PW = "Xk9#" + _chars("ado", 6)
SHORT_PW = "T7r!" + _chars("short", 5)
LONG_PW = _chars("long-pw", 28, B64)
CRLF_PW = "Qz8" + _chars("crlf", 9)
JSON_PW = "w9" + _chars("json-pw", 10) + "!"
ENV_SECRET = _chars("django", 50, ALNUM + "!@#%^*(-_=+)")
HEROKU = "-".join(_chars(f"heroku{i}", n, HEX) for i, n in enumerate((8, 4, 4, 4, 12)))
DATADOG = _chars("datadog", 32, HEX)
DISCORD_BOT = "MT" + _chars("discord1", 24) + "." + _chars("discord2", 6, URLSAFE) + "." \
    + _chars("discord3", 38, URLSAFE)
DISCORD_HOOK = _chars("dh1", 18, _DIGITS) + "/" + _chars("dh2", 68, URLSAFE)
TELEGRAM = _chars("tg1", 10, _DIGITS) + ":AA" + _chars("tg2", 33, URLSAFE)
OPENAI = "sk-" + "proj-" + _chars("oa1", 74, URLSAFE) + "T3Blbk" + "FJ" + _chars("oa2", 74, URLSAFE)
ANTHROPIC = "sk-" + "ant-api03-" + _chars("anthropic", 93, URLSAFE) + "AA"
HUGGINGFACE = "hf" + "_" + _chars("hf", 34, _UPPER + _LOWER)
PYPI = "pypi" + "-AgEIcHlwaS5vcmc" + _chars("pypi", 150, URLSAFE)
SHOPIFY = "shpat" + "_" + _chars("shopify", 32, HEX)
DIGITALOCEAN = "dop" + "_v1_" + _chars("do", 64, HEX)
DATABRICKS = "dapi" + _chars("databricks", 32, HEX)
BEARER = _chars("bearer", 40, URLSAFE)
MAILCHIMP = _chars("mailchimp", 32, HEX) + "-us" + "14"
SQUARE = "EAAA" + _chars("square", 60, URLSAFE)
ARTIFACTORY = "AKCp" + _chars("artifactory", 69)

_GCP_KEY = {
    "type": "service_account",
    "project_id": "acme-build",
    "private_key_id": _chars("gcp-kid", 40, HEX),
    "private_key": PKCS8_PEM + "\n",
    "client_email": "builder@acme-build.iam.gserviceaccount.com",
    "client_id": _chars("gcp-cid", 21, _DIGITS),
    "token_uri": "https://oauth2.googleapis.com/token",
}


def _py(body: str) -> str:
    return textwrap.dedent(body).lstrip("\n")


CASES: tuple[Case, ...] = (
    # -- app/settings.py ---------------------------------------------------------------------
    _c("aws-access-key-id", PY, f'AWS_ACCESS_KEY_ID = "{AWS_ID}"\n', AWS_ID, "aws-access-key"),
    _c("aws-secret-access-key", PY, f'aws_secret_access_key = "{AWS_SECRET}"\n', AWS_SECRET,
       "aws-secret-key"),
    _c("aws-key-split-over-two-lines", PY, _py(f'''
        LEGACY_KEY_ID = ("{AWS_SPLIT_ID[:10]}"
                         "{AWS_SPLIT_ID[10:]}")
        '''), (AWS_SPLIT_ID[:10], AWS_SPLIT_ID, AWS_SPLIT_ID[10:]), "aws-access-key"),
    _c("github-classic", PY, f'GITHUB_TOKEN = "{GH_CLASSIC}"\n', GH_CLASSIC, "github-token"),
    _c("github-fine-grained", PY, f'gh = Github(auth=Token("{GH_FINE}"))\n', GH_FINE,
       "github-token"),
    _c("github-app", PY, f'INSTALLATION = "{GH_APP}"\n', GH_APP, "github-token"),
    _c("gitlab", PY, f'gl = gitlab.Gitlab(url, private_token="{GITLAB}")\n', GITLAB,
       "gitlab-token"),
    _c("slack-bot", PY, f'slack = WebClient("{SLACK_BOT}")\n', SLACK_BOT, "slack-token"),
    _c("slack-webhook", PY, f'HOOK = "https://hooks.slack.com/services/{SLACK_HOOK_PATH}"\n',
       SLACK_HOOK_PATH, "slack-webhook"),
    _c("stripe-live", PY, f'stripe.api_key = "{STRIPE_LIVE}"\n', STRIPE_LIVE, "stripe-live-key"),
    _c("stripe-restricted", PY, f'REPORTING = "{STRIPE_RESTRICTED}"\n', STRIPE_RESTRICTED,
       "stripe-live-key"),
    _c("sendgrid", PY, f'sg = SendGridAPIClient("{SENDGRID}")\n', SENDGRID, "sendgrid-api-key"),
    _c("twilio-api-key", PY, f'tw = Client("{TWILIO_KEY}", os.environ["TW_SECRET"])\n',
       TWILIO_KEY, "twilio-api-key"),
    _c("twilio-auth-token", PY, f'TWILIO_AUTH_TOKEN = "{TWILIO_TOKEN}"\n', TWILIO_TOKEN,
       "generic-secret"),
    _c("mailgun", PY, f'requests.post(url, auth=("api", "{MAILGUN}"))\n', MAILGUN,
       "mailgun-api-key"),
    _c("google-api-key", PY, f'MAPS = "{GOOGLE}"\n', GOOGLE, "google-api-key"),
    _c("azure-storage-connection-string", PY, _py(f'''
        BLOB = ("DefaultEndpointsProtocol=https;AccountName=acmeassets;AccountKey={AZURE_KEY};"
                "EndpointSuffix=core.windows.net")
        '''), AZURE_KEY, "azure-storage-key"),
    _c("jwt", PY, f'SERVICE_JWT = "{JWT}"\n', JWT, "jwt"),
    _c("rsa-private-key", PY, f'SIGNING = """{RSA_PEM}\n"""\n', RSA_BODY, "private-key"),
    _c("ec-private-key", PY, f'EC = """\n{EC_PEM}\n"""\n', EC_BODY, "private-key"),
    _c("openssh-private-key", PY, f'DEPLOY_KEY = """{SSH_PEM}\n"""\n', SSH_BODY, "private-key"),
    _c("private-key-base64-blob", PY, f'KEY_B64 = "{PEM_B64}"\n', PEM_B64,
       "private-key-base64"),
    _c("basic-auth-url", PY, f'REPO = "https://deploy:{URL_PW}@git.acme.internal/app.git"\n',
       URL_PW, "url-password"),
    _c("db-url", PY, f'DATABASE_URL = "postgres://app:{DB_PW}@db.internal:5432/app"\n', DB_PW,
       "url-password"),
    _c("ado-connection-string", PY,
       f'MSSQL = "Server=tcp:sql.acme.internal;User ID=sa;Password={ADO_PW};"\n', ADO_PW,
       "password"),
    _c("password-short", PY, f'password = "{SHORT_PW}"\n', SHORT_PW, "password"),
    _c("password-long", PY, f'DB_PASSWORD = "{LONG_PW}"\n', LONG_PW, "generic-secret"),
    _c("allow-marked-token", PY,
       f'FIXTURE_TOKEN = "{GH_ALLOWED}"  # ocr-hook: allow-secret\n', GH_ALLOWED,
       "github-token", finding=False),
    _c("huggingface", PY, f'login(token="{HUGGINGFACE}")\n', HUGGINGFACE, "huggingface-token"),
    _c("openai", PY, f'client = OpenAI(api_key="{OPENAI}")\n', OPENAI, "openai-api-key"),
    _c("anthropic", PY, f'claude = Anthropic(api_key="{ANTHROPIC}")\n', ANTHROPIC,
       "anthropic-api-key"),
    _c("discord-bot", PY, f'bot.run("{DISCORD_BOT}")\n', DISCORD_BOT, "discord-bot-token"),
    _c("telegram-bot", PY, f'bot = telebot.TeleBot("{TELEGRAM}")\n', TELEGRAM,
       "telegram-bot-token"),
    _c("mailchimp", PY, f'mc = MailchimpMarketing.Client({{"api_key": "{MAILCHIMP}"}})\n',
       MAILCHIMP, "mailchimp-api-key"),
    _c("square", PY, f'square = Client(access_token="{SQUARE}")\n', SQUARE, "square-token"),
    _c("bearer-header", PY, f'HEADERS = {{"Authorization": "Bearer {BEARER}"}}\n', BEARER,
       "generic-secret"),
    # -- deploy/publish.sh -------------------------------------------------------------------
    _c("npm", SH, f'echo "//registry.npmjs.org/:_authToken={NPM}" > ~/.npmrc\n', NPM,
       "npm-token"),
    _c("pypi", SH, f"twine upload -u __token__ -p {PYPI} dist/*\n", PYPI, "pypi-token"),
    _c("env-secret-key", SH, f"export DJANGO_SECRET_KEY='{ENV_SECRET}'\n", ENV_SECRET,
       "generic-secret"),
    _c("heroku", SH, f"export HEROKU_API_KEY={HEROKU}\n", HEROKU, "generic-secret"),
    _c("datadog", SH, f"DD_API_KEY={DATADOG} datadog-agent run\n", DATADOG,
       "secret-env-assignment"),
    _c("discord-webhook", SH,
       f"curl -X POST https://discord.com/api/webhooks/{DISCORD_HOOK} -d @msg.json\n",
       DISCORD_HOOK, "discord-webhook"),
    _c("shopify", SH, f"curl -H 'X-Shopify-Access-Token: {SHOPIFY}' $SHOP/orders.json\n",
       SHOPIFY, "shopify-token"),
    _c("digitalocean", SH, f"doctl auth init -t {DIGITALOCEAN}\n", DIGITALOCEAN,
       "digitalocean-token"),
    _c("artifactory", SH, f'curl -H "X-JFrog-Art-Api:{ARTIFACTORY}" "$ARTIFACTORY/api/repositories"\n',
       ARTIFACTORY, "artifactory-token"),
    _c("databricks", SH, f"databricks configure --host $HOST --token {DATABRICKS}\n",
       DATABRICKS, "databricks-token"),
    # -- deploy/legacy.ini (CRLF) ------------------------------------------------------------
    _c("password-crlf", INI, f"[database]\r\nuser = app\r\npassword = {CRLF_PW}\r\n", CRLF_PW,
       "password"),
    # -- config/database.json (password value on the line after its key) --------------------
    _c("password-multiline-json", DB_JSON, json.dumps(
        {"database": {"host": "db.internal", "user": "app", "password": "\x00"}}, indent=2
    ).replace('"password": "\\u0000"', f'"password":\n      "{JSON_PW}"') + "\n", JSON_PW,
       "password"),
    # -- config/service-account.json ---------------------------------------------------------
    _c("gcp-service-account-json", SA_JSON, json.dumps(_GCP_KEY, indent=2) + "\n",
       tuple(b for b in PKCS8_BODY), "gcp-service-account-key"),
)


def corpus_files() -> dict[str, str]:
    """path → file text: the snippets of each file concatenated in CASES order."""
    files: dict[str, str] = {}
    for case in CASES:
        files[case.file] = files.get(case.file, "") + case.text
    return files


def case_lines() -> dict[str, tuple[int, int]]:
    """case name → (first, last) 1-based line of its secret in ``corpus_files()[case.file]``."""
    offsets: dict[str, int] = {}
    out: dict[str, tuple[int, int]] = {}
    for case in CASES:
        base = offsets.get(case.file, 0)
        out[case.name] = (base + case.line, base + case.last_line)
        offsets[case.file] = base + case.text.count("\n")
    return out


def all_leaks() -> tuple[str, ...]:
    """Every substring that must never appear in a request to the model."""
    return tuple(leak for case in CASES for leak in case.leaks)
