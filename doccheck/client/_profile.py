"""The service profile: every choice the interface leaves "not shown", typed, in one place.

Why: the interface shows only ``processing``, no error body, no list or retrieve path, no
score scales, no key retention. The emulator made one choice at each of those points; the
service that bills our users may have made another. Guessing silently there costs money
(a resend after a lost answer bills twice) or misreports a student (a score on another
scale). So each choice is a field of :class:`ServiceProfile`, the emulator's choice is its
default, and the readers below take every variant they can read *without guessing*:

- error bodies: ours ``{"error": {"code", "message"}}``, ``{"error": "text"}``,
  ``{"message", "code"}``, ``{"detail"}``, RFC 9457 problem+json, plain text;
- ``Retry-After`` in seconds or as an HTTP date (RFC 9110 §10.2.3);
- status words: synonyms of ``completed``/``failed`` mapped, an unknown word kept (the
  product stays pending, the word is shown and warned about once);
- ``error`` of any shape (object, string, list) read as code + message;
- result values checked against the profile's ranges: out of range is that product's
  ``invalid_response`` error, never data.

``doccheck probe`` learns a profile with calls that cost nothing and writes it as JSON;
``DOCCHECK_SERVICE_PROFILE`` names that file for later runs (:func:`current_profile`).
docs/service-profile.md lists each point, our default, the variants read and what is refused.
"""

from __future__ import annotations

import email.utils
import functools
import json
import logging
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from doccheck.extract import SUPPORTED_TYPES, TYPE_ALIASES, extension_of

log = logging.getLogger("doccheck.client")

#: A profile file is small; a larger one is refused rather than read (untrusted input).
MAX_PROFILE_BYTES = 64 * 1024
#: Error text kept from a service answer (the rest is cut).
MAX_MESSAGE_CHARS = 500

#: The code given to an answer this side cannot trust (bad JSON, a score out of range).
INVALID_RESPONSE = "invalid_response"

ListOrder = Literal["newest_first", "oldest_first", "unknown"]


class ServiceProfile(BaseModel):
    """What the service chose where the interface is silent (defaults: the emulator's)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = "emulator"
    # --- statuses -------------------------------------------------------------------
    completed_words: frozenset[str] = frozenset({"completed", "succeeded", "success", "complete", "done", "finished"})
    failed_words: frozenset[str] = frozenset({"failed", "errored", "error", "failure", "canceled", "cancelled"})
    pending_words: frozenset[str] = frozenset({"processing", "queued", "pending", "running", "in_progress", "created"})
    # --- products (the interface does not show the value set of an event's ``product``) ----
    ai_words: frozenset[str] = frozenset({"ai", "ai_detection", "ai-detection", "aidetection", "ai_detector"})
    similarity_words: frozenset[str] = frozenset(
        {"similarity", "similarity_check", "similarity-check", "similarity_comparison", "plagiarism"}
    )
    # --- results --------------------------------------------------------------------
    ai_score_range: tuple[float, float] = (0.0, 1.0)
    similarity_score_range: tuple[float, float] = (0.0, 100.0)
    # --- paths ----------------------------------------------------------------------
    #: ``GET /checks/{id}`` answers (False: polling cannot work; the run says so).
    get_by_id: bool = True
    #: ``GET /checks`` lists checks (False: no list; recovery keeps keys in doubt).
    list_checks: bool = True
    list_order: ListOrder = "newest_first"
    #: Listed checks carry the ``metadata`` sent on create (our ``doccheck_ref``).
    list_metadata: bool = True
    #: The largest ``limit`` the list accepts (a smaller page is read, never refused).
    list_max_page: int = 100
    # --- create ---------------------------------------------------------------------
    #: ``cost`` on the create answer is the final price (False: 0 until completion).
    price_at_creation: bool = True
    #: Seconds the service remembers an Idempotency-Key (interface: not shown).
    key_retention_seconds: int = 24 * 3600
    #: Answers to a create that do not prove "no check was made" when the key may have
    #: reached the service before (a service refusing key reuse): looked up, never final.
    reuse_refusal_statuses: frozenset[int] = frozenset({400, 409, 422})
    #: File types (extensions) the service takes as a file (interface: not shown; default: the
    #: emulator's list). A file of another type that doccheck reads is sent as its text.
    accepted_types: frozenset[str] = frozenset(SUPPORTED_TYPES)
    #: Facts learnt by ``doccheck probe`` (``{"assumption": "holds|differs|untested"}``).
    probed: dict[str, str] = Field(default_factory=dict)

    @field_validator("accepted_types", mode="before")
    @classmethod
    def _extensions(cls, value: object) -> object:
        """``"ODT"``, ``"odt"`` and ``".odt"`` name one type (a profile a user writes by hand)."""
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple, set, frozenset)):
            return frozenset("." + str(v).strip().lower().lstrip(".") for v in value)
        return value

    @field_serializer("accepted_types")
    def _sorted(self, value: frozenset[str]) -> list[str]:
        """Written sorted: a profile file ``doccheck probe`` writes twice reads the same."""
        return sorted(value)

    # --- readers --------------------------------------------------------------------
    def accepts_file(self, filename: str) -> bool:
        """Whether the service takes ``filename`` as a file: its type is in ``accepted_types``
        (an alias such as ``.ott`` for ``.odt`` counts) and no create in this process was
        refused as an unsupported type (:func:`learn_refused_type`)."""
        ext = extension_of(filename)
        family = {ext, TYPE_ALIASES.get(ext, ext)}
        return bool(family & self.accepted_types) and not family & _REFUSED_TYPES

    def status_word(self, value: object) -> str:
        """The canonical status for a service word: ``completed``/``failed`` for their
        synonyms, ``processing`` for a known pending word, else the word itself (kept
        pending by every caller, shown, and warned about once)."""
        word = str(value or "processing").strip().lower()
        if word in self.completed_words:
            return "completed"
        if word in self.failed_words:
            return "failed"
        if word in self.pending_words:
            return "processing"
        _warn_unknown_status(word)
        return word

    def product_word(self, value: object) -> str | None:
        """The product (``ai``/``similarity``) a service's ``product`` value names, or None for
        a value this profile does not know: that value is never a product of its own (no
        result row, no count); it is warned about once and the check is fetched instead."""
        word = str(value or "").strip().lower()
        if word in self.ai_words:
            return "ai"
        if word in self.similarity_words:
            return "similarity"
        if word:
            _warn_once(
                f"product:{word}",
                "a webhook event named the product %r, which this service profile does not know: it is "
                "not counted as a product; the check is fetched instead (add it to the profile's product words)",
                word[:40],
            )
        return None

    def score_range(self, product: str) -> tuple[float, float] | None:
        """The valid range of ``product``'s score (None: a product without a known scale)."""
        return {"ai": self.ai_score_range, "similarity": self.similarity_score_range}.get(product)


_WARNED: set[str] = set()
#: Types a create was refused for as unsupported in this process (the profile learnt them).
_REFUSED_TYPES: set[str] = set()


def learn_refused_type(filename: str) -> bool:
    """Remember that the service refused ``filename``'s type (a 415, or a 422 naming the type):
    later files of that type in this process are planned and sent as text. True when new (the
    caller keeps it for the next processes: ``doccheck.ledger._refused_types``)."""
    ext = extension_of(filename)
    if not ext or ext in _REFUSED_TYPES:
        return False
    adopt_refused_types([ext])
    log.warning("the service refused %s files as an unsupported type: they are sent as their text", ext[:20])
    return True


def adopt_refused_types(extensions: Iterable[str]) -> None:
    """Take types an earlier process learnt the service refuses (kept in the ledger) as learnt in
    this one: their files go as their text at once, without another refusal."""
    for ext in extensions:
        ext = ext.lower()
        _REFUSED_TYPES.add(ext)
        _REFUSED_TYPES.add(TYPE_ALIASES.get(ext, ext))


def refused_in_process() -> frozenset[str]:
    """The types this process learnt (or adopted) the service refuses."""
    return frozenset(_REFUSED_TYPES)


def reset_profile() -> None:
    """Back to what a new process finds: no type learnt or adopted, the profile file read again
    when next asked for (a notebook whose profile file changed; tests that play several processes)."""
    _REFUSED_TYPES.clear()
    _profile_from.cache_clear()


def unsupported_type_refusal(status: int | None, code: str | None, message: str | None) -> bool:
    """Whether a refused create says "this file type is not taken" (415, or a 422 whose code or
    message names an unsupported type/format): nothing was made, the text can be sent instead."""
    if status == 415:
        return True
    if status != 422:
        return False
    words = f"{code or ''} {message or ''}".lower()
    return "unsupported" in words and any(w in words for w in ("type", "format", "extension"))


def _warn_unknown_status(word: str) -> None:
    _warn_once(
        word,
        "the service answered the status %r, which this profile does not know: the product stays "
        "pending (add it to the service profile's words if it is final)",
        word[:40],
    )


def _warn_once(key: str, message: str, word: str) -> None:
    """Once per word (at most 100 words are remembered: a service cannot grow this)."""
    if key in _WARNED or len(_WARNED) >= 100:
        return
    _WARNED.add(key)
    log.warning(message, word)


def load_profile(path: str | Path) -> ServiceProfile:
    """A profile from a JSON file written by ``doccheck probe`` (size-bounded)."""
    p = Path(path)
    size = p.stat().st_size
    if size > MAX_PROFILE_BYTES:
        raise ValueError(f"service profile {p} is {size} bytes: more than {MAX_PROFILE_BYTES} is not a profile")
    return ServiceProfile.model_validate(json.loads(p.read_text(encoding="utf-8")))


@functools.cache
def _profile_from(path: str) -> ServiceProfile:
    return load_profile(path) if path else ServiceProfile()


def current_profile() -> ServiceProfile:
    """The profile in force: the ``service.profile`` setting's file (``DOCCHECK_SERVICE_PROFILE``),
    else the emulator's choices. A file that is not a profile raises a ``ValueError`` naming
    the variable."""
    from doccheck.config import setting

    path = setting("service", "profile")
    try:
        return _profile_from(str(path) if path else "")
    except (OSError, ValueError) as exc:
        raise ValueError(f"DOCCHECK_SERVICE_PROFILE={str(path)!r}: not a service profile ({exc})") from None


# --- error bodies ------------------------------------------------------------------------
def _text(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def read_error(value: object) -> dict[str, str | None] | None:
    """``{"code", "message"}`` from an ``error`` of any shape, or None when there is none.

    Reads an object (``code``/``type``/``error_code``, ``message``/``detail``/``title``/
    ``description``), a bare string (the message), a list (the first readable item).
    Nothing is invented: a missing code stays None.
    """
    if value is None or value is False or value == "":
        return None
    if isinstance(value, str):
        return {"code": None, "message": value.strip()[:MAX_MESSAGE_CHARS]}
    if isinstance(value, list):
        for item in value:
            found = read_error(item)
            if found is not None:
                return found
        return None
    if not isinstance(value, Mapping):
        return {"code": None, "message": str(value)[:MAX_MESSAGE_CHARS]}
    code = _text(value.get("code")) or _text(value.get("error_code")) or _problem_code(value.get("type"))
    message = (
        _text(value.get("message"))
        or _detail_text(value.get("detail"))
        or _text(value.get("title"))
        or _text(value.get("description"))
        or _text(value.get("msg"))
    )
    if code is None and message is None:
        return {"code": None, "message": None}
    return {"code": code, "message": message[:MAX_MESSAGE_CHARS] if message else None}


def _detail_text(value: object) -> str | None:
    """FastAPI's ``detail`` is a string or a list of ``{"msg"}``; RFC 9457's a string."""
    if isinstance(value, list):
        msgs = [_text(v.get("msg")) if isinstance(v, Mapping) else _text(v) for v in value]
        joined = "; ".join(m for m in msgs if m)
        return joined or None
    return _text(value)


def _problem_code(value: object) -> str | None:
    """An RFC 9457 ``type`` URI's last segment as a code (``about:blank`` is none)."""
    text = _text(value)
    if text is None or text == "about:blank":
        return None
    return text.rstrip("/").rsplit("/", 1)[-1] or None


def error_from_body(body: object, text: str, content_type: str) -> tuple[str | None, str | None]:
    """The service's own code and message from an error answer, whatever its shape.

    ``body`` is the parsed JSON (None when not JSON), ``text`` the raw body. Envelope
    ``{"error": ...}`` first (ours, a string, a problem), then the top level (``message``,
    ``detail``, problem+json); plain text is the message itself; an HTML page (a proxy's)
    gives nothing, so the caller falls back to the HTTP reason.
    """
    if isinstance(body, Mapping):
        inner = read_error(body.get("error")) if "error" in body else None
        top = read_error({k: v for k, v in body.items() if k != "error"})
        code = (inner or {}).get("code") or (top or {}).get("code")
        message = (inner or {}).get("message") or (top or {}).get("message")
        return code, message
    if body is None and content_type.split(";")[0].strip().lower() == "text/plain":
        message = _text(text)
        return None, message[:MAX_MESSAGE_CHARS] if message else None
    if isinstance(body, str):
        return None, _text(body)
    return None, None


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date (RFC 9110); None when
    absent or unreadable (the caller's backoff applies)."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


# --- check answers -----------------------------------------------------------------------
def normalise_check(data: object, profile: ServiceProfile | None = None) -> object:
    """A check answer (or an event's check summary) read through the profile, before the
    models see it: status synonyms mapped, ``error`` of any shape made ``{code, message}``,
    and each product's score checked against its range.

    A score out of range (or not a number) makes that product ``failed`` with the code
    ``invalid_response`` and the value in the message: loud, that document's error, never
    data. The service did not refund it, so the ledger leaves it out of refunds.
    """
    if not isinstance(data, dict):
        return data
    prof = profile or current_profile()
    out = dict(data)
    if "status" in out:
        out["status"] = prof.status_word(out.get("status"))
    if "error" in out:
        out["error"] = read_error(out.get("error"))
    if "cost" in out and not isinstance(out["cost"], Mapping):
        out["cost"] = {}
    if isinstance(out.get("products"), list):
        named = (prof.product_word(p) for p in out["products"])
        out["products"] = list(dict.fromkeys(p for p in named if p is not None))
    for product in ("ai", "similarity"):
        if out.get(product) is not None:
            out[product] = _normalise_product(product, out[product], prof)
    return out


def _normalise_product(product: str, value: object, prof: ServiceProfile) -> object:
    if isinstance(value, str):
        value = {"status": value}
    if not isinstance(value, dict):
        return value
    pdata = dict(value)
    raw_status = str(pdata.get("status") or "processing").strip().lower()
    known = raw_status in prof.completed_words | prof.failed_words | prof.pending_words
    status = prof.status_word(raw_status)
    if not known and pdata.get("score") is not None:
        status = "completed"  # an unknown word on a product that carries its result
    pdata["status"] = status
    if "error" in pdata:
        pdata["error"] = read_error(pdata.get("error"))
    bad = _out_of_range(product, pdata.get("score"), prof)
    if bad is not None:
        pdata.update(status="failed", score=None, label=None, error={"code": INVALID_RESPONSE, "message": bad})
    elif pdata.get("score") is not None:
        pdata["score"] = _to_our_scale(product, float(pdata["score"]), prof)
    return pdata


#: The scales doccheck reports in (the emulator's): AI 0..1, similarity percent 0..100.
OUR_SCALES: dict[str, tuple[float, float]] = {"ai": (0.0, 1.0), "similarity": (0.0, 100.0)}


def _to_our_scale(product: str, score: float, prof: ServiceProfile) -> float:
    """A score on the service's scale (the profile's range) read on ours, so that a service
    answering similarity as a fraction reports 50 % as 50, not 0.5."""
    low, high = prof.score_range(product) or OUR_SCALES[product]
    our_low, our_high = OUR_SCALES[product]
    if (low, high) == (our_low, our_high) or high <= low:
        return score
    return our_low + (score - low) / (high - low) * (our_high - our_low)


def _out_of_range(product: str, score: object, prof: ServiceProfile) -> str | None:
    """Why ``score`` cannot be data (None when it can, or when there is no score)."""
    bounds = prof.score_range(product)
    if score is None or bounds is None:
        return None
    low, high = bounds
    if isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score):
        return f"the service answered a {product} score {str(score)[:40]!r} that is not a number"
    if not low <= score <= high:
        return (
            f"the service answered a {product} score {score} outside {low:g}..{high:g} "
            f"(service profile {prof.name!r}): not reported as a result"
        )
    return None
