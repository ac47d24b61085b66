"""A corpus of credentials by shape family: realistic FAKE secrets, each a line or a few in the
kind of file it lives in, and realistic text that holds no secret. Used by
``tests/secrets/test_shape_corpus.py`` and ``bench/bench_secrets.py --corpus shapes``.

The fakes. Every random part is derived from a seed with SHA-256 (``_r``) when this module is
imported, and every format prefix is written in two pieces (``"gh" + "p_"``), so this source holds
no string that a secret scanner (ocr-hook's own rules, GitHub push protection, gitleaks) would
report, and none was ever issued by anyone. Where the alphabet of a format allows it, the random
part starts with ``FAKE`` (or a password holds ``Fake``/``F4ke``) so that a human sees at once
that the value is made up; hex and bech32 formats have no such room.

What counts as a secret here (and in the rules): a value that would let someone in, whatever
file it is in, including test files: a password with a digit, symbol or capital under a
password name is a secret even in ``tests/`` (mark such a fixture ``ocr-hook: allow-secret``:
no finding, still redacted). What does not count: placeholders (``changeme``, ``<your-token>``,
``${API_KEY}``, ``xxxxxxxx``, ``…EXAMPLE``, ``{{ .Values.x }}``), references to values
(``os.environ["X"]``, ``$TOKEN``, ``process.env.X``, ``$jwt->encode([``, calls, member access),
digests and ids in their usual places (git SHAs, ``sha256:``/``sha512-`` integrity hashes, lock
files, image digests, UUIDs as ids), public material (public keys, certificates, data URIs),
and the forms that name a flag without a value (``mysql -p`` that prompts, ``--password-stdin``).

Each :class:`Shape` is one secret with its context; ``shape`` names its family and form
(``url-password/at-and-slash``): the corpus has at least 40 distinct ones. Each :class:`Clean`
is a non-secret text that redaction must leave unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import textwrap
from dataclasses import dataclass

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"  # upper case, as age prints its secret keys
DASH5 = "-" * 5


def _r(seed: str, n: int, alphabet: str = ALNUM) -> str:
    """``n`` characters of ``alphabet``, deterministic in ``seed`` (pseudo-random, not secret)."""
    out: list[str] = []
    counter = 0
    while len(out) < n:
        digest = hashlib.sha256(f"shapes:{seed}:{counter}".encode()).digest()
        out.extend(alphabet[b % len(alphabet)] for b in digest)
        counter += 1
    return "".join(out[:n])


def _f(seed: str, n: int, alphabet: str = ALNUM) -> str:
    """Like ``_r`` but starting with ``FAKE`` (the alphabet must hold those letters)."""
    return "FAKE" + _r(seed, n - 4, alphabet)


def _pw(seed: str, special: str = "!") -> str:
    """A fake password: ``F4ke`` + 8 random letters and digits + ``special`` + 2 digits."""
    return "F4ke" + _r(seed, 8) + special + _r(seed + "#", 2, DIGITS)


def _uuid(seed: str) -> str:
    return "-".join(_r(f"{seed}{i}", n, HEX) for i, n in enumerate((8, 4, 4, 4, 12)))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _pem(label: str, seed: str, first: str, lines: int = 5, width: int = 64
         ) -> tuple[str, tuple[str, ...]]:
    """A fake PEM-armoured block ``-----BEGIN <label>-----`` ... and its body lines."""
    body = [first + _r(seed, width - len(first), B64)]
    body += [_r(f"{seed}{i}", width, B64) for i in range(1, lines - 1)]
    body.append(_r(f"{seed}end", 20, B64) + "==")
    text = "\n".join([f"{DASH5}BEGIN {label}{DASH5}", *body, f"{DASH5}END {label}{DASH5}"])
    return text, tuple(body)


@dataclass(frozen=True)
class Shape:
    """One fake secret in context. ``path``: the file it is in (its name gives the file type);
    ``text``: the file's text; ``leaks``: every substring that must be gone after ``redact``
    (the value, or each piece or line of a value written in pieces); ``type``: the placeholder
    type expected; ``line``: 1-based line of the first leak (where the finding is)."""

    name: str
    shape: str
    path: str
    text: str
    leaks: tuple[str, ...]
    type: str

    @property
    def line(self) -> int:
        return next(i for i, row in enumerate(self.text.split("\n"), 1) if self.leaks[0] in row)


@dataclass(frozen=True)
class Clean:
    """A text without any secret (``why`` says what it is): redaction leaves it unchanged."""

    name: str
    path: str
    text: str
    why: str


def _t(body: str) -> str:
    return textwrap.dedent(body).lstrip("\n")


def _s(name: str, shape: str, path: str, body: str, leaks: str | tuple[str, ...],
       type_: str) -> Shape:
    return Shape(name, shape, path, _t(body), (leaks,) if isinstance(leaks, str) else leaks,
                 type_)


# ---- values (prefixes in two pieces) ------------------------------------------------------
GH = "gh" + "p_"
AWS_ID = "AK" + "IA" + _r("aws-id", 16, UPPER + "234567")
AWS_JOIN = "AK" + "IA" + _r("aws-join", 16, UPPER + "234567")
AWS_GO = "AK" + "IA" + _r("aws-go", 16, UPPER + "234567")
GH_SPLIT = GH + _f("gh-split", 36)
GH_TEMPLATE = GH + _f("gh-template", 36)
GH_SHELL = GH + _f("gh-shell", 36)
GH_JS_JOIN = GH + _f("gh-js-join", 36)
GH_URL = GH + _f("gh-url", 36)
GH_NPM = GH + _f("gh-npm", 36)
GH_TOML = GH + _f("gh-toml", 36)
STRIPE_TPL = "sk" + "_live_" + _f("stripe-tpl", 24)
STRIPE_SQL = "sk" + "_live_" + _f("stripe-sql", 24)
STRIPE_LUA = "rk" + "_live_" + _f("stripe-lua", 24)
STRIPE_TEST = "sk" + "_test_" + _f("stripe-test", 99)
STRIPE_WHSEC = "wh" + "sec_" + _f("whsec", 32)
SLACK_PHP = "xo" + "xb-" + _r("slack-php1", 12, DIGITS) + "-" + _r("slack-php2", 13, DIGITS) \
    + "-" + _f("slack-php3", 24)
SLACK_ROTATE = "xo" + "xe-1-" + _f("slack-rotate", 146)
GITLAB_GO = "gl" + "pat-" + _f("gitlab-go", 20, URLSAFE)
VAULT_SHORT = "hv" + "s." + _f("vault-short", 24)
VAULT_LONG = "hv" + "s.CAESI" + _r("vault-long", 86, URLSAFE)
VAULT_BATCH = "hv" + "b.AAAAAQ" + _r("vault-batch", 132, URLSAFE)
VAULT_GO = "hv" + "s." + _f("vault-go", 24)
_MAPBOX_HEAD = base64.urlsafe_b64encode(b'{"u":"acme-maps","a":"clfake0000"}').decode().rstrip("=")
MAPBOX_PK = "p" + "k." + _MAPBOX_HEAD + "." + _f("mapbox-pk", 22, URLSAFE)
MAPBOX_SK = "s" + "k." + _MAPBOX_HEAD + "." + _f("mapbox-sk", 22, URLSAFE)
DOPPLER = "dp" + ".st.prd." + _f("doppler", 40)
TFC = _r("tfc1", 14) + ".atlas" + "v1." + _f("tfc2", 67, URLSAFE)
AZURE_AD = _r("azad1", 3) + "8" + "Q~" + _f("azad2", 34, ALNUM + "_~.")
GOOGLE_OAUTH = "ya" + "29.a0Af" + _f("ya29", 120, URLSAFE)
DOCKER_PAT = "dckr" + "_pat_" + _f("docker", 27, URLSAFE)
GRAFANA = "gl" + "sa_" + _f("grafana1", 32) + "_" + _r("grafana2", 8, HEX)
SENTRY = "sntr" + "yu_" + _r("sentry", 64, HEX)
LINEAR = "lin" + "_api_" + _f("linear", 40)
POSTMAN = "PM" + "AK-" + _r("postman1", 24, HEX) + "-" + _r("postman2", 34, HEX)
PSCALE = "pscale" + "_pw_" + _f("pscale", 43, URLSAFE)
TAILSCALE = "tskey" + "-auth-" + _f("ts1", 12) + "CNTRL-" + _f("ts2", 33)
GROQ = "gs" + "k_" + _f("groq", 52)
NEWRELIC = "NR" + "AK-" + _f("newrelic", 27, UPPER + DIGITS)
SUPABASE = "sb" + "p_" + _r("supabase", 40, HEX)
AWS_STS = "IQoJb3JpZ2lu" + "X2Vj" + _r("sts", 380, B64) + "=="
AGE_KEY = "AGE-SECRET" + "-KEY-1" + _f("age", 58, BECH32)
AGE_ENV = "AGE-SECRET" + "-KEY-1" + _f("age-env", 58, BECH32)
NPM_UUID = _uuid("npm-uuid")
YARN_UUID = _uuid("yarn-uuid")
NPM_UUID_TPL = _uuid("npm-uuid-template")
NPM_AUTH = _b64("ci-publisher:" + _pw("npm-auth"))
NPM_PASSWORD = _b64(_pw("npm-password"))
GITHUB_40HEX = _r("pygithub", 40, HEX)
OPENAI_LIKE = "sk-" + _f("openai-like", 48)
TWILIO_SID = "AC" + _r("twilio-sid", 32, HEX)
TWILIO_TOKEN = _r("twilio-token", 32, HEX)
ALGOLIA_ADMIN = _r("algolia", 32, HEX)
STREAM_SECRET = _f("stream", 64, ALNUM)
MAILGUN_NEW = _r("mg1", 32, HEX) + "-" + _r("mg2", 8, HEX) + "-" + _r("mg3", 8, HEX)
RUST_KEY = _f("rust-client", 40)
OCTOKIT = _r("octokit", 40, HEX)
SETTER_JAVA = _f("setter-java", 40)
SETTER_PY = _f("setter-py", 32, URLSAFE)
BEARER_CURL = _f("bearer-curl", 40, URLSAFE)
BASIC_CURL = _b64("deploy:" + _pw("basic-curl"))
BEARER_HTTP = _f("bearer-http", 48, URLSAFE)
HTTP_BASIC_PW = _pw("http-basic", "$")
DRF_TOKEN = _r("drf", 40, HEX)
BEARER_GO = _f("bearer-go", 43, URLSAFE)
BASIC_JS = _b64("svc-reports:" + _pw("basic-js"))
BEARER_JAVA = _f("bearer-java", 40, URLSAFE)
BASIC_NGINX = _b64("metrics:" + _pw("basic-nginx"))
BEARER_HAR = _f("bearer-har", 64, URLSAFE)
BASIC_PS = _b64("admin:" + _pw("basic-ps"))
SLACK_HOOK_PATH = "T" + _r("jenkins1", 8, UPPER + DIGITS) + "/B" + _r("jenkins2", 10, UPPER) \
    + "/" + _f("jenkins3", 24)
DOCKER_AUTH = _b64("acme-ci:" + _pw("docker-auth"))
PYPI_TOKEN = "pypi" + "-AgEIcHlwaS5vcmc" + _r("pypi", 150, URLSAFE)
KUBE_B64 = _b64(_pw("kube-secret"))
JWT_HTTP = ".".join([
    base64.urlsafe_b64encode(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()).decode().rstrip("="),
    base64.urlsafe_b64encode(json.dumps({"sub": "svc-fake", "iat": 1767225600}).encode()
                             ).decode().rstrip("="),
    _f("jwt-http", 86, URLSAFE),
])

PW = {k: _pw(k, sp) for k, sp in [
    ("url-at", "@"), ("url-colon", ":"), ("url-pct", "!"), ("url-redis", "@"), ("url-email", "/"),
    ("url-mongo", "#"), ("jdbc", "!"), ("pip", "@"), ("mysqldump", "!"), ("mysql-attached", "#"),
    ("mysqladmin", "%"), ("redis-cli", "!"), ("pgpassword", "!"), ("mysql-pwd", "^"),
    ("mongosh", "!"), ("sqlcmd", "!"), ("docker-login", "!"), ("helm", "!"), ("curl-u", "!"),
    ("wget", "!"), ("sshpass", "!"), ("rediscli-auth", "!"), ("az", "!"), ("kubectl", "!"),
    ("maven", "!"), ("nuget", "!"), ("auth-tuple", "!"), ("basic-auth-ctor", "!"),
    ("php-pair", "!"), ("appsettings", "!"),
]}
PW["url-pct"] = "F4ke%40" + _r("url-pct", 6) + "%2F" + _r("url-pct2", 4)
PW["url-colon"] = "F4ke:" + _r("url-colon", 6) + "#" + _r("url-colon2", 4)
PW["url-at"] = "p@ss/w0rd-F4ke" + _r("url-at", 4)

RSA_TEST = "MIIEpAIBAAKCAQEA"
SSH_PEM, SSH_BODY = _pem("OPENSSH PRIVATE KEY", "ssh", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", 7, 70)
PGP_PEM_RAW, PGP_BODY = _pem("PGP PRIVATE KEY BLOCK", "pgp", "lQOYBGX", 8)
PGP_PEM = PGP_PEM_RAW.replace("BLOCK-----\n", "BLOCK-----\nComment: fake release key\n\n", 1) \
    .replace(f"\n{DASH5}END", f"\n={_r('pgp-crc', 4, B64)}\n{DASH5}END")
P8_PEM, P8_BODY = _pem("PRIVATE KEY", "pkcs8", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 6)
P8E_PEM, P8E_BODY = _pem("ENCRYPTED PRIVATE KEY", "pkcs8e", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq", 6)
EC_PEM, EC_BODY = _pem("EC PRIVATE KEY", "ec", "MHcCAQEEI", 4)
RSA_PEM, RSA_BODY = _pem("RSA PRIVATE KEY", "rsa-md", RSA_TEST, 5)
PPK_BODY = tuple(_r(f"ppk{i}", 64, B64) for i in range(3)) + (_r("ppk-end", 40, B64) + "==",)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + row for row in text.split("\n"))


SHAPES: tuple[Shape, ...] = (
    # -- URL user-info passwords with reserved characters ---------------------------------
    _s("url-at-and-slash", "url-password/at-and-slash", ".env", f"""
        APP_ENV=production
        DATABASE_URL=postgres://app:{PW["url-at"]}@db.internal:5432/app
        """, PW["url-at"], "url-password"),
    _s("url-colon-hash", "url-password/colon-and-hash", "config/database.yml", f"""
        production:
          adapter: mysql2
          url: "mysql2://shop:{PW["url-colon"]}@mysql.internal:3306/shop"
        """, PW["url-colon"], "url-password"),
    _s("url-percent-encoded", "url-password/percent-encoded", "app/celery.py", f"""
        broker_url = "amqp://worker:{PW["url-pct"]}@rabbit.internal:5672/jobs"
        """, PW["url-pct"], "url-password"),
    _s("url-redis-no-user", "url-password/no-user", "docker-compose.yml", f"""
        services:
          api:
            environment:
              REDIS_URL: redis://:{PW["url-redis"]}@cache:6379/0
        """, PW["url-redis"], "url-password"),
    _s("url-email-user", "url-password/email-user", "src/mailer.ts", f"""
        const transport = nodemailer.createTransport("smtps://alerts@acme.io:{PW["url-email"]}@smtp.acme.io:465");
        """, PW["url-email"], "url-password"),
    _s("url-mongodb-srv", "url-password/srv-with-query", ".env.production", f"""
        MONGO_URI=mongodb+srv://svc:{PW["url-mongo"]}@cluster0.fake1.mongodb.net/prod?retryWrites=true
        """, PW["url-mongo"], "url-password"),
    _s("url-token-as-password", "url-password/token-as-password", "Jenkinsfile", f"""
        git url: 'https://ci-bot:{GH_URL}@github.com/acme/infra.git', branch: 'main'
        """, GH_URL, "github-token"),
    _s("url-jdbc-query", "url-password/query-parameter", "src/main/resources/db.properties", f"""
        jdbc.url=jdbc:postgresql://db.internal:5432/app?user=app&password={PW["jdbc"]}&ssl=true
        """, PW["jdbc"], "url-password"),
    _s("url-pip-index", "url-password/pip-index", "pip.conf", f"""
        [global]
        extra-index-url = https://ci:{PW["pip"]}@nexus.acme.io/repository/pypi/simple
        """, PW["pip"], "url-password"),
    # -- tokens with dots and underscores inside ------------------------------------------
    _s("vault-hvs-env", "vault/env", ".envrc", f"""
        export VAULT_ADDR=https://vault.acme.io
        export VAULT_TOKEN={VAULT_SHORT}
        """, VAULT_SHORT, "vault-token"),
    _s("vault-hvs-long-yaml", "vault/ci-yaml", ".github/workflows/deploy.yml", f"""
        jobs:
          deploy:
            env:
              VAULT_TOKEN: {VAULT_LONG}
        """, VAULT_LONG, "vault-token"),
    _s("vault-hvb-python", "vault/python-kwarg", "ops/secrets.py", f"""
        client = hvac.Client(url=VAULT_ADDR, token="{VAULT_BATCH}")
        """, VAULT_BATCH, "vault-token"),
    _s("vault-go-settoken", "vault/go-setter", "internal/vault/client.go", f"""
        \tclient.SetToken("{VAULT_GO}")
        """, VAULT_GO, "vault-token"),
    _s("mapbox-pk-js", "mapbox/js-member", "web/map.js", f"""
        mapboxgl.accessToken = '{MAPBOX_PK}';
        """, MAPBOX_PK, "mapbox-token"),
    _s("mapbox-sk-gradle", "mapbox/properties", "gradle.properties", f"""
        org.gradle.jvmargs=-Xmx2g
        MAPBOX_DOWNLOADS_TOKEN={MAPBOX_SK}
        """, MAPBOX_SK, "mapbox-token"),
    _s("doppler-service", "doppler/env", ".env", f"""
        DOPPLER_TOKEN={DOPPLER}
        """, DOPPLER, "doppler-token"),
    _s("terraform-cloud", "terraform-cloud/hcl", ".terraformrc", f"""
        credentials "app.terraform.io" {{
          token = "{TFC}"
        }}
        """, TFC, "terraform-cloud-token"),
    _s("azure-ad-secret", "azure-client-secret/json", "appsettings.Production.json", f"""
        {{
          "AzureAd": {{
            "ClientId": "{_uuid("azad-client")}",
            "ClientSecret": "{AZURE_AD}"
          }}
        }}
        """, AZURE_AD, "azure-client-secret"),
    _s("google-ya29-curl", "google-oauth/curl-bearer", "scripts/list-buckets.sh", f"""
        curl -s -H "Authorization: Bearer {GOOGLE_OAUTH}" https://storage.googleapis.com/storage/v1/b
        """, GOOGLE_OAUTH, "google-oauth-token"),
    _s("slack-rotation", "slack/rotation-token", ".env", f"""
        SLACK_REFRESH_TOKEN={SLACK_ROTATE}
        """, SLACK_ROTATE, "slack-token"),
    _s("docker-hub-pat", "docker-hub/pipe-to-login", ".gitlab-ci.yml", f"""
        before_script:
          - echo "{DOCKER_PAT}" | docker login -u acme --password-stdin
        """, DOCKER_PAT, "docker-hub-token"),
    _s("stripe-test-require", "stripe/require-call", "server/billing.js", f"""
        const stripe = require('stripe')('{STRIPE_TEST}');
        """, STRIPE_TEST, "stripe-test-key"),
    _s("stripe-webhook", "stripe/webhook-secret", ".env.local", f"""
        STRIPE_WEBHOOK_SECRET={STRIPE_WHSEC}
        """, STRIPE_WHSEC, "stripe-webhook-secret"),
    _s("grafana-sa-http", "grafana/http-file", "api/grafana.http", f"""
        GET https://grafana.acme.io/api/dashboards/home
        Authorization: Bearer {GRAFANA}
        """, GRAFANA, "grafana-token"),
    _s("sentry-clirc", "sentry/ini", ".sentryclirc", f"""
        [auth]
        token={SENTRY}
        """, SENTRY, "sentry-token"),
    _s("linear-env", "linear/env", ".env", f"""
        LINEAR_API_KEY={LINEAR}
        """, LINEAR, "linear-api-key"),
    _s("postman-json", "postman/json", "postman/env.json", f"""
        {{"name": "ci", "values": [{{"key": "postmanApiKey", "value": "{POSTMAN}"}}]}}
        """, POSTMAN, "postman-api-key"),
    _s("planetscale-password", "planetscale/env", ".env", f"""
        DATABASE_PASSWORD={PSCALE}
        """, PSCALE, "planetscale-token"),
    _s("tailscale-dockerfile", "tailscale/dockerfile-env", "Dockerfile", f"""
        FROM tailscale/tailscale:stable
        ENV TS_AUTHKEY={TAILSCALE}
        """, TAILSCALE, "tailscale-key"),
    _s("groq-python", "groq/python-kwarg", "bot/llm.py", f"""
        client = Groq(api_key="{GROQ}")
        """, GROQ, "groq-api-key"),
    _s("newrelic-yaml", "newrelic/yaml", "deploy/values.yaml", f"""
        newrelic:
          apiKey: {NEWRELIC}
        """, NEWRELIC, "newrelic-key"),
    _s("supabase-ci", "supabase/ci-env", ".github/workflows/db.yml", f"""
        env:
          SUPABASE_ACCESS_TOKEN: {SUPABASE}
        """, SUPABASE, "supabase-token"),
    _s("aws-session-token", "aws/session-token-ini", "deploy/aws-credentials", f"""
        [ci]
        region = eu-west-1
        aws_session_token = {AWS_STS}
        """, AWS_STS, "aws-session-token"),
    # -- private keys in any file type ---------------------------------------------------
    _s("age-key-file", "age/key-file", "secrets/age-key.txt", f"""
        # created: 2026-01-05T10:12:00Z
        # public key: age1{_r("age-pub", 58, BECH32.lower())}
        {AGE_KEY}
        """, AGE_KEY, "age-secret-key"),
    _s("age-sops-env", "age/shell-env", ".envrc", f"""
        export SOPS_AGE_KEY={AGE_ENV}
        """, AGE_ENV, "age-secret-key"),
    Shape("openssh-no-extension", "pem/openssh-file", "deploy/id_ed25519", SSH_PEM + "\n",
          SSH_BODY, "private-key"),
    Shape("pgp-armored", "pem/pgp-armor", "keys/release-signing.asc", PGP_PEM + "\n", PGP_BODY,
          "private-key"),
    Shape("pkcs8-key-file", "pem/pkcs8-file", "certs/server.key", P8_PEM + "\n", P8_BODY,
          "private-key"),
    Shape("pkcs8-encrypted-k8s", "pem/yaml-block-scalar", "k8s/tls-secret.yaml",
          "apiVersion: v1\nkind: Secret\nstringData:\n  tls.key: |\n" + _indent(P8E_PEM, "    ")
          + "\n", P8E_BODY, "private-key"),
    Shape("ec-go-raw-string", "pem/go-raw-string", "internal/auth/testkey.go",
          "package auth\n\nconst signingKey = `" + EC_PEM + "`\n", EC_BODY, "private-key"),
    Shape("rsa-in-markdown", "pem/markdown-fence", "docs/runbook.md",
          "Paste this into the vault:\n\n```\n" + RSA_PEM + "\n```\n", RSA_BODY, "private-key"),
    Shape("putty-ppk", "pem/putty-ppk", "keys/deploy.ppk",
          "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy@ci\n"
          f"Public-Lines: 1\n{_r('ppk-pub', 64, B64)}\nPrivate-Lines: 4\n" + "\n".join(PPK_BODY)
          + f"\nPrivate-MAC: {_r('ppk-mac', 64, HEX)}\n", PPK_BODY, "private-key"),
    # -- positional tokens after SDK / client names --------------------------------------
    _s("sdk-openai-positional", "client/python-positional", "tools/summarize.py", f"""
        client = OpenAI("{OPENAI_LIKE}")
        """, OPENAI_LIKE, "client-token"),
    _s("sdk-pygithub", "client/python-brand", "scripts/release.py", f"""
        gh = Github("{GITHUB_40HEX}")
        """, GITHUB_40HEX, "client-token"),
    _s("sdk-twilio-second", "client/second-argument", "notify/sms.py", f"""
        client = Client("{TWILIO_SID}", "{TWILIO_TOKEN}")
        """, (TWILIO_SID, TWILIO_TOKEN), "client-token"),
    _s("sdk-go-factory", "client/go-factory", "internal/mail/send.go", f"""
        \tmg := mailgun.NewMailgun("mg.acme.io", "{MAILGUN_NEW}")
        """, MAILGUN_NEW, "client-token"),
    _s("sdk-php-static", "client/php-static-create", "app/Search.php", f"""
        $client = SearchClient::create('FAKEAPP01', '{ALGOLIA_ADMIN}');
        """, ALGOLIA_ADMIN, "client-token"),
    _s("sdk-java-new", "client/java-new", "src/main/java/acme/Chat.java", f"""
        StreamChatClient client = new StreamChatClient("fakeapikey", "{STREAM_SECRET}");
        """, STREAM_SECRET, "client-token"),
    _s("sdk-rust-new", "client/rust-new", "src/main.rs", f"""
        let client = Client::new("{RUST_KEY}");
        """, RUST_KEY, "client-token"),
    _s("sdk-js-new-octokit", "client/js-new", "scripts/labels.mjs", f"""
        const octokit = new Octokit("{OCTOKIT}");
        """, OCTOKIT, "client-token"),
    _s("setter-java", "client/setter", "src/main/java/acme/Api.java", f"""
        client.setAccessToken("{SETTER_JAVA}");
        """, SETTER_JAVA, "client-token"),
    _s("setter-python", "client/setter-snake", "jobs/sync.py", f"""
        api.set_token("{SETTER_PY}")
        """, SETTER_PY, "client-token"),
    # -- Authorization header values ------------------------------------------------------
    _s("curl-bearer", "authorization/curl-bearer", "scripts/smoke.sh", f"""
        curl -sS -H "Authorization: Bearer {BEARER_CURL}" https://api.acme.io/v1/health
        """, BEARER_CURL, "authorization-header"),
    _s("curl-basic", "authorization/curl-basic", "scripts/deploy.sh", f"""
        curl -X POST -H 'Authorization: Basic {BASIC_CURL}' https://deploy.acme.io/hooks/release
        """, BASIC_CURL, "authorization-header"),
    _s("http-file-bearer", "authorization/http-file", "requests/orders.http", f"""
        ### list orders
        GET https://api.acme.io/v2/orders
        Authorization: Bearer {BEARER_HTTP}
        Accept: application/json
        """, BEARER_HTTP, "generic-secret"),
    _s("http-file-basic-plain", "authorization/http-file-basic-user-password",
       "requests/admin.http", f"""
        GET https://admin.acme.io/api/users
        Authorization: Basic admin {HTTP_BASIC_PW}
        """, HTTP_BASIC_PW, "authorization-header"),
    _s("http-file-jwt", "authorization/http-file-jwt", "requests/profile.http", f"""
        GET https://api.acme.io/v1/me
        Authorization: Bearer {JWT_HTTP}
        """, JWT_HTTP, "jwt"),
    _s("python-token-header", "authorization/python-dict", "client/api.py", f"""
        HEADERS = {{"Authorization": "Token {DRF_TOKEN}"}}
        """, DRF_TOKEN, "generic-secret"),
    _s("go-header-set", "authorization/go-header-set", "internal/http/client.go", f"""
        \treq.Header.Set("Authorization", "Bearer {BEARER_GO}")
        """, BEARER_GO, "authorization-header"),
    _s("js-basic-concat", "authorization/js-concatenated", "src/reports.js", f"""
        const res = await fetch(url, {{ headers: {{ Authorization: 'Basic ' + '{BASIC_JS}' }} }});
        """, BASIC_JS, "generic-secret"),
    _s("java-okhttp", "authorization/java-builder", "src/main/java/acme/Http.java", f"""
        Request req = new Request.Builder().url(url).header("Authorization", "Bearer {BEARER_JAVA}").build();
        """, BEARER_JAVA, "authorization-header"),
    _s("nginx-proxy-header", "authorization/nginx", "deploy/nginx.conf", f"""
        location /metrics {{
            proxy_set_header Authorization "Basic {BASIC_NGINX}";
        }}
        """, BASIC_NGINX, "authorization-header"),
    _s("har-header", "authorization/har-json", "fixtures/session.har", f"""
        {{"headers": [{{"name": "Authorization", "value": "Bearer {BEARER_HAR}"}}]}}
        """, BEARER_HAR, "authorization-header"),
    _s("powershell-basic", "authorization/powershell", "scripts/Deploy.ps1", f"""
        Invoke-RestMethod -Uri $uri -Headers @{{Authorization="Basic {BASIC_PS}"}}
        """, BASIC_PS, "generic-secret"),
    # -- password flags of database, cache and registry CLIs ------------------------------
    _s("mysqldump-p-quoted", "cli/mysqldump-p", "backup/nightly.sh", f"""
        mysqldump -u backup -p'{PW["mysqldump"]}' --single-transaction shop > shop.sql
        """, PW["mysqldump"], "cli-password"),
    _s("mysql-p-attached", "cli/mysql-p-attached", "Makefile", f"""
        db-shell:
        \tmysql -h db.internal -u root -p{PW["mysql-attached"]} shop
        """, PW["mysql-attached"], "cli-password"),
    _s("mysqladmin-long-flag", "cli/long-password-flag", "docker-compose.yml", f"""
        healthcheck:
          test: mysqladmin --user=root --password={PW["mysqladmin"]} ping
        """, PW["mysqladmin"], "cli-password"),
    _s("redis-cli-a", "cli/redis-cli-a", "ops/check-cache.sh", f"""
        redis-cli -h cache.internal -a {PW["redis-cli"]} --no-auth-warning PING
        """, PW["redis-cli"], "cli-password"),
    _s("pgpassword-env", "cli/pgpassword-prefix", "scripts/migrate.sh", f"""
        PGPASSWORD={PW["pgpassword"]} psql -h db.internal -U app -c 'select 1'
        """, PW["pgpassword"], "password"),
    _s("mysql-pwd-dockerfile", "cli/env-in-dockerfile-run", "docker/db/Dockerfile", f"""
        RUN MYSQL_PWD='{PW["mysql-pwd"]}' mysql -uroot -e "CREATE DATABASE shop"
        """, PW["mysql-pwd"], "password"),
    _s("mongosh-p", "cli/mongosh-p", "scripts/mongo-shell.sh", f"""
        mongosh "mongodb://db.internal:27017" -u admin -p {PW["mongosh"]} --authenticationDatabase admin
        """, PW["mongosh"], "cli-password"),
    _s("sqlcmd-P", "cli/sqlcmd-P", "db/restore.cmd", f"""
        sqlcmd -S tcp:sql.internal,1433 -U sa -P "{PW["sqlcmd"]}" -Q "RESTORE DATABASE shop"
        """, PW["sqlcmd"], "cli-password"),
    _s("docker-login-p", "cli/docker-login-p", ".gitlab-ci.yml", f"""
        script:
          - docker login registry.acme.io -u ci -p {PW["docker-login"]}
        """, PW["docker-login"], "cli-password"),
    _s("helm-registry-login", "cli/helm-password-flag", "ci/publish-chart.sh", f"""
        helm registry login ghcr.io --username acme-bot --password {PW["helm"]}
        """, PW["helm"], "cli-password"),
    _s("curl-u", "cli/curl-user-password", "scripts/upload.sh", f"""
        curl -u deploy:{PW["curl-u"]} -T app.tgz https://nexus.acme.io/repository/raw/app.tgz
        """, PW["curl-u"], "cli-password"),
    _s("wget-password", "cli/wget-password", "scripts/fetch.sh", f"""
        wget --user=ci --password={PW["wget"]} https://files.acme.io/artifacts/app.tgz
        """, PW["wget"], "cli-password"),
    _s("sshpass", "cli/sshpass-p", "scripts/ssh-deploy.sh", f"""
        sshpass -p '{PW["sshpass"]}' ssh deploy@10.0.0.5 'systemctl restart app'
        """, PW["sshpass"], "cli-password"),
    _s("rediscli-auth-env", "cli/rediscli-auth-env", "ops/flush.sh", f"""
        REDISCLI_AUTH={PW["rediscli-auth"]} redis-cli -h cache.internal FLUSHDB
        """, PW["rediscli-auth"], "password"),
    _s("az-login-p", "cli/az-login-p", "pipelines/azure-login.sh", f"""
        az login --service-principal -u {_uuid("az-app")} -p {PW["az"]} --tenant acme.onmicrosoft.com
        """, PW["az"], "cli-password"),
    _s("kubectl-from-literal", "cli/kubectl-from-literal", "k8s/bootstrap.sh", f"""
        kubectl create secret generic db --from-literal=username=app --from-literal=password={PW["kubectl"]}
        """, PW["kubectl"], "password"),
    # -- npm and yarn registry credentials ------------------------------------------------
    _s("npmrc-uuid", "npm/authtoken-uuid", ".npmrc", f"""
        registry=https://registry.npmjs.org/
        //registry.npmjs.org/:_authToken={NPM_UUID}
        """, NPM_UUID, "npm-token"),
    _s("npmrc-template-uuid", "npm/authtoken-in-unsupported-file", "ci/npmrc.template", f"""
        # copied to ~/.npmrc by the release job
        //registry.npmjs.org/:_authToken={NPM_UUID_TPL}
        """, NPM_UUID_TPL, "npm-token"),
    _s("npmrc-auth-base64", "npm/auth-base64", "ci/.npmrc", f"""
        _auth = {NPM_AUTH}
        always-auth = true
        """, NPM_AUTH, "npm-token"),
    _s("npmrc-github-packages", "npm/authtoken-github", "web/.npmrc", f"""
        @acme:registry=https://npm.pkg.github.com
        //npm.pkg.github.com/:_authToken={GH_NPM}
        """, GH_NPM, "github-token"),
    _s("npmrc-nexus-password", "npm/password-base64", ".npmrc", f"""
        //nexus.acme.io/repository/npm/:username=ci
        //nexus.acme.io/repository/npm/:_password={NPM_PASSWORD}
        """, NPM_PASSWORD, "npm-token"),
    _s("yarnrc-token", "npm/yarnrc-yml", ".yarnrc.yml", f"""
        npmRegistries:
          "https://registry.npmjs.org":
            npmAuthToken: "{YARN_UUID}"
        """, YARN_UUID, "npm-token"),
    # -- literal pieces joined into one value ---------------------------------------------
    _s("join-plus-java", "joined/plus-one-line", "src/main/java/acme/Ci.java", f"""
        private static final String TOKEN = "{GH_SPLIT[:6]}" + "{GH_SPLIT[6:]}";
        """, (GH_SPLIT[:6], GH_SPLIT[6:]), "github-token"),
    _s("join-python-join", "joined/python-str-join", "app/aws.py", f"""
        KEY_ID = "".join(["{AWS_JOIN[:4]}", "{AWS_JOIN[4:]}"])
        """, (AWS_JOIN[4:],), "aws-access-key"),
    _s("join-js-template-literal", "joined/js-template-literal-prefix", "src/pay.ts", f"""
        const key = `${{"{STRIPE_TPL[:8]}"}}{STRIPE_TPL[8:]}`;
        """, (STRIPE_TPL[8:],), "stripe-live-key"),
    _s("join-js-template-suffix", "joined/js-template-literal-suffix", "src/gh.ts", f"""
        const token = `{GH_TEMPLATE[:4]}${{"{GH_TEMPLATE[4:]}"}}`;
        """, (GH_TEMPLATE[4:],), "github-token"),
    _s("join-php-dot", "joined/php-dot", "config/slack.php", f"""
        $token = '{SLACK_PHP[:5]}' . '{SLACK_PHP[5:]}';
        """, (SLACK_PHP[5:],), "slack-token"),
    _s("join-go-const", "joined/go-plus", "internal/aws/keys.go", f"""
        \tconst keyID = "{AWS_GO[:8]}" + "{AWS_GO[8:]}"
        """, (AWS_GO[:8], AWS_GO[8:]), "aws-access-key"),
    _s("join-sql-pipes", "joined/sql-pipes", "db/seed.sql", f"""
        INSERT INTO settings (name, value) VALUES ('stripe', '{STRIPE_SQL[:8]}' || '{STRIPE_SQL[8:]}');
        """, (STRIPE_SQL[8:],), "stripe-live-key"),
    _s("join-js-array", "joined/js-array-join", "scripts/bot.js", f"""
        const token = ["{GH_JS_JOIN[:2]}", "{GH_JS_JOIN[2:4]}", "{GH_JS_JOIN[4:]}"].join("");
        """, (GH_JS_JOIN[4:],), "github-token"),
    _s("join-go-strings-join", "joined/go-strings-join", "cmd/sync/main.go", f"""
        \ttoken := strings.Join([]string{{"{GITLAB_GO[:6]}", "{GITLAB_GO[6:]}"}}, "")
        """, (GITLAB_GO[6:],), "gitlab-token"),
    _s("join-shell-adjacent", "joined/shell-adjacent", "scripts/release.sh", f"""
        GH_TOKEN="{GH_SHELL[:8]}""{GH_SHELL[8:]}" gh release create v1.2.0
        """, (GH_SHELL[:8], GH_SHELL[8:]), "github-token"),
    _s("join-lua-dots", "joined/lua-concat", "scripts/pay.lua", f"""
        local key = "{STRIPE_LUA[:8]}" .. "{STRIPE_LUA[8:]}"
        """, (STRIPE_LUA[8:],), "stripe-live-key"),
    # -- key/value forms of other file types ----------------------------------------------
    _s("maven-settings", "xml/maven-password", "settings.xml", f"""
        <server>
          <id>acme-releases</id>
          <username>ci</username>
          <password>{PW["maven"]}</password>
        </server>
        """, PW["maven"], "generic-secret"),
    _s("nuget-cleartext", "xml/nuget-key-value", "NuGet.config", f"""
        <packageSourceCredentials>
          <acme>
            <add key="Username" value="ci" />
            <add key="ClearTextPassword" value="{PW["nuget"]}" />
          </acme>
        </packageSourceCredentials>
        """, PW["nuget"], "generic-secret"),
    _s("appsettings-add-key", "xml/appsettings", "Web.config", f"""
        <appSettings>
          <add key="PaymentsApiKey" value="{PW["appsettings"]}" />
        </appSettings>
        """, PW["appsettings"], "generic-secret"),
    _s("requests-auth-tuple", "auth-pair/python-tuple", "jobs/export.py", f"""
        r = requests.get(url, auth=("exporter", "{PW["auth-tuple"]}"), timeout=10)
        """, PW["auth-tuple"], "password"),
    _s("aiohttp-basic-auth", "auth-pair/basic-auth-ctor", "svc/poll.py", f"""
        auth = aiohttp.BasicAuth("poller", "{PW["basic-auth-ctor"]}")
        """, PW["basic-auth-ctor"], "password"),
    _s("docker-config-auth", "docker/config-json-auth", ".docker/config.json", f"""
        {{"auths": {{"registry.acme.io": {{"auth": "{DOCKER_AUTH}"}}}}}}
        """, DOCKER_AUTH, "generic-secret"),
    _s("kube-secret-data", "kubernetes/secret-data-base64", "k8s/db-secret.yaml", f"""
        apiVersion: v1
        kind: Secret
        data:
          password: {KUBE_B64}
        """, KUBE_B64, "generic-secret"),
    _s("slack-webhook-jenkins", "slack/webhook-groovy", "ci/notify.groovy", f"""
        def hook = "https://hooks.slack.com/services/{SLACK_HOOK_PATH}"
        """, SLACK_HOOK_PATH, "slack-webhook"),
    _s("github-token-toml", "github/toml", "pyproject.toml", f"""
        [tool.semantic_release]
        token = "{GH_TOML}"
        """, GH_TOML, "github-token"),
    _s("aws-key-terraform", "aws/terraform-provider", "infra/main.tf", f"""
        provider "aws" {{
          region     = "eu-west-1"
          access_key = "{AWS_ID}"
        }}
        """, AWS_ID, "aws-access-key"),
    _s("pypi-pypirc", "pypi/pypirc", ".pypirc", f"""
        [pypi]
        username = __token__
        password = {PYPI_TOKEN}
        """, PYPI_TOKEN, "pypi-token"),
)


# ---- non-secrets ------------------------------------------------------------------------
SHA1 = _r("git-sha", 40, HEX)
SHA256 = _r("sha256", 64, HEX)
SRI = base64.b64encode(hashlib.sha384(b"app.js").digest()).decode()
INTEGRITY = base64.b64encode(hashlib.sha512(b"left-pad-1.3.0").digest()).decode()
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + hashlib.sha512(b"logo").digest() * 3).decode()
PUB_PEM = _pem("PUBLIC KEY", "pub", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 5)[0]
CERT_PEM = _pem("CERTIFICATE", "cert", "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa", 6)[0]


def _c(name: str, path: str, body: str, why: str) -> Clean:
    return Clean(name, path, _t(body), why)


CLEAN: tuple[Clean, ...] = (
    _c("precommit-rev", ".pre-commit-config.yaml", f"""
        repos:
          - repo: https://github.com/astral-sh/ruff-pre-commit
            rev: {SHA1}
        """, "a git SHA pinned as a revision"),
    _c("go-build-commit", "internal/version/version.go", f"""
        \tconst BuildCommit = "{SHA1}"
        """, "a git SHA under a harmless name"),
    _c("docker-digest", "Dockerfile", f"""
        FROM python:3.12-slim@sha256:{SHA256}
        """, "an image digest"),
    _c("sha256sum-check", "scripts/install-terraform.sh", f"""
        echo "{SHA256}  terraform_1.9.0_linux_amd64.zip" | sha256sum -c -
        """, "a checksum fed to sha256sum"),
    _c("poetry-lock-hash", "poetry.lock", f"""
        files = [
            {{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{SHA256}"}},
        ]
        """, "a lock-file hash"),
    _c("npm-lock-integrity", "package-lock.json", f"""
        "node_modules/left-pad": {{
          "version": "1.3.0",
          "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",
          "integrity": "sha512-{INTEGRITY}"
        }}
        """, "npm lock integrity"),
    _c("yarn-lock-integrity", "yarn.lock", f"""
        left-pad@^1.3.0:
          version "1.3.0"
          integrity sha512-{INTEGRITY}
        """, "yarn lock integrity"),
    _c("cargo-lock-checksum", "Cargo.lock", f"""
        [[package]]
        name = "serde"
        version = "1.0.210"
        checksum = "{SHA256}"
        """, "a Cargo.lock checksum"),
    _c("go-sum", "go.sum", f"""
        github.com/google/uuid v1.6.0 h1:{_r("gosum", 43, B64)}=
        """, "a go.sum module hash"),
    _c("uuid-request-id", "app/handlers.py", f"""
        REQUEST_NAMESPACE = uuid.UUID("{_uuid("ns")}")
        """, "a UUID used as an id"),
    _c("csharp-guid", "src/Acme/Interop.cs", f"""
        [Guid("{_uuid("guid").upper()}")]
        """, "a COM GUID"),
    _c("kms-key-id", "infra/kms.tf", f"""
        kms_key_id = "{_uuid("kms")}"
        """, "a KMS key id (an identifier, not key material)"),
    _c("fixture-changeme", "tests/test_login.py", """
        def test_login_rejects_wrong_password(client):
            user = make_user(password="changeme")
        """, "a placeholder password in a test"),
    _c("env-example-placeholders", ".env.example", f"""
        API_KEY=<your-api-key>
        STRIPE_SECRET_KEY={"sk" + "_live_" + "x" * 24}
        DATABASE_URL=postgres://app:${{DB_PASSWORD}}@localhost:5432/app
        """, "placeholders in an example env file"),
    _c("compose-variables", "docker-compose.yml", """
        environment:
          API_KEY: ${API_KEY}
          REDIS_URL: redis://:${REDIS_PASSWORD}@cache:6379/0
        """, "variables substituted by compose"),
    _c("python-environ", "app/config.py", """
        GITHUB_TOKEN = os.environ["GITHUB_TOKEN"]
        client = OpenAI(api_key=os.getenv("OPENAI_API_KEY"))
        """, "environment lookups"),
    _c("php-jwt-encode", "app/Http/Auth.php", """
        $apiKey = $jwtObj->encode([
            'sub' => $user->id,
        ]);
        """, "code: a call's result assigned to a secret-like name"),
    _c("python-kwarg-forwarding", "agent/tasks.py", """
        turn = client.complete(messages, None, max_output_tokens=max_output_tokens)
        """, "code: a keyword argument passed on"),
    _c("css-data-uri", "web/logo.css", f"""
        .logo {{ background: url(data:image/png;base64,{PNG}); }}
        """, "base64 image data"),
    _c("html-sri", "web/index.html", f"""
        <script src="https://cdn.acme.io/app.js" integrity="sha384-{SRI}" crossorigin="anonymous"></script>
        """, "subresource integrity"),
    _c("public-key-pem", "keys/release.pub.pem", PUB_PEM + "\n", "a public key"),
    _c("certificate-pem", "certs/ca.crt", CERT_PEM + "\n", "a certificate"),
    _c("authorized-keys", "deploy/authorized_keys", f"""
        ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r("ssh-pub", 43, B64)} deploy@ci
        """, "an SSH public key"),
    _c("curl-bearer-variable", "scripts/smoke.sh", """
        curl -H "Authorization: Bearer $API_TOKEN" https://api.acme.io/v1/health
        curl -u "$NEXUS_USER:$NEXUS_PASSWORD" -T app.tgz "$NEXUS_URL"
        """, "credentials from variables"),
    _c("js-template-variable", "src/api.ts", """
        const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
        const sig = `ghp_${suffix}`;
        """, "template substitutions of variables"),
    _c("mysql-prompt-and-variable", "backup/nightly.sh", """
        mysqldump -u backup -p --single-transaction shop > shop.sql
        mysql -u root -p"$MYSQL_ROOT_PASSWORD" shop < schema.sql
        """, "-p that prompts, and a variable"),
    _c("cli-variables", "ops/check.sh", """
        redis-cli -h cache.internal -a "$REDIS_PASSWORD" PING
        PGPASSWORD=$DB_PASS psql -h db.internal -U app
        echo "$CR_PAT" | docker login ghcr.io -u acme --password-stdin
        """, "CLI credentials from variables"),
    _c("npmrc-variable", ".npmrc", """
        //registry.npmjs.org/:_authToken=${NPM_TOKEN}
        """, "an npm token from the environment"),
    _c("sdk-from-env", "src/llm.ts", """
        const openai = new OpenAI({ apiKey: process.env.OPENAI_API_KEY });
        const http = new HttpClient("https://api.acme.io/v2");
        const orders = new ApiClient("orders-service");
        """, "SDK constructors without a literal credential"),
    _c("join-plain-words", "app/greeting.py", """
        message = "".join(["Hello", ", ", "world"])
        path = "/api/" + "v2/" + "orders"
        """, "joined literals that are no secret"),
    _c("urls-with-at", "web/package.json", """
        "lodash": "https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js",
        "ui": "http://localhost:4873/@acme/ui/-/ui-1.2.0.tgz",
        "repo": "git@github.com:acme/app.git"
        """, "URLs with @ but no password"),
    _c("docker-run-ids", "scripts/run.sh", """
        docker run -u 1000:1000 -p 8080:80 acme/app:1.2.0
        """, "uid:gid and ports"),
    _c("argparse-password-flag", "cli/main.py", """
        parser.add_argument("--password", help="database password (prompted when omitted)")
        """, "a flag declared, no value"),
    _c("gha-secrets", ".github/workflows/ci.yml", """
        env:
          DB_PASSWORD: ${{ secrets.DB_PASSWORD }}
          NPM_TOKEN: ${{ secrets.NPM_TOKEN }}
        """, "CI secret references"),
    _c("go-header-variable", "internal/http/auth.go", """
        \treq.Header.Set("Authorization", "Bearer "+token)
        """, "a header built from a variable"),
    _c("python-fstring-header", "client/session.py", """
        headers = {"Authorization": f"Bearer {token}"}
        """, "an f-string header"),
    _c("aws-docs-example", "docs/aws.md", f"""
        aws_access_key_id = {"AK" + "IAIOSFODNN7" + "EXAMPLE"}
        """, "AWS's documented example key"),
    _c("http-file-variables", "requests/orders.http", """
        GET {{host}}/v2/orders
        Authorization: Bearer {{token}}
        """, "an .http file with variables"),
    _c("spring-placeholder", "src/main/resources/application.yml", """
        spring:
          datasource:
            password: ${DB_PASSWORD:}
        """, "a Spring property placeholder"),
    _c("vault-prose", "docs/vault.md", """
        Service tokens start with `hvs.` and batch tokens with `hvb.`; Mapbox secret tokens with `sk.`.
        """, "prose about token prefixes"),
    _c("member-access-token", "app/clients.py", """
        token = self._client.auth.get_token()
        api_key = settings.PAYMENTS_API_KEY
        """, "member access"),
)


def shapes_by_path() -> dict[str, str]:
    """path → text of every shape in one file per path (texts of a path joined in order)."""
    files: dict[str, str] = {}
    for shape in SHAPES:
        files[shape.path] = files.get(shape.path, "") + shape.text
    return files
