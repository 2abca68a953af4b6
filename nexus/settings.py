"""Nexus settings, all from the environment (see .env.example for every variable).

With nothing set, Nexus runs embedded: SQLite, an in-memory channel layer, runs executed in
the server process and the offline model. Set DATABASE_URL and REDIS_URL for a team.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from nexus.dbpool import check_pooled_connection
from nexus.env import (
    env_bool,
    env_choice,
    env_commands,
    env_fernet_keys,
    env_int,
    env_list,
    env_secret_key,
    env_str,
)
from reasoning.config import ConfigError, ReasoningConfig
from reasoning.modes import MODE_NAMES

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("NEXUS_VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_secret_key(VAR_DIR, required=bool(env_str("DATABASE_URL")) and not DEBUG)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "axes",
    "chat",
    "teamops",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "chat.inputs.refuse_nul_in_address",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "chat.signin.private_pages",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "chat.inputs.refuse_malformed_admin_selection",
    "chat.inputs.refuse_oversized_admin_ids",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "chat.signin.SignedOutAware",  # LoginRequiredMiddleware, with a 401 for htmx requests
    "chat.inputs.explain_wrong_method",
    "chat.limits.limit_writes",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "nexus.urls"
ASGI_APPLICATION = "nexus.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "chat.context_processors.nexus",
            ],
        },
    }
]

# --- database ------------------------------------------------------------------------

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0, conn_health_checks=True)}
    except Exception as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        options = DATABASES["default"].setdefault("OPTIONS", {})
        # Values sent apart from their statement, whose text is then the same every time, so
        # psycopg prepares what a connection runs often (the writer's statements, a run's claim,
        # a POST's) and PostgreSQL stops parsing and planning it anew; nor does the client quote
        # every value into the text. Runs took a fifth to a third less CPU in PostgreSQL, and
        # a sixth less in Nexus's own process. Prepared statements live on their connection, which the pool
        # keeps (behind PgBouncer in transaction mode, set its max_prepared_statements).
        options["server_side_binding"] = True
        options["prepare_threshold"] = 5
        # Under ASGI every request runs in a thread of its own, so a persistent connection per
        # thread meant a new connection (a PostgreSQL process) per request. One pool per process
        # instead; a connection it hands out has been checked (a restarted server is survived).
        options["pool"] = {
            "min_size": 2,
            "max_size": env_int("NEXUS_DB_POOL_SIZE", 20, minimum=2),
            # How long a request waits for a connection (the database restarting, or every one
            # taken) before the page says the database is unavailable (nexus.errors).
            "timeout": env_int("NEXUS_DB_WAIT_SECONDS", 10, minimum=1),
            # After a restart, every dead idle connection is dropped at the first one found.
            "check": check_pooled_connection,
        }
else:
    # WAL lets requests read while a background run writes; IMMEDIATE transactions and a
    # busy timeout make concurrent writers wait instead of failing with "database is locked".
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "nexus.sqlite3",
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            "TEST": {"NAME": VAR_DIR / "test.sqlite3"},
            # Kept open between a run's database calls: reopening (and re-running the PRAGMAs)
            # for every event was most of the CPU an event cost in embedded mode.
            "CONN_MAX_AGE": 600,
            "CONN_HEALTH_CHECKS": True,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Keys that encrypt tool server secrets at rest (chat.crypto); required in a team deployment.
NEXUS_SECRETS_KEYS = env_fernet_keys(VAR_DIR, required=bool(DATABASE_URL) and not DEBUG)

# --- channels, jobs, cache ---------------------------------------------------------------

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL and not re.match(r"^(?:rediss?://[^/?#\s]+|unix://?/\S+)", REDIS_URL):
    raise ImproperlyConfigured(f"REDIS_URL must look like redis://host:6379/0, got {REDIS_URL!r}")
# Longer than channels_redis's blocking pop (5 s), so an idle receive is not a timeout.
CHANNEL_LAYER_READ_TIMEOUT = 15
if REDIS_URL:
    from redis.asyncio.retry import Retry as AsyncRetry
    from redis.backoff import NoBackoff
    from redis.driver_info import DriverInfo
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.retry import Retry

    # A command that finds its pooled connection dead is sent once more, on a new connection.
    # After a Redis restart every pooled connection is dead, and each failed its next command:
    # pages' sockets were refused ("live updates are unavailable") while Redis was up.
    ONE_RETRY = {"retry_on_error": [RedisConnectionError]}
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "chat.layers.GroupSendLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, the same as the layer's
            # blocking pop: an idle websocket's receive then fails ("Timeout reading") and the
            # socket closes with 1011 every few seconds. Reads may wait out the pop, no longer.
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": CHANNEL_LAYER_READ_TIMEOUT,
                        "retry": AsyncRetry(NoBackoff(), 1),
                        # Made once: without it redis-py reads its version from the installed
                        # package's metadata for every new connection, and a burst of runs opens
                        # dozens (3% of a worker's CPU in a burst of 100 runs).
                        "driver_info": DriverInfo(),
                        **ONE_RETRY,
                    }
                ],
                "capacity": 1500,
                "expiry": 30,
            },
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"retry": Retry(NoBackoff(), 1), **ONE_RETRY},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Where runs execute: "embedded" (a task in the server process) or "celery" (workers).
NEXUS_RUN_BACKEND = env_choice(
    "NEXUS_RUN_BACKEND", ("embedded", "celery"), "celery" if REDIS_URL else "embedded"
)
if NEXUS_RUN_BACKEND == "celery" and not REDIS_URL:
    raise ImproperlyConfigured("NEXUS_RUN_BACKEND=celery needs REDIS_URL (the Celery broker)")

NEXUS_RUN_TIME_LIMIT = env_int("NEXUS_RUN_TIME_LIMIT", 900, minimum=10)
# A process that executes runs connects to the enabled tool servers when it starts, so the first
# question it answers does not wait seconds for the built-in server to boot.
NEXUS_WARM_TOOL_SERVERS = env_bool("NEXUS_WARM_TOOL_SERVERS", True)
# Server and worker processes freeze what they load at start-up out of the garbage collector's
# passes (nexus/heap.py). Off only where the project is imported into another long-lived
# process, such as the test suite's.
NEXUS_GC_FREEZE = env_bool("NEXUS_GC_FREEZE", True)
# A running run whose heartbeat is older than this is presumed orphaned by a dead worker and
# resumed by another (within about this plus a heartbeat and a sweep: 30 + 10 + 10 s; at 90 s,
# with a sweep every 45 s, a killed worker's users waited over two minutes without news).
NEXUS_RUN_STALE_SECONDS = env_int("NEXUS_RUN_STALE_SECONDS", 30, minimum=2)
NEXUS_HEARTBEAT_SECONDS = env_int("NEXUS_HEARTBEAT_SECONDS", 10, minimum=1)
if NEXUS_RUN_STALE_SECONDS < 3 * NEXUS_HEARTBEAT_SECONDS:
    # A live run would look stale between two beats, and another worker would take it over.
    raise ImproperlyConfigured(
        f"NEXUS_RUN_STALE_SECONDS ({NEXUS_RUN_STALE_SECONDS}) must be at least three heartbeats "
        f"(3 x NEXUS_HEARTBEAT_SECONDS = {3 * NEXUS_HEARTBEAT_SECONDS}): a live run would be taken "
        "over by another worker"
    )
# Runs one worker process executes at once, concurrently on one event loop (a run mostly
# waits on the model), and runs one user may have executing at once (the rest wait in order).
NEXUS_WORKER_RUNS = env_int("NEXUS_WORKER_RUNS", 50, minimum=1)
NEXUS_MAX_RUNS_PER_USER = env_int("NEXUS_MAX_RUNS_PER_USER", 3, minimum=1)
# How long a run waits for a person to approve a tool call before treating it as declined
# (a restarted worker resumes the wait, never asks twice).
NEXUS_APPROVAL_WAIT_SECONDS = env_int("NEXUS_APPROVAL_WAIT_SECONDS", 600, minimum=1)
# After this long without a decision the run is parked: stored as awaiting approval, its
# worker slot free for other runs; the decision queues it again and it resumes.
NEXUS_APPROVAL_PARK_SECONDS = env_int("NEXUS_APPROVAL_PARK_SECONDS", 10, minimum=0)
# How long a tool server's question to the person (MCP elicitation: a form, or a URL to
# open) waits for their answer; the call's own timeout stands still meanwhile.
NEXUS_ELICITATION_WAIT_SECONDS = env_int("NEXUS_ELICITATION_WAIT_SECONDS", 900, minimum=1)
# Open websockets per user (every daphne process together); a dead process's slots expire.
NEXUS_MAX_SOCKETS_PER_USER = env_int("NEXUS_MAX_SOCKETS_PER_USER", 20, minimum=1)
NEXUS_SOCKET_TTL_SECONDS = env_int("NEXUS_SOCKET_TTL_SECONDS", 60, minimum=3)

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Threads only wait for runs executing on the worker's event loop (chat.tasks); the time
# limit is enforced there, since the threads pool has no time limits of its own.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = NEXUS_WORKER_RUNS
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": NEXUS_RUN_TIME_LIMIT + 120,
    # Handing a run to the queue tries Redis once more after half a second, then gives up: the
    # message is stored, the person is told, and the sweeper sends it when Redis is back. By
    # default kombu kept retrying for 6 s, and every message posted while Redis was away took
    # that long. (A worker reconnecting to the broker has its own retry settings.)
    "max_retries": 1,
    "interval_start": 0.5,
    "interval_step": 0,
    "interval_max": 0.5,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# kombu's Redis transport without the restore-on-disconnect that crashed workers (chat/broker.py).
CELERY_BROKER_TRANSPORT = "chat.broker:Transport" if REDIS_URL else None
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- the model and the engine ---------------------------------------------------------------

ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL") or None
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL") or None
LLM_PROVIDERS = ("anthropic", "openai", "offline")
NEXUS_LLM_PROVIDER = env_choice(
    "NEXUS_LLM_PROVIDER", LLM_PROVIDERS, "anthropic" if ANTHROPIC_API_KEY else "offline"
)
if NEXUS_LLM_PROVIDER == "anthropic" and not ANTHROPIC_API_KEY:
    raise ImproperlyConfigured(
        "NEXUS_LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY (or use NEXUS_LLM_PROVIDER=offline)"
    )
if NEXUS_LLM_PROVIDER == "openai" and not OPENAI_BASE_URL:
    raise ImproperlyConfigured("NEXUS_LLM_PROVIDER=openai needs OPENAI_BASE_URL")

try:
    NEXUS_REASONING = ReasoningConfig.from_env(provider=NEXUS_LLM_PROVIDER)
except ConfigError as exc:
    raise ImproperlyConfigured(str(exc)) from None  # it names the variable

# Simulated seconds per offline-model call (demos and load tests); 0 answers at once.
OFFLINE_LATENCY_MS = env_int("OFFLINE_LATENCY_MS", 0, minimum=0)
# How much each offline call's latency varies, in percent either way (30: 0.7 to 1.3 times).
OFFLINE_LATENCY_JITTER_PCT = env_int("OFFLINE_LATENCY_JITTER_PCT", 0, minimum=0)
# Whose unreviewed reflections teach a user's planner: their own ("user"), or everyone's.
NEXUS_LESSONS_SCOPE = env_choice("NEXUS_LESSONS_SCOPE", ("team", "user"), "user")
# AGENT_MODE picks the engine's mode (reasoning.modes); reasoning_driven is the adaptive mode
# executing in seed 003's style (EXECUTION_STYLE=reasoning_driven does the same for adaptive).
AGENT_MODE = env_choice("AGENT_MODE", MODE_NAMES, "adaptive")
# Whether a person may pick another mode for one chat (the chat's header offers it); the
# deployment's AGENT_MODE is every chat's default either way.
NEXUS_CHAT_MODE_CHOICE = env_bool("NEXUS_CHAT_MODE_CHOICE", False)
# Long-term memory (the cognitive mode's episodic and semantic memory): off stores and
# recalls nothing; what is stored stays visible and deletable on the Memory page.
NEXUS_MEMORY = env_bool("NEXUS_MEMORY", True)
NEXUS_MAX_MESSAGE_CHARS = env_int("NEXUS_MAX_MESSAGE_CHARS", 20_000, minimum=1)
NEXUS_RATE_LIMIT_PER_MINUTE = env_int("NEXUS_RATE_LIMIT_PER_MINUTE", 20, minimum=0)
# Every other change a signed-in person posts (new chats, renames, share links, feedback, the
# admin's forms) per minute; 0 turns it off.
NEXUS_WRITE_RATE_LIMIT_PER_MINUTE = env_int("NEXUS_WRITE_RATE_LIMIT_PER_MINUTE", 120, minimum=0)

# OpenTelemetry export of every run as a trace (teamops/telemetry.py): on when the standard
# OTLP endpoint variable is set; the SDK reads OTEL_EXPORTER_OTLP_HEADERS and friends itself.
NEXUS_OTEL_ENABLED = bool(
    env_str("OTEL_EXPORTER_OTLP_ENDPOINT", "") or env_str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
)
NEXUS_OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "nexus")
# Question, answer and plan-step text go into spans only when this is true (opt-in).
NEXUS_OTEL_CAPTURE_CONTENT = env_bool("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", False)
NEXUS_MAX_DOCUMENT_BYTES = env_int("NEXUS_MAX_DOCUMENT_BYTES", 2_000_000, minimum=1)
# What one person's documents may hold together (0 = no limit): see chat.documents._check_storage.
NEXUS_MAX_DOCUMENT_STORAGE_BYTES = env_int("NEXUS_MAX_DOCUMENT_STORAGE_BYTES", 50_000_000, minimum=0)
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440  # Django's default, said here for the limit below
# The largest request body daphne takes in (nexus.request_limits): past it the client gets a 413
# before the body is read. Room for the largest form and the largest upload with its multipart
# wrapping, so the app's own, plainer refusals of those still answer the bodies just past them.
NEXUS_MAX_REQUEST_BYTES = env_int(
    "NEXUS_MAX_REQUEST_BYTES",
    2 * max(DATA_UPLOAD_MAX_MEMORY_SIZE, NEXUS_MAX_DOCUMENT_BYTES) + 1_000_000,
    minimum=100_000,
)
# The executables a stdio tool server may be started with (absolute paths, or names looked up
# on PATH at start-up). Only the operator decides this, never the database; the built-in
# server is always allowed. Empty: no other stdio server can start.
NEXUS_MCP_ALLOWED_COMMANDS = env_commands("NEXUS_MCP_ALLOWED_COMMANDS")
# Seconds a run waits for an added tool server that is not connected yet (starting, or hung
# at start) before answering without its tools; the built-in server is always waited for.
NEXUS_TOOL_SERVER_START_WAIT = env_int("NEXUS_TOOL_SERVER_START_WAIT", 3, minimum=1)

# --- auth ----------------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Django's default hashers, the first one hashing without holding a pooled database connection
# (chat.signin.PooledPBKDF2PasswordHasher): the same algorithm, so stored passwords still match.
PASSWORD_HASHERS = [
    "chat.signin.PooledPBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTHENTICATION_BACKENDS = [
    # django-axes first: it refuses sign-ins while a user name or address is locked out.
    "chat.signin.SignInThrottle",
    "django.contrib.auth.backends.ModelBackend",
]
# Sign-in throttling: after NEXUS_LOGIN_FAILURE_LIMIT wrong passwords for one user name from
# one address, sign-in to that name from that address is refused for
# NEXUS_LOGIN_LOCKOUT_MINUTES; after NEXUS_LOGIN_NAME_FAILURE_LIMIT for one name from every
# address together (each address counted up to its own limit, so it takes many addresses),
# from anywhere; after NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT from one address, for any names (a
# team may share one address), from that address. A name alone is not locked at the first
# limit: anyone could keep its owner (the admin too) out with five wrong guesses. Staff unlock
# someone early by deleting their rows under "Access attempts" in the admin (or `manage.py
# axes_reset_username NAME`).
AXES_FAILURE_LIMIT = env_int("NEXUS_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("NEXUS_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT = env_int(
    "NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT", 10 * AXES_FAILURE_LIMIT, minimum=AXES_FAILURE_LIMIT
)
NEXUS_LOGIN_NAME_FAILURE_LIMIT = env_int(
    "NEXUS_LOGIN_NAME_FAILURE_LIMIT", 10 * AXES_FAILURE_LIMIT, minimum=AXES_FAILURE_LIMIT
)
# One name from one address; the name's and the address's own limits: chat.signin.SignInThrottle.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# A success forgets only that user name's failures from that address (see chat.signin).
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "chat.signin.login_locked_out"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat:home"
LOGOUT_REDIRECT_URL = "login"

# --- static files, i18n ----------------------------------------------------------------------

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG and env_bool("NEXUS_MANIFEST_STATIC", False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True
LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(
        f"TIME_ZONE must be a time zone such as UTC or Europe/Paris, got {TIME_ZONE!r}"
    ) from None
USE_I18N = True
USE_TZ = True

# --- security ----------------------------------------------------------------------------

# NEXUS_HTTPS: the site is served over HTTPS (behind a TLS proxy). Defaults on when DEBUG is off.
NEXUS_HTTPS = env_bool("NEXUS_HTTPS", not DEBUG)
# NEXUS_BEHIND_PROXY: a reverse proxy is in front and is the only way in, so its
# X-Forwarded-Proto / X-Forwarded-For headers are believed. Off, a client could send them itself.
NEXUS_BEHIND_PROXY = env_bool("NEXUS_BEHIND_PROXY", False)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_FAILURE_VIEW = "nexus.errors.csrf_failure"
# Scripts take the CSRF token from the page (hx-headers, the forms), never from the cookie.
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if NEXUS_HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # A load balancer's probe asks over plain HTTP, inside: a redirect is no answer.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
if NEXUS_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Sign-in throttling counts the client's address: behind the proxy, the one it forwarded.
AXES_CLIENT_IP_CALLABLE = "chat.signin.client_address"

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    # 'self' covers the site's own ws:// and wss:// (CSP level 3): sockets go nowhere else.
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# --- logging: secrets never reach a log line ---------------------------------------------------

LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured(
        f"LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got {env_str('LOG_LEVEL')!r}"
    )
_CELERY_JOB_LOGS = "DEBUG" if LOG_LEVEL == "DEBUG" else "WARNING"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact": {"()": "chat.logging.RedactSecretsFilter"},
        "repeats": {"()": "chat.logging.RepeatsThrottled"},
        "database_away": {"()": "nexus.errors.DatabaseAwayLogged"},
    },
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["repeats", "redact"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # A 503 for a database that is away: one warning line, not a traceback (nexus.errors).
        "django.request": {"filters": ["database_away"]},
        "httpx2": {"level": "WARNING"},
        # Its INFO lines carry an HTTP tool server's session id, which stands for the session.
        "mcp.client.streamable_http": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        # A line per job received and per job done: every run's start and end are in the
        # database (and the admin) already, and at a team's load these lines cost the worker
        # more CPU than its runs' own bookkeeping. LOG_LEVEL=DEBUG shows them again.
        "celery.worker.strategy": {"level": _CELERY_JOB_LOGS},
        "celery.app.trace": {"level": _CELERY_JOB_LOGS},
    },
}
