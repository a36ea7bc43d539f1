"""What a run is: one options model shared by the flow, the CLI and the notebook.

Why one model: the run's settings used to be 18 flow parameters, 23 notebook arguments and
as many CLI flags, each with its own copy of the defaults. Here every setting is declared
once, with its default, its bounds and its meaning, in four groups a user reasons about:

- :class:`SourceOptions`: what is checked (manifest, campaign, products, metadata, templates);
- :class:`SubmissionOptions`: how it is sent (concurrency, batches, budget, deadline);
- :class:`WaitingOptions`: how results are awaited (timeout, webhook grace, polling);
- :class:`OutputOptions`: what is written (report folder, downloaded files);

plus :class:`ConnectionOptions` (which service, which ledger; never the key: the key lives
in a ``DocCheckCredentials`` block, a Secret block or ``DOCCHECK_API_KEY``).

The flow takes the groups as its parameters (the Prefect UI shows one form section per
group), the CLI's flags and the notebook's keyword arguments take their defaults from
:data:`DEFAULTS`, and all three hand a :class:`RunOptions` to the one orchestration
(``doccheck.pipeline._orchestrate``). Lists accept ``"ai,similarity"`` as well as
``["ai", "similarity"]`` (the UI's text fields, the CLI's comma lists).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from doccheck.domain import DEFAULT_PRODUCTS

__all__ = [
    "DEFAULTS",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_SUBMIT_DEADLINE_SECONDS",
    "ConnectionOptions",
    "OutputOptions",
    "RunOptions",
    "SourceOptions",
    "SubmissionOptions",
    "WaitingOptions",
    "as_list",
    "option_error",
]

#: Seconds a run keeps requeueing documents that met a transient error (429, 5xx, network)
#: before it leaves them ``retry_later`` and says the run is incomplete.
DEFAULT_SUBMIT_DEADLINE_SECONDS = 900.0
#: Requests in flight at once, unless a run says otherwise (the one place this default is written).
DEFAULT_CONCURRENCY = 8


def as_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """``["ai", "similarity"]`` as well as ``"ai,similarity"`` (CLI, UI text fields) → a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,;|]", value) if v.strip()]
    return [str(v).strip() for v in value if str(v).strip()]


def option_error(exc: ValidationError) -> str:
    """A validation error as one line naming each wrong option and why (for the CLI)."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "options"
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "invalid options: " + "; ".join(parts)


class _Group(BaseModel):
    """A group of settings: unknown names are an error (a typo never passes silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceOptions(_Group):
    """What is checked."""

    manifest: str = Field(
        description="CSV, Parquet or JSONL manifest (docs/manifest.md): a path, or a URL such as "
        "s3://bucket/course-a/manifest.csv (docs/storage.md)."
    )
    campaign: str | None = Field(
        default=None, description="Namespace of the Idempotency-Keys (default: the manifest's file name)."
    )
    products: list[str] = Field(
        default=list(DEFAULT_PRODUCTS),
        description="Products for rows without their own: ai, similarity or both.",
    )
    metadata_columns: list[str] = Field(
        default_factory=list, description="Manifest columns sent to the service as metadata (an allowlist)."
    )
    templates: list[str] = Field(
        default_factory=list,
        description="Files every student was given (prompt, template): cohort matching ignores their text.",
    )
    lms: Literal["moodle", "canvas", "blackboard", "plain"] | None = Field(
        default=None, description="Read the manifest as this LMS's export (default: recognised from the names)."
    )
    attempts: Literal["latest", "all"] = Field(
        default="latest", description="Blackboard exports: check each student's latest attempt, or all."
    )
    roster: str | None = Field(
        default=None,
        description="An LMS export's roster CSV (gradebook, grading worksheet): email, section and "
        "'no submission' rows in the reports.",
    )

    @field_validator("manifest")
    @classmethod
    def _location(cls, value: str) -> str:
        """A URL is checked where the run is said (a credential in it, a scheme doccheck does not
        read, a store whose extra is missing) and kept as ``display`` shows it; a path as given."""
        from doccheck.errors import StorageError
        from doccheck.storage import display, is_url, resolve

        if not is_url(value):
            return value
        try:
            return display(resolve(value))
        except StorageError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("products", "metadata_columns", "templates", mode="before")
    @classmethod
    def _split(cls, value: Any) -> list[str]:
        return as_list(value)

    @field_validator("products")
    @classmethod
    def _known_products(cls, value: list[str]) -> list[str]:
        from doccheck.sources.manifest import parse_products

        return list(parse_products(value or None, default=DEFAULT_PRODUCTS))

    @property
    def campaign_name(self) -> str:
        """The run's campaign: the given one, else the manifest's file name without extension."""
        from doccheck.sources.lms import export_campaign, is_export
        from doccheck.storage import resolve

        default = export_campaign(self.manifest) if is_export(self.manifest) else resolve(self.manifest).stem
        return (self.campaign or "").strip() or default


class SubmissionOptions(_Group):
    """How documents are sent."""

    concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1, le=64, description="Requests in flight at once.")
    batch_size: int = Field(
        default=100, ge=1, le=10_000, description="Documents per recorded batch (per Prefect task run without overlap)."
    )
    parallel_batches: int = Field(default=2, ge=1, le=16, description="Batches submitted at the same time.")
    shards: int = Field(
        default=1,
        ge=1,
        le=1024,
        description="Split the submission into N runs of the bulk-check-shard deployment on its work pool "
        "(PostgreSQL ledger); 1: this process.",
    )
    max_spend_cents: int | None = Field(
        default=None, ge=0, description="The campaign's budget: stop before this many cents would be spent."
    )
    webhook_url: str | None = Field(default=None, description="Per-check webhook URL (default: the account's).")
    submit_deadline: float = Field(
        default=DEFAULT_SUBMIT_DEADLINE_SECONDS,
        ge=0,
        description="Seconds to keep retrying documents that met 429/5xx/network errors (then: incomplete).",
    )
    overlap: bool = Field(
        default=True,
        description="Send each recorded batch while later ones are still read and recorded (false: record the "
        "whole manifest first, then send it batch_size documents a task, parallel_batches at a time).",
    )


class WaitingOptions(_Group):
    """How results are awaited."""

    wait: bool = Field(default=True, description="Wait for the results before writing the reports.")
    timeout: float = Field(default=600, ge=0, description="Seconds to wait for results.")
    grace_seconds: float = Field(
        default=30, ge=0, description="Seconds without a webhook before a check is polled (with an account webhook)."
    )
    poll_interval: float = Field(default=2, ge=0.05, description="Longest pause between two looks at the ledger.")


class OutputOptions(_Group):
    """What is written."""

    out_dir: str = Field(
        default="reports",
        description="Where the reports go (a run folder + latest/): a folder, or a URL (s3://bucket/reports).",
    )
    download: list[str] = Field(
        default_factory=list,
        description="Files of finished checks to fetch into <run>/files/: similarity_pdf, pdf, original.",
    )
    # The report's AI rules (doccheck.outputs.AiRules; docs/instructor.md explains each)
    min_ai_words: int = Field(default=300, ge=0, description="Documents under this many words are too short to judge.")
    ai_band_elevated: float = Field(
        default=0.5, ge=0, le=1, description="AI score where 'elevated' (and the flag) starts."
    )
    ai_band_high: float = Field(default=0.8, ge=0, le=1, description="AI score where 'high' starts.")
    reference_campaign: str | None = Field(
        default=None, description="Earlier campaign of known-human work: the base rate of false flags."
    )
    max_false_flag_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Pick the flag threshold so the reference's false-flag rate stays under this.",
    )
    group_by: str | None = Field(
        default=None,
        description="One report page per value of this column (a documents column such as section, or one of "
        "the metadata columns), linked from report.html.",
    )

    @field_validator("download", mode="before")
    @classmethod
    def _kinds(cls, value: Any) -> list[str]:
        from doccheck.outputs import parse_kinds

        return list(parse_kinds(as_list(value)))  # a typo fails before anything is sent

    @model_validator(mode="after")
    def _judging(self) -> OutputOptions:
        """Rules that could not judge fail before anything is sent, not when the page is written."""
        if self.ai_band_elevated > self.ai_band_high:
            raise ValueError(
                f"ai_band_elevated ({self.ai_band_elevated:g}) must not be above ai_band_high ({self.ai_band_high:g})"
            )
        if self.max_false_flag_rate is not None and not self.reference_campaign:
            raise ValueError("max_false_flag_rate needs a reference_campaign (known-human work to measure it on)")
        return self


class ConnectionOptions(_Group):
    """Which service and which ledger (the API key is never here)."""

    base_url: str | None = Field(default=None, description="Service base URL ending in /api/v1 (DOCCHECK_BASE_URL).")
    database_url: str | None = Field(
        default=None, description="Ledger database (DOCCHECK_DATABASE_URL, default sqlite:///doccheck.db)."
    )


class RunOptions(_Group):
    """Everything that says what one run does (no secrets)."""

    source: SourceOptions
    submission: SubmissionOptions = SubmissionOptions()
    waiting: WaitingOptions = WaitingOptions()
    output: OutputOptions = OutputOptions()
    connection: ConnectionOptions = ConnectionOptions()
    dry_run: bool = False

    @model_validator(mode="after")
    def _group_by_is_a_column(self) -> RunOptions:
        """``--group-by`` must name a column the reports will have: caught before anything is paid."""
        from doccheck.outputs import META_PREFIX
        from doccheck.outputs.instructor import documents_schema, group_column

        meta = [META_PREFIX + c for c in self.source.metadata_columns]
        group_column(self.output.group_by, documents_schema(meta).names)  # ValueError names the choices
        return self

    @classmethod
    def from_flat(cls, **values: Any) -> RunOptions:
        """Options from flat names (``concurrency=16, wait_timeout=60, ...``) as the CLI and
        the notebook take them; ``None`` means "the default". Unknown names raise ``TypeError``."""
        groups: dict[str, dict[str, Any]] = {name: {} for name in _GROUPS}
        top: dict[str, Any] = {}
        for name, value in values.items():
            if value is None:
                continue
            if name == "dry_run":
                top[name] = value
                continue
            group, field = _FLAT.get(name, (None, name))
            if group is None:
                raise TypeError(f"unknown run option {name!r}")
            groups[group][field] = value
        # validated as one nested document: every wrong option is reported at once, by its place
        return cls.model_validate({**{g: v for g, v in groups.items() if v or g == "source"}, **top})

    def recorded(self, origin: Literal["command", "notebook", "flow"], **extra: Any) -> dict[str, Any]:
        """What a run records about itself (the ledger's ``runs.params``), one shape however it
        ran: where from, the whole options but the connection (no password of a URL; never a
        key, options hold none) and ``extra`` facts (``rows``, ``base_url``). ``collect``
        reads the page's rules (``output``) and the templates (``source``) back from it."""
        return {"origin": origin, **self.model_dump(mode="json", exclude={"connection"}), **extra}

    def flow_parameters(self) -> dict[str, Any]:
        """The ``bulk_check`` flow's parameters for these options (plain JSON data)."""
        return {**self.model_dump(mode="json", exclude={"dry_run"}), "dry_run": self.dry_run}


_GROUPS: dict[str, type[_Group]] = {
    "source": SourceOptions,
    "submission": SubmissionOptions,
    "waiting": WaitingOptions,
    "output": OutputOptions,
    "connection": ConnectionOptions,
}
#: Flat names (CLI flags, notebook arguments) → (group, field). ``wait_timeout`` is the
#: CLI's name for ``waiting.timeout``.
_FLAT: dict[str, tuple[str, str]] = {
    **{f: (g, f) for g, model in _GROUPS.items() for f in model.model_fields},
    "wait_timeout": ("waiting", "timeout"),
}

#: One instance of every group with its defaults: where the CLI's flags and the notebook's
#: keyword arguments take theirs from.
DEFAULTS = RunOptions(source=SourceOptions(manifest="-"))
