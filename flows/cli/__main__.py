"""``python -m folioflow.flows.cli`` runs the folioflow CLI (guarded: spawned worker processes import this
module as ``__mp_main__`` and must not run the CLI again)."""

from folioflow.flows.cli import main

if __name__ == "__main__":
    main()
