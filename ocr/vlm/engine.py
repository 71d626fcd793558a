"""``VlmEngine``: the :class:`~folioflow.ocr.engines.base.PageEngine` that OCRs pages on vLLM servers.

Wiring only: an event loop on a private thread (:mod:`folioflow.ocr.vlm.aio`) drives the async router
(:mod:`folioflow.ocr.vlm.router`) and the page pipeline (:mod:`folioflow.ocr.vlm.pipeline`); pages are rendered in a
process pool (:mod:`folioflow.ocr.vlm.render_pool`). Synchronous callers use :meth:`VlmEngine.convert_pages`,
which starts every requested page at once (bounded by the endpoints' capacity) and yields them in
the requested order as they finish. Several threads may convert documents through one engine.

Usage::

    options = VlmOptions(endpoints=["http://gpu1:8000/v1", "http://gpu2:8000/v1"], profile="chandra")
    engine = VlmEngine(options)
    engine.warm_up()                      # /health + /v1/models; raises if no endpoint is usable
    with open_document(path) as doc:
        for page in engine.convert_pages(doc, range(1, doc.page_count + 1)):
            ...                           # page.status is ok, or failed with page.errors[0]
    engine.close()
"""

from __future__ import annotations

import concurrent.futures
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from folioflow.ocr.engines.base import PageEngine
from folioflow.ocr.errors import ConfigurationError, EngineUnavailableError, FolioflowError
from folioflow.ocr.render import OpenedDocument, PageHandle
from folioflow.ocr.schema import Page, PageStatus
from folioflow.ocr.vlm.aio import LoopThread
from folioflow.ocr.vlm.client import EndpointClient
from folioflow.ocr.vlm.options import VlmOptions
from folioflow.ocr.vlm.pipeline import PageJob, PagePipeline
from folioflow.ocr.vlm.profiles import Profile, get_profile, profile_for_model
from folioflow.ocr.vlm.render_pool import RenderPool
from folioflow.ocr.vlm.router import Router

__all__ = ["VlmEngine"]


class VlmEngine(PageEngine):
    """OCR on one or many vLLM endpoints (see module docstring). Cheap to construct; connects in
    :meth:`warm_up`. Raises :class:`ConfigurationError` at construction for an unknown profile."""

    def __init__(self, options: VlmOptions | None = None, **kwargs):
        self.options = options if options is not None else VlmOptions(**kwargs)
        self.profile: Profile | None = (
            None if self.options.profile == "auto" else get_profile(self.options.profile)
        )
        self.model: str | None = None
        self._loop: LoopThread | None = None
        self._router: Router | None = None
        self._pool: RenderPool | None = None
        self._pipeline: PagePipeline | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"vlm:{self.profile.name}" if self.profile is not None else "vlm"

    @property
    def cache_key(self) -> str:
        """``vlm:<profile>:<fingerprint>:<model>[:guided]``: profile, prompt/sizing/sampling fingerprint
        (overrides included) and served model. Needs the served model, so it warms up if needed."""
        if self.profile is None or (self.model is None and self.options.model is None):
            self.warm_up()
        assert self.profile is not None
        key = f"vlm:{self.profile.name}:{self.profile.fingerprint()}:{self.model or self.options.model}"
        return key + (":guided" if self.options.guided_decoding and self.profile.guided_regex else "")

    @property
    def capacity(self) -> int:
        """Requests the healthy endpoints take at once (0 before :meth:`warm_up`): hand the engine at
        least this many pages per :meth:`convert_pages` call to keep every endpoint busy."""
        if self._router is None:
            return 0
        return sum(ep.capacity for ep in self._router.endpoints if ep.healthy)

    # -- lifecycle -------------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Check every endpoint (``/health``, ``/v1/models``, ``/metrics``), pick the served model
        and profile, start routing and the render pool. Idempotent. Raises
        :class:`EngineUnavailableError` when no endpoint answers, :class:`ConfigurationError` when no
        endpoint serves a model that fits the profile."""
        with self._lock:
            if self._pipeline is not None:
                return
            loop = LoopThread()
            try:
                loop.run(self._start())
            except BaseException:
                if self._router is not None:
                    loop.run(self._router.close())
                loop.stop()
                self._router = None
                raise
            self._loop = loop

    async def _start(self) -> None:
        o = self.options
        key = o.api_key.get_secret_value() if o.api_key else None
        clients = [
            EndpointClient(
                url,
                api_key=key,
                request_timeout_s=o.request_timeout_s,
                connect_timeout_s=o.connect_timeout_s,
                health_timeout_s=o.health_timeout_s,
            )
            for url in o.endpoints
        ]
        self._router = router = Router(
            clients,
            probe_interval_s=o.probe_interval_s,
            unavailable_timeout_s=o.unavailable_timeout_s,
            failovers=o.failovers,
        )
        survey = await router.survey()
        served = {url: ids for url, ids in survey.items() if isinstance(ids, list)}
        if not served:
            raise EngineUnavailableError("no VLM endpoint answered: " + router.down_summary())
        self.model, profile = self._resolve(served)
        updates: dict[str, Any] = {k: v for k, v in (("max_tokens", o.max_tokens),) if v is not None}
        sizing: dict[str, Any] = {}
        if o.image_format:
            sizing["fmt"] = o.image_format
        if o.max_image_width:
            sizing["max_long_side"] = min(
                o.max_image_width, profile.sizing.max_long_side or o.max_image_width
            )
        if sizing:
            updates["sizing"] = profile.sizing.model_copy(update=sizing)
        self.profile = profile.model_copy(update=updates) if updates else profile
        capacities = {}
        for ep in router.endpoints:
            limits = await ep.client.limits() if ep.healthy and o.max_in_flight is None else None
            capacities[ep.url] = (
                o.max_in_flight or (limits and limits.max_num_seqs) or self.profile.max_num_seqs
            )
        await router.activate(self.model, capacities)
        self._pool = RenderPool(o.render_workers)
        self._pipeline = PagePipeline(self.profile, router, self._pool, o, self.name)

    def _resolve(self, served: dict[str, list[str]]) -> tuple[str, Profile]:
        counts = Counter(model for ids in served.values() for model in ids)
        listing = ", ".join(sorted(counts)) or "nothing"
        if self.options.model is not None:
            if self.options.model not in counts:
                raise ConfigurationError(
                    f"model {self.options.model!r} is not served by any endpoint (served: {listing})"
                )
            candidates = [self.options.model]
        elif self.profile is not None:
            candidates = [m for m, _ in counts.most_common() if self.profile.matches_model(m)]
        else:
            candidates = [m for m, _ in counts.most_common()]
        if not candidates:
            assert self.profile is not None
            raise ConfigurationError(
                f"no endpoint serves a model for profile {self.profile.name!r} (it expects ids "
                f"containing {' or '.join(self.profile.model_patterns)}; served: {listing}); "
                "choose another profile or 'markdown'"
            )
        model = candidates[0]
        profile = self.profile or profile_for_model(model)
        if not profile.matches_model(model):
            raise ConfigurationError(
                f"served model {model!r} does not fit profile {profile.name!r} (it expects ids "
                f"containing {' or '.join(profile.model_patterns)})"
            )
        return model, profile

    def close(self) -> None:
        """Stop routing, the render pool and the event loop. Idempotent."""
        with self._lock:
            if self._loop is not None and self._router is not None:
                try:
                    self._loop.run(self._router.close(), timeout=30)
                finally:
                    self._loop.stop()
            if self._pool is not None:
                self._pool.close()
            self._loop = self._router = self._pool = self._pipeline = None

    def __enter__(self) -> VlmEngine:
        self.warm_up()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- conversion ------------------------------------------------------------------------------

    def convert_page(self, page: PageHandle) -> Page:
        """Convert one page (prefer :meth:`convert_pages`, which keeps every endpoint busy)."""
        return next(iter(self.convert_pages(page.doc, [page.number])))

    def _spill(self, doc: OpenedDocument) -> tuple[str | None, str | None]:
        """(path workers can open, temporary file to delete afterwards)."""
        source = getattr(doc, "source", None)
        if self.options.render_workers == 0 or source is None:
            return None, None
        if isinstance(source, (str, Path)):
            return str(Path(source).resolve()), None
        fd, path = tempfile.mkstemp(prefix="folioflow-vlm-", suffix=".doc")
        with os.fdopen(fd, "wb") as fh:
            fh.write(source)
        return path, path

    def convert_pages(self, doc: OpenedDocument, numbers: Sequence[int]) -> Iterator[Page]:
        """Yield exactly one page per requested number, in order; never raises for one page. All
        pages start at once (bounded by capacity), so later pages are ready when asked for."""
        self.warm_up()
        assert self._loop is not None and self._pipeline is not None
        path, spilled = self._spill(doc)
        password = getattr(doc, "password", None)
        futures: list = []
        try:
            for number in numbers:
                try:
                    handle = doc.page(number)
                except (IndexError, FolioflowError) as exc:
                    futures.append(
                        Page(
                            number=max(1, number),
                            width=0,
                            height=0,
                            engine=self.name,
                            status=PageStatus.FAILED,
                            errors=[f"{self.name}: {exc}"],
                        )
                    )
                    continue
                job = PageJob(
                    number=number,
                    width=handle.width,
                    height=handle.height,
                    source=path,
                    password=password,
                    doc=doc,
                    limits=doc.limits,
                )
                futures.append(self._loop.submit(self._pipeline.convert(job)))
            for number, item in zip(numbers, futures, strict=True):
                if isinstance(item, Page):
                    yield item
                    continue
                try:
                    yield item.result()
                except (
                    Exception,  # noqa: BLE001 - close() or a bug: still one page
                    concurrent.futures.CancelledError,
                ) as exc:
                    yield Page(
                        number=number,
                        width=0,
                        height=0,
                        engine=self.name,
                        status=PageStatus.FAILED,
                        errors=[f"{self.name}: {type(exc).__name__}: {exc}"],
                    )
        finally:
            for item in futures:
                if not isinstance(item, Page):
                    item.cancel()
            if spilled:
                Path(spilled).unlink(missing_ok=True)

    # -- figures ---------------------------------------------------------------------------------

    def report(self) -> dict:
        """Counters (pages ok/failed, attempts, tokens, failure categories) and per-endpoint state."""
        stats = self._pipeline.stats.as_dict() if self._pipeline is not None else {}
        endpoints = self._router.snapshot() if self._router is not None else []
        events = list(self._router.events) if self._router is not None else []
        return {"engine": self.name, "model": self.model, **stats, "endpoints": endpoints, "events": events}
