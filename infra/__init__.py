"""Deployment templates, shipped as package data: the Prefect project file (``prefect.yaml``), the
example settings file, the Dockerfile, the compose stack (``compose/``) and the vLLM serving
configurations (``vllm/``). Read them with :func:`importlib.resources.files` on this package."""

#: the API is in the modules named above; nothing is re-exported here
__all__: list[str] = []
