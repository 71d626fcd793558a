"""A private asyncio event loop on a daemon thread, so synchronous callers (the converter, Prefect
tasks, the CLI) can drive the async VLM client: :meth:`LoopThread.submit` returns a
``concurrent.futures.Future`` for a coroutine, :meth:`LoopThread.run` blocks for its result."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An event loop running on its own thread until :meth:`stop`."""

    def __init__(self, name: str = "folioflow-vlm"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; cancel the returned future to cancel the task."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (re-raises its exception)."""
        return self.submit(coro).result(timeout)

    def stop(self) -> None:
        """Cancel what still runs, stop the loop and join the thread. Idempotent."""
        if not self.loop.is_running():
            return

        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.run(_cancel_all(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            if not self.loop.is_running():
                self.loop.close()
