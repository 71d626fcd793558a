"""``python -m folioflow`` runs the ``folioflow`` command line."""

from folioflow.flows.cli import main

if __name__ == "__main__":
    main()
