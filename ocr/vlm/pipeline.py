"""One page through the VLM: render, ask, validate, parse, retry, and build the :class:`Page`.

:meth:`PagePipeline.convert` never raises for a page (cancellation aside). The page ends ``ok`` with
the first valid answer, or ``failed`` with one specific line in ``Page.errors`` (why the last attempt
was refused, or why no endpoint could answer) and every attempt's reason in
``Page.attributes["attempt_errors"]``; the converter then re-does it with the embedded engine and
flags it ``fallback``.

Attempts follow the profile's temperature ladder (``VlmOptions.max_attempts`` caps them). When the
model reports the page is turned (olmOCR's ``rotation_correction``), the page is re-rendered upright
and asked again (at most :data:`MAX_ROTATIONS` times); if the model still reports a turn after that,
or no later answer is valid, the last valid answer is kept (as olmOCR does) and
``attributes["rotation_unresolved"]`` is set.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

from folioflow.ocr.errors import (
    EndpointError,
    EngineUnavailableError,
    OutputValidationError,
    RequestRejectedError,
)
from folioflow.ocr.render import OpenedDocument, RenderLimits
from folioflow.ocr.schema import Block, Page, PageStatus
from folioflow.ocr.vlm.client import ChatResult
from folioflow.ocr.vlm.geometry import image_box_to_page
from folioflow.ocr.vlm.options import VlmOptions
from folioflow.ocr.vlm.parsers.base import ParsedOutput
from folioflow.ocr.vlm.profiles.base import Profile
from folioflow.ocr.vlm.render_pool import Orientation, RenderedPage, RenderPool, RenderRequest
from folioflow.ocr.vlm.request import build_body
from folioflow.ocr.vlm.router import Router
from folioflow.ocr.vlm.validity import check_answer

__all__ = ["MAX_ROTATIONS", "PREFETCH_FACTOR", "PageJob", "EngineStats", "PagePipeline"]

MAX_ROTATIONS = 2
PREFETCH_FACTOR = 2


@dataclass(frozen=True)
class PageJob:
    """A page to convert: where to render it from and its size in points (for failed pages)."""

    number: int
    width: float
    height: float
    source: str | None
    password: str | None
    doc: OpenedDocument | None
    limits: RenderLimits = RenderLimits()


@dataclass
class EngineStats:
    """Counters of one engine's life (updated on the engine's event loop)."""

    pages_ok: int = 0
    pages_failed: int = 0
    attempts: int = 0
    retried_pages: int = 0
    rerendered_pages: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    failure_reasons: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        """Plain-dict view (``failure_reasons`` keyed by the reason's category, e.g. ``truncated``)."""
        return {
            "pages_ok": self.pages_ok,
            "pages_failed": self.pages_failed,
            "attempts": self.attempts,
            "retried_pages": self.retried_pages,
            "rerendered_pages": self.rerendered_pages,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "failure_reasons": dict(self.failure_reasons),
        }


def _parse(profile: Profile, text: str) -> ParsedOutput:
    """The profile's parser; any exception it raises on odd input counts as an unparsable answer."""
    try:
        return profile.parser(text)
    except OutputValidationError:
        raise
    except Exception as exc:
        raise OutputValidationError(
            f"unparsable: {profile.name} parser failed ({type(exc).__name__}: {exc})"
        ) from exc


def _category(reason: str) -> str:
    head = reason.split(":", 1)[0].strip()
    return head if head and " " not in head else "other"


class PagePipeline:
    """Converts pages with ``profile`` through ``router``, rendering in ``pool``."""

    def __init__(
        self, profile: Profile, router: Router, pool: RenderPool, options: VlmOptions, engine_name: str
    ):
        self.profile = profile
        self.router = router
        self.pool = pool
        self.options = options
        self.engine_name = engine_name
        self.stats = EngineStats()
        capacity = sum(ep.capacity for ep in router.endpoints)
        # Pages in the pipeline (rendering, ready, or in flight): twice what the endpoints hold, so the
        # render pool keeps working while every slot is busy and a burst of completions finds pages
        # ready; bounded so memory stays at about that many encoded images (~0.1-0.5 MB each).
        self._prefetch = asyncio.Semaphore(PREFETCH_FACTOR * capacity + 2 * max(1, pool.workers))

    def _orientation(self) -> Orientation:
        mode = self.options.orientation_check
        if mode == "off" or (mode == "auto" and self.profile.reports_rotation):
            return "off"
        return "always" if mode == "always" else "no_text"

    async def _render(self, job: PageJob, rotate: int, orientation: Orientation) -> RenderedPage:
        req = RenderRequest(
            source=job.source,
            password=job.password,
            number=job.number,
            sizing=self.profile.sizing,
            rotate=rotate,
            orientation=orientation,
            limits=job.limits,
        )
        return await self.pool.render(req, job.doc)

    async def convert(self, job: PageJob) -> Page:
        """The converted page (``ok`` or ``failed`` with its reason); see the module docstring."""
        started = time.perf_counter()
        async with self._prefetch:
            try:
                page = await self._attempts(job, started)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug or a render failure must cost one page, not the batch
                page = self._failed(job, f"{type(exc).__name__}: {exc}", [], started)
        if page.status is PageStatus.OK:
            self.stats.pages_ok += 1
        else:
            self.stats.pages_failed += 1
            self.stats.failure_reasons[page.attributes.get("failure", "other")] += 1
        return page

    async def _attempts(self, job: PageJob, started: float) -> Page:
        rendered = await self._render(job, 0, self._orientation())
        notes: list[str] = []
        request_s = 0.0
        turned: tuple[RenderedPage, ParsedOutput, ChatResult, int] | None = None
        rotations = 0
        limit = self.options.max_attempts or len(self.profile.ladder)
        for attempt in range(limit):
            body = build_body(
                self.profile,
                rendered.data_url,
                attempt,
                max_tokens=self.options.max_tokens,
                guided=self.options.guided_decoding,
                extra=self.options.extra_body,
            )
            try:
                result = await self.router.complete(body)
            except RequestRejectedError as exc:
                return self._failed(job, f"rejected: {exc}", notes, started, request_s)
            except (EngineUnavailableError, EndpointError) as exc:
                return self._failed(job, f"unavailable: {exc}", notes, started, request_s)
            self.stats.attempts += 1
            request_s += result.seconds
            self.stats.prompt_tokens += result.prompt_tokens or 0
            self.stats.output_tokens += result.completion_tokens or 0
            if attempt == 1:
                self.stats.retried_pages += 1
            try:
                check_answer(result.text, result.finish_reason, result.completion_tokens)
                parsed = _parse(self.profile, result.text)
            except OutputValidationError as exc:
                notes.append(f"attempt {attempt + 1} (temperature {body['temperature']:g}): {exc}")
                continue
            if self.profile.reports_rotation and parsed.rotation_correction and rotations >= MAX_ROTATIONS:
                page = self._ok(job, rendered, parsed, result, attempt + 1, notes, started, request_s)
                page.attributes["rotation_unresolved"] = True
                return page
            if self.profile.reports_rotation and parsed.rotation_correction:
                rotations += 1
                turned = (rendered, parsed, result, attempt + 1)
                rotate = (rendered.rotate + parsed.rotation_correction) % 360
                notes.append(
                    f"attempt {attempt + 1}: model reports the page turned; re-rendered at {rotate} degrees"
                )
                if rotations == 1:
                    self.stats.rerendered_pages += 1
                rendered = await self._render(job, rotate, "off")
                continue
            return self._ok(job, rendered, parsed, result, attempt + 1, notes, started, request_s)
        if turned is not None:
            page = self._ok(job, *turned, notes, started, request_s)
            page.attributes["rotation_unresolved"] = True
            return page
        last = notes[-1].split(": ", 1)[1] if notes else "no attempt made"
        return self._failed(job, f"{last} (after {limit} attempts)", notes, started, request_s)

    def _ok(
        self,
        job: PageJob,
        rendered: RenderedPage,
        parsed: ParsedOutput,
        result: ChatResult,
        attempts: int,
        notes: list[str],
        started: float,
        request_s: float,
    ) -> Page:
        blocks = [
            Block(
                type=b.type,
                text=b.text,
                level=b.level,
                confidence=b.confidence,
                attributes=b.attributes,
                bbox=image_box_to_page(b.bbox, rendered.rotate, rendered.page_width, rendered.page_height)
                if b.bbox is not None
                else None,
            )
            for b in parsed.blocks
        ]
        attributes = {
            "attempts": attempts,
            "endpoint": result.endpoint,
            "finish_reason": result.finish_reason,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "image_size_px": [rendered.width_px, rendered.height_px],
            "profile": self.profile.name,
            "request_seconds": round(request_s, 4),
            **parsed.attributes,
        }
        if rendered.orientation_correction:
            attributes["orientation_correction"] = rendered.orientation_correction
        if notes:
            attributes["attempt_errors"] = notes
        return Page(
            number=job.number,
            width=rendered.page_width,
            height=rendered.page_height,
            rotation=rendered.rotate,
            markdown=parsed.markdown,
            blocks=blocks,
            engine=self.engine_name,
            model=self.router.model,
            status=PageStatus.OK,
            seconds=time.perf_counter() - started,
            attributes=attributes,
        )

    def _failed(
        self, job: PageJob, reason: str, notes: list[str], started: float, request_s: float = 0.0
    ) -> Page:
        attributes = {
            "profile": self.profile.name,
            "failure": _category(reason),
            "request_seconds": round(request_s, 4),
        }
        if notes:
            attributes["attempt_errors"] = notes
        return Page(
            number=job.number,
            width=job.width,
            height=job.height,
            engine=self.engine_name,
            model=self.router.model,
            status=PageStatus.FAILED,
            errors=[f"{self.engine_name}: {reason}"],
            seconds=time.perf_counter() - started,
            attributes=attributes,
        )
