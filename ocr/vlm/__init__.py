"""OCR on document VLMs served by vLLM: profiles, parsers, async client and router, engine,
launcher (``folioflow ocr serve``) and benchmark (``folioflow ocr bench``).

Public API: :class:`VlmOptions`, :class:`VlmEngine`, :func:`get_profile`, :func:`register_profile`,
:func:`profile_names`, :class:`Profile`. Heavy pieces (process pool, HTTP clients) start in
:meth:`VlmEngine.warm_up`.
"""

from folioflow.ocr.vlm.engine import VlmEngine
from folioflow.ocr.vlm.options import VlmOptions
from folioflow.ocr.vlm.profiles import Profile, get_profile, profile_names, register_profile

__all__ = ["VlmEngine", "VlmOptions", "Profile", "get_profile", "profile_names", "register_profile"]
