"""Model profiles by name: :func:`get_profile`, :func:`register_profile`, :func:`profile_names`.

Built in: ``chandra``, ``deepseek-ocr`` (variants ``deepseek-ocr:tiny|small|base|large|gundam``),
``olmocr``, ``markdown`` (any other VLM). A name may carry a variant after a colon; the factory
receives it. See ``README.md`` in this folder for adding a model.
"""

from __future__ import annotations

from collections.abc import Callable

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.vlm.profiles.base import ImageSizing, Profile, Sampling
from folioflow.ocr.vlm.profiles.chandra import chandra_profile
from folioflow.ocr.vlm.profiles.deepseek_ocr import deepseek_ocr_profile
from folioflow.ocr.vlm.profiles.markdown import markdown_profile
from folioflow.ocr.vlm.profiles.olmocr import olmocr_profile

__all__ = [
    "Profile",
    "ImageSizing",
    "Sampling",
    "ProfileFactory",
    "register_profile",
    "get_profile",
    "profile_names",
    "profile_for_model",
]

#: ``factory(variant or None) -> Profile``
ProfileFactory = Callable[[str | None], Profile]

_REGISTRY: dict[str, ProfileFactory] = {}

#: Other names accepted by :func:`get_profile` (``generic`` is what flows' settings call ``markdown``).
ALIASES = {"generic": "markdown"}


def register_profile(name: str, factory: ProfileFactory) -> None:
    """Register (or replace) the profile ``name`` (lowercase, no colon)."""
    if not name or ":" in name or name != name.lower():
        raise ConfigurationError(f"profile names are lowercase without ':', got {name!r}")
    _REGISTRY[name] = factory


def profile_names() -> list[str]:
    """Registered profile names, sorted (aliases such as ``generic`` not included)."""
    return sorted(_REGISTRY)


def get_profile(name: str) -> Profile:
    """The profile for ``name`` or ``name:variant``. Raises :class:`ConfigurationError` when unknown."""
    base, _, variant = name.strip().lower().partition(":")
    base = ALIASES.get(base, base)
    try:
        factory = _REGISTRY[base]
    except KeyError:
        raise ConfigurationError(f"unknown VLM profile {name!r}; choose from {profile_names()}") from None
    return factory(variant or None)


def profile_for_model(model_id: str) -> Profile:
    """The first specific profile whose ``model_patterns`` match ``model_id``, else ``markdown``."""
    for name in profile_names():
        profile = get_profile(name)
        if profile.model_patterns and profile.matches_model(model_id):
            return profile
    return get_profile("markdown")


register_profile("chandra", chandra_profile)
register_profile("deepseek-ocr", deepseek_ocr_profile)
register_profile("olmocr", olmocr_profile)
register_profile("markdown", markdown_profile)
