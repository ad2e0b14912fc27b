"""Every key craft-connector.yml accepts, in one table.

The loader (etlcraft/config/loader.py) validates each value from its row here, and
docs/reference/configuration.md is generated from the same rows (scripts/gen_reference_docs.py), so the
reference and the code cannot drift. Key names are case-sensitive exactly as written here.

No setting is silently ignored: every key here is read by the code (tests/py/unit/test_config_sections.py checks
it), so a key is added with the feature that reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

#: The largest whole number any key takes: the Engine DB's INT columns hold no more, and Python's date
#: arithmetic overflows long before an unbounded value would.
WHOLE_NUMBER_MAX = 2_147_483_647
VARIABLE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
CODE_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,127}$"
ADDRESS_PATTERN = r"^[^@\s<>,;:\"()\[\]\\]+@[^@\s<>,;:\"()\[\]\\]+$"
HOST_PATTERN = r"^[^\s/@]+$"
ONE_LINE_PATTERN = r"^[^\x00-\x1f\x7f]+$"
ENDPOINT_PATTERN = r"^https?://[^\s/?#@]+(/[^\s?#@]*)?$"
REGION_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"

#: The fewest Engine DB connections etl-craft server runs with (Orchestration.Db_pool_size): its loop, its heartbeat
#: and its alert sender hold one each (etlcraft.overseer.server.SERVER_CONNECTIONS), and the HTTP API it serves up to
#: etlcraft.api.app.REQUEST_CONNECTIONS (a test checks the sum), so no thread waits for another's connection.
SERVER_POOL_MINIMUM = 9


class KeyType(StrEnum):
    """How a value is written and checked; the value is the name the reference page shows."""

    TEXT = "text"
    CODE = "code"
    PATH = "path"
    VARIABLE = "variable name"
    INTEGER = "whole number"
    NUMBER = "number"
    BOOLEAN = "boolean"
    CHOICE = "choice"
    TEXT_LIST = "list of text"
    TIMEZONE = "IANA time zone"
    CHANNELS = "mapping of alert channels"


@dataclass(frozen=True)
class Section:
    name: str
    required: bool
    meaning: str


@dataclass(frozen=True)
class Key:
    """One configuration key. `default` None with `required` False means "not set"."""

    section: str
    name: str
    type: KeyType
    meaning: str
    required: bool = False
    default: str | int | float | bool | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str, ...] = ()
    #: For TEXT, CODE and each item of TEXT_LIST: a regular expression the value must match ...
    pattern: str | None = None
    #: ... and what it means, in words ("an e-mail address such as ops@example.com").
    pattern_meaning: str | None = None
    #: Engine and Warehouse: the dialects the key applies to (empty: every dialect).
    applies_to: tuple[str, ...] = ()
    #: The key to use instead where this one does not apply (else: remove it).
    instead: str | None = None
    #: The remedy when a required key is missing ({dialect} is replaced); else "expected <what>".
    missing_hint: str | None = None
    #: Refuse a value holding "@" without showing it: user information is never written here.
    refuse_user_info: bool = False
    #: What to do instead of writing user information (else: the section's username and secret keys).
    user_info_remedy: str | None = None
    #: Why the range is what it is, added to the refusal of a value outside it.
    range_reason: str | None = None

    @property
    def path(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def field(self) -> str:
        """The attribute that holds the value on the section's config object."""
        return self.name.lower()

    def expected(self) -> str:
        """What a valid value is, in words: the end of every message about this key."""
        if self.type is KeyType.INTEGER:
            return f"a whole number {self.range_text()}"
        if self.type is KeyType.NUMBER:
            return f"a number {self.range_text()}"
        if self.type is KeyType.CHOICE:
            return f"one of {', '.join(self.choices)}"
        if self.type is KeyType.BOOLEAN:
            return "true or false"
        if self.type is KeyType.TIMEZONE:
            return "an IANA time zone name such as Europe/Paris or UTC"
        if self.type is KeyType.VARIABLE:
            return "the name of a variable (letters, digits, _)"
        if self.type is KeyType.PATH:
            return "a file path (relative paths start at the project directory)"
        if self.type is KeyType.TEXT_LIST:
            return f"a list of at least one item, each {self.item_expected()}"
        if self.type is KeyType.CHANNELS:
            return ("a mapping of channel names to channels: {type: email, to: [addresses]}, {type: webhook, url or "
                    "url_variable, signing_key_variable}, or {type: slack, url_variable}")
        return self.item_expected()

    def item_expected(self) -> str:
        """TEXT and CODE values, and each item of a TEXT_LIST."""
        return self.pattern_meaning or "a non-empty text"

    def range_text(self, capped: bool = False) -> str:
        """The range in words; `capped` adds WHOLE_NUMBER_MAX as the maximum of a whole number without one."""
        low, high = self.minimum, self.maximum
        if capped and high is None and self.type is KeyType.INTEGER:
            high = WHOLE_NUMBER_MAX
        if low is not None and high is not None:
            return f"from {_number(low)} to {_number(high)}"
        if low is not None:
            return f"of at least {_number(low)}"
        if high is not None:
            return f"of at most {_number(high)}"
        return ""


def _number(value: int | float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Rule:
    """A check across keys of one section. `check(values, given)` returns the message when the rule is broken;
    `values` holds every key of the section (defaults filled in), `given` the keys the file sets."""

    section: str
    meaning: str
    check: Callable[[Mapping[str, object], frozenset[str]], str | None]


ENGINE_DIALECTS = ("sqlite", "postgresql")
WAREHOUSE_DIALECTS = ("duckdb", "postgresql")
TLS_MODES = ("starttls", "ssl", "none")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

SECTIONS: tuple[Section, ...] = (
    Section("Engine", True, "The Engine DB: metadata, run history and the state machine."),
    Section("Warehouse", True, "The database SQL tasks read and write."),
    Section("Email", False, "The SMTP relay that alert e-mails and EMAIL_ALERT tasks go through."),
    Section(
        "Orchestration",
        False,
        "How runs are scheduled, retried, leased and stopped. Every key is optional, so the section is too.",
    ),
    Section("Alerts", False, "The channels alert rules (CFG_ALERT_RULES) deliver to, and how deliveries are retried."),
    Section("Artifacts", False, "Where etl-craft bundle publish uploads a project's files, and where task processes "
            "keep the bundles they run (guides/bundles.md). Without it runs use the working folder."),
)


def _connection_keys(section: str, dialects: tuple[str, ...], schema: bool) -> tuple[Key, ...]:
    files = tuple(d for d in dialects if d != "postgresql")
    keys: tuple[Key, ...] = (
        Key(section, "dialect", KeyType.CHOICE, "The database kind.", required=True, choices=dialects),
        Key(
            section,
            "path",
            KeyType.PATH,
            "The database file.",
            required=True,
            applies_to=files,
            instead="url",
            missing_hint="name the {dialect} database file",
        ),
        Key(
            section,
            "url",
            KeyType.TEXT,
            "The server, as postgresql://user@host:port/database?options, without a password and without "
            "credential query keys.",
            required=True,
            applies_to=("postgresql",),
            missing_hint="e.g. postgresql://etl@db.example.com/etl",
        ),
        Key(
            section,
            "secret",
            KeyType.VARIABLE,
            "The name of the variable that holds the password.",
            applies_to=("postgresql",),
        ),
    )
    if schema:
        keys += (
            Key(
                section,
                "schema",
                KeyType.TEXT,
                "The schema etl-craft's tables and functions live in (default etl_craft).",
                applies_to=("postgresql",),
            ),
        )
    return keys + _timeout_keys(section, files)


#: The exit code of a connection that fails, and what the timeouts of each connection section say beyond the common
#: sentence (where they apply, how --engine-url sets them).
_FAILS_WITH = {
    "Engine": ", with exit code 4 (ENGINE_DB)",
    "Warehouse": " (a task then fails with that message, validate warns and skips its warehouse checks, rehash exits "
                 "with code 27, WAREHOUSE)",
}
_CONNECT_NOTE = {
    "Engine": " --engine-url skips this section: there the URL's query may set connect_timeout=N.",
    "Warehouse": "",
}
_STATEMENT_NOTE = {
    "Engine": "It limits every statement etl-craft sends the Engine DB except migrate's and grant's (which wait for "
              "each other and may rebuild large tables) and the wait for a warehouse table's lock while another "
              "task writes that table. With --engine-url the URL's query may set options=-c statement_timeout=MS.",
    "Warehouse": "It limits only the statements etl-craft sends of its own accord: validate's catalog reads and its "
                 "trial of each SELECT (a trial stopped is a note, not a problem). A task's SQL, a business rule and "
                 "rehash get no limit from etl-craft, since they may rightly run for hours: TASK_TIMEOUT_SECONDS "
                 "stops a task, and a statement_timeout the DBA set on the login still applies.",
}
_BUSY = {
    "Engine": ("How long a statement waits for the database file while another process writes it (SQLite's busy "
               "timeout) before failing with exit code 4, saying so.", 30),
    "Warehouse": ("How long opening the database file waits while another process has it open (DuckDB lets one "
                  "process at a time open a file: a task waits for the one before it) before failing, saying so.",
                  120),
}


def _timeout_keys(section: str, files: tuple[str, ...]) -> tuple[Key, ...]:
    """How long a connection may wait: for a server to answer, for a statement to end, for a file to be free."""
    busy_meaning, busy_default = _BUSY[section]
    return (
        Key(
            section,
            "connect_timeout_seconds",
            KeyType.INTEGER,
            "How long opening a session may take (TCP, TLS and login) before etl-craft stops waiting and says which "
            f"server did not answer{_FAILS_WITH[section]}: a stopped server, a wrong port or a firewall that drops "
            "packets fails within it instead of hanging. The wait is per address when the host name resolves "
            f"to several.{_CONNECT_NOTE[section]}",
            default=10,
            minimum=2,
            maximum=3600,
            applies_to=("postgresql",),
        ),
        Key(
            section,
            "statement_timeout_seconds",
            KeyType.INTEGER,
            "How long one statement may run, lock waits included, before the server cancels it (PostgreSQL's "
            f"statement_timeout). {_STATEMENT_NOTE[section]}",
            default=300,
            minimum=1,
            maximum=86400,
            applies_to=("postgresql",),
        ),
        Key(section, "busy_timeout_seconds", KeyType.INTEGER, busy_meaning, default=busy_default, minimum=1,
            maximum=86400, applies_to=files),
    )


KEYS: tuple[Key, ...] = (
    *_connection_keys("Engine", ENGINE_DIALECTS, schema=True),
    *_connection_keys("Warehouse", WAREHOUSE_DIALECTS, schema=False),
    Key(
        "Email",
        "host",
        KeyType.TEXT,
        "The SMTP relay's host name or IP address.",
        required=True,
        pattern=HOST_PATTERN,
        pattern_meaning="a host name or IP address such as smtp.example.com",
        refuse_user_info=True,
    ),
    Key("Email", "port", KeyType.INTEGER, "The relay's port (465 is usual with tls_mode ssl).",
        default=587, minimum=1, maximum=65535),
    Key(
        "Email",
        "tls_mode",
        KeyType.CHOICE,
        "starttls: upgrade a plain connection; ssl: TLS from the first byte (implicit TLS); none: no "
        "encryption (only without username and secret). TLS always verifies the relay's certificate.",
        default="starttls",
        choices=TLS_MODES,
    ),
    Key(
        "Email",
        "ca_file",
        KeyType.PATH,
        "A PEM file of the certificate authorities that sign the relay's certificate, when the system's do "
        "not.",
    ),
    Key(
        "Email",
        "username",
        KeyType.TEXT,
        "The user to authenticate as; set it together with secret.",
        pattern=ONE_LINE_PATTERN,
        pattern_meaning="one line of text",
    ),
    Key("Email", "secret", KeyType.VARIABLE,
        "The name of the variable that holds the SMTP password; set it together with username."),
    Key(
        "Email",
        "from_address",
        KeyType.TEXT,
        "The sender address.",
        required=True,
        pattern=ADDRESS_PATTERN,
        pattern_meaning="an e-mail address such as etl@example.com",
    ),
    Key(
        "Email",
        "to",
        KeyType.TEXT_LIST,
        "The recipients of alerts, as a YAML list (an EMAIL_ALERT task names its own in its RECIPIENTS "
        "parameter).",
        required=True,
        pattern=ADDRESS_PATTERN,
        pattern_meaning="an e-mail address such as ops@example.com",
    ),
    Key(
        "Email",
        "subject_prefix",
        KeyType.TEXT,
        "Text put before every subject, for example [etl-craft prod].",
        pattern=ONE_LINE_PATTERN,
        pattern_meaning="one line of text",
    ),
    Key("Alerts", "channels", KeyType.CHANNELS,
        "The channels by name, as CFG_ALERT_RULES.CHANNELS lists them. type email: to (the recipients; the relay "
        "is the Email section's). type webhook: url, or url_variable naming the variable that holds a URL carrying "
        "a token; signing_key_variable names the variable holding the HMAC-SHA256 signing key. type slack: "
        "url_variable names the variable holding the incoming-webhook URL.", required=True),
    Key("Alerts", "max_attempts", KeyType.INTEGER,
        "How many delivery attempts an alert gets on one channel before it is recorded FAILED for good.",
        default=8, minimum=1, maximum=100),
    Key("Alerts", "retry_delay_seconds", KeyType.INTEGER,
        "The wait after a failed delivery attempt before the second one.", default=30, minimum=1, maximum=86400),
    Key("Alerts", "retry_backoff", KeyType.NUMBER,
        "What each further failed attempt multiplies the wait by.", default=2.0, minimum=1.0, maximum=10.0),
    Key("Alerts", "retry_max_delay_seconds", KeyType.INTEGER,
        "The longest wait between two delivery attempts.", default=3600, minimum=1, maximum=86400),
    Key("Alerts", "claim_seconds", KeyType.INTEGER,
        "How long a process holds the deliveries it claimed; a process that dies before recording them leaves "
        "them to the next one after this.", default=120, minimum=10, maximum=86400),
    Key("Alerts", "timeout_seconds", KeyType.INTEGER,
        "How long one delivery attempt may take (connecting and sending).", default=10, minimum=1, maximum=300),
    Key("Artifacts", "Store", KeyType.TEXT,
        "The artifact store bundles are uploaded to and fetched from: file:// and the absolute path of a folder "
        "every host that runs tasks can read (a shared mount), or s3://BUCKET/PREFIX for an S3-compatible object "
        "store (the s3 extra: pip install 'etl-craft[s3]'; credentials come from the standard AWS chain, never from "
        "this file). etl-craft bundle publish writes each file once, named by its SHA-256.", required=True,
        pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://[^\x00-\x1f\x7f]+$",
        pattern_meaning="a URL such as file:///srv/etl-craft/artifacts or s3://bucket/prefix"),
    Key("Artifacts", "Cache_dir", KeyType.PATH,
        "The folder bundles are materialized in, one subfolder per bundle id (every file's hash is verified on "
        "use). Not set: $ETL_CRAFT_BUNDLE_CACHE, else ~/.cache/etl-craft/bundles."),
    Key("Artifacts", "Endpoint_url", KeyType.TEXT,
        "The endpoint of an S3-compatible service other than AWS (MinIO, Ceph, ...), used with an s3:// Store; "
        "requests then use path-style addressing (http://host/bucket/key). Not set: the standard AWS chain "
        "($AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's endpoint_url), else AWS S3. Credentials are never "
        "part of it.", pattern=ENDPOINT_PATTERN, pattern_meaning="an http:// or https:// URL such as "
        "https://minio.example.com:9000", refuse_user_info=True,
        user_info_remedy="give the endpoint without user information: the S3 credentials come from the standard "
        "AWS chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role)"),
    Key("Artifacts", "Region", KeyType.TEXT,
        "The region of the s3:// Store's bucket. Not set: the standard AWS chain ($AWS_REGION, "
        "$AWS_DEFAULT_REGION, the profile's region).", pattern=REGION_PATTERN,
        pattern_meaning="a region name such as eu-west-1 (lower-case letters, digits and -)"),
    Key(
        "Orchestration",
        "Project",
        KeyType.CODE,
        "The code of the project (its CFG_PROJECTS row) that commands act on when the Engine DB serves several "
        "projects and --project-code is not given; it also names the project's ledger of metadata migrations. When "
        "not set, the Engine DB's only project is used.",
        pattern=CODE_PATTERN,
        pattern_meaning="a code: a letter, then up to 127 letters, digits or _",
    ),
    Key("Orchestration", "Timezone", KeyType.TIMEZONE,
        "The project's time zone when its CFG_PROJECTS row sets no TIMEZONE (then UTC when this is not set "
        "either): run dates, and the schedules of pipelines without a SCHEDULE_TIMEZONE, use it."),
    Key("Orchestration", "Max_parallel_tasks", KeyType.INTEGER,
        "How many tasks of one pipeline run at the same time.", default=4, minimum=1),
    Key("Orchestration", "Gate_wait_minutes", KeyType.INTEGER,
        "How long a dependency gate waits for its upstream before giving up.", default=60, minimum=0),
    Key("Orchestration", "Retries", KeyType.INTEGER,
        "How many times a failed, timed-out or lost attempt is retried, unless a task says otherwise.",
        default=0, minimum=0),
    Key("Orchestration", "Retry_delay_seconds", KeyType.INTEGER,
        "The wait before the first retry.", default=60, minimum=0),
    Key("Orchestration", "Retry_backoff", KeyType.NUMBER,
        "What each further retry multiplies the delay by (the delay is capped at 3,600 seconds).",
        default=2.0, minimum=1.0),
    Key("Orchestration", "Lease_seconds", KeyType.INTEGER,
        "How long a run or attempt stays owned without a heartbeat; then it is reconciled.",
        default=60, minimum=5),
    Key("Orchestration", "Heartbeat_seconds", KeyType.INTEGER,
        "How often an owner renews its lease; less than half of Lease_seconds.", default=15, minimum=1),
    Key("Orchestration", "Shutdown_grace_seconds", KeyType.INTEGER,
        "On SIGTERM, how long the server waits for running attempts before stopping them.",
        default=60, minimum=0),
    Key("Orchestration", "Api_address", KeyType.TEXT,
        "Where etl-craft server serves the HTTP API (HOST:PORT); etl-craft api --address overrides it. A loopback "
        "address keeps the API on this machine; put TLS in front of any other.",
        default="127.0.0.1:8730", pattern=r"^\[?[A-Za-z0-9_.:-]+\]?:[0-9]{1,5}$",
        pattern_meaning="HOST:PORT, such as 127.0.0.1:8730 or 0.0.0.0:8730"),
    Key("Orchestration", "Full_check_day", KeyType.CHOICE,
        "The day of the week on which BUSINESS_RULES tasks judge their whole table (a full check): a run whose run "
        "date falls on it checks every current row and closes the flags of keys gone from the table. On other "
        "days a rules task judges only the keys its own run wrote (the rows whose PIPELINE_RUN_ID is the run's) "
        "and leaves every other flag as it stands. `etl-craft run --task-code T --force` always checks in full; "
        "never: only --force does.",
        default="sunday", choices=(*WEEKDAYS, "never")),
    Key("Orchestration", "Db_pool_size", KeyType.INTEGER,
        "The connections etl-craft server keeps to a PostgreSQL Engine DB: a fixed pool, never exceeded (doctor "
        "counts it in the connection budget). The server's loop, its heartbeat and its alert sender take one each; "
        "its HTTP API the rest, up to 6 (5 requests at once). Workers size their own pools from their slots "
        "(2 + slots/8). With a SQLite Engine DB it is not used.",
        default=10, minimum=SERVER_POOL_MINIMUM, maximum=100,
        range_reason="the server's loop, heartbeat and alert sender hold 3 connections and its HTTP API up to 6"),
)


def _heartbeat_under_half_lease(values: Mapping[str, object], given: frozenset[str]) -> str | None:
    heartbeat, lease = values["Heartbeat_seconds"], values["Lease_seconds"]
    assert isinstance(heartbeat, int) and isinstance(lease, int)
    if heartbeat * 2 < lease:
        return None
    note = "" if "Heartbeat_seconds" in given else " (the default)"
    return (
        f"Orchestration.Heartbeat_seconds is {heartbeat}{note} with Lease_seconds {lease}; expected less than "
        f"half of Lease_seconds, so one late heartbeat does not lose the lease: lower Heartbeat_seconds or raise "
        f"Lease_seconds"
    )


def _username_with_secret(values: Mapping[str, object], given: frozenset[str]) -> str | None:
    if values["username"] is not None and values["secret"] is None:
        return (
            "Email.username is set but Email.secret is not; name the variable that holds the SMTP password in "
            "Email.secret, or remove Email.username"
        )
    if values["secret"] is not None and values["username"] is None:
        return "Email.secret is set but Email.username is not; set the user to authenticate as, or remove Email.secret"
    return None


def _no_password_in_clear(values: Mapping[str, object], given: frozenset[str]) -> str | None:
    if values["tls_mode"] == "none" and values["username"] is not None:
        return (
            "Email.tls_mode is 'none' with Email.username set; the password would cross the network "
            "unencrypted: use tls_mode starttls or ssl, or remove username and secret"
        )
    return None


def _ca_file_needs_tls(values: Mapping[str, object], given: frozenset[str]) -> str | None:
    if values["tls_mode"] == "none" and values["ca_file"] is not None:
        return "Email.ca_file does not apply when Email.tls_mode is 'none'; remove it or use starttls or ssl"
    return None


def _s3_settings_need_an_s3_store(values: Mapping[str, object], given: frozenset[str]) -> str | None:
    unused = [name for name in ("Endpoint_url", "Region") if name in given]
    store = str(values["Store"])
    if not unused or store.lower().startswith("s3://"):
        return None
    return (f"Artifacts.{unused[0]} is set but Artifacts.Store is {store!r}; it applies to an s3:// store only: "
            f"remove Artifacts.{unused[0]}, or set Store to s3://BUCKET/PREFIX")


RULES: tuple[Rule, ...] = (
    Rule("Email", "`username` and `secret` are set together, or neither.", _username_with_secret),
    Rule(
        "Email",
        "`tls_mode: none` is refused with `username` and `secret`: no password in clear.",
        _no_password_in_clear,
    ),
    Rule("Email", "`ca_file` needs `tls_mode` `starttls` or `ssl`.", _ca_file_needs_tls),
    Rule("Orchestration", "`Heartbeat_seconds` is less than half of `Lease_seconds`.", _heartbeat_under_half_lease),
    Rule("Artifacts", "`Endpoint_url` and `Region` need an s3:// `Store`.", _s3_settings_need_an_s3_store),
)


def keys_of(section_name: str) -> tuple[Key, ...]:
    return tuple(k for k in KEYS if k.section == section_name)


def rules_of(section_name: str) -> tuple[Rule, ...]:
    return tuple(r for r in RULES if r.section == section_name)


def section_names() -> tuple[str, ...]:
    return tuple(s.name for s in SECTIONS)
